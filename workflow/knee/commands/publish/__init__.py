"""The commands of the publish stage, a module each."""
