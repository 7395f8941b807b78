"""knee's commands, a module each beside its handler, grouped by the stage they serve (setup,
measure, analyze, publish): each module declares its `COMMAND` (name, what it does, an example,
its arguments, the handler). knee.commands.registry lists them; knee.cli parses and runs them.
Nothing here imports a command, so a command's code is the import closure of its own module
(knee.deps)."""
