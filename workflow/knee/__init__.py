"""knee: paired, audited speculative-decoding experiments on vLLM."""

__version__ = "0.1.0"
