"""The commands of the setup stage, a module each."""
