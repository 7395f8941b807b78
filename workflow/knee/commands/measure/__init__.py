"""The commands of the measure stage, a module each."""
