"""The core: errors, bounded and atomic file I/O with schemas, where raw files lie, the
prompt sets. Imports nothing else of knee."""
