"""The commands of the analyze stage, a module each."""
