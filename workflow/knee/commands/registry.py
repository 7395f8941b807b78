"""Which commands there are: each name with the stage whose package holds its module, in the
order `knee --help` lists them; a command's module is imported only when it is asked for."""

from __future__ import annotations

import difflib
import importlib
import textwrap

from knee.commands.spec import Command

STAGES = {
    "setup": ("validate-config", "plan", "prediction", "engine-info", "image", "servers",
              "dataset"),
    "measure": ("session", "pair", "cleanup"),
    "analyze": ("metrics", "acceptance", "compare", "bar", "decide", "realized", "recommend",
                "calibrate", "design"),
    "publish": ("figures", "readme", "tables", "crate", "manifest", "verdict", "audit", "trace",
                "campaign"),
}
STAGE_OF = {name: stage for stage, names in STAGES.items() for name in names}
# the commands a user runs; the others are the workflow's stages
USER = ("validate-config", "verdict", "audit", "trace", "recommend", "calibrate", "design",
        "campaign", "dataset", "cleanup")


def module_name(name: str) -> str:
    """knee.commands.<stage>.<name> (dashes as underscores); KeyError for no such command."""
    if name not in STAGE_OF:
        raise KeyError(f"knee has no command {name!r}")
    return f"knee.commands.{STAGE_OF[name]}.{name.replace('-', '_')}"


def load(name: str) -> Command:
    command: Command = importlib.import_module(module_name(name)).COMMAND
    return command


def every() -> dict[str, Command]:
    """Every command, by name, in the order they are listed."""
    return {name: load(name) for names in STAGES.values() for name in names}


def listing(commands: dict[str, Command]) -> str:
    """knee's commands in two groups: a user's, and the workflow's stages."""
    width = max(map(len, commands)) + 2

    def group(title: str, names: list[str]) -> str:
        return title + "\n" + "\n".join(
            textwrap.fill(commands[n].what, 100, initial_indent=f"  {n:<{width}}",
                          subsequent_indent=" " * (width + 2)) for n in names)

    stages = [n for n in commands if n not in USER]
    return (group("commands:", list(USER)) + "\n\n"
            + group("workflow stages (Snakemake runs them; usable by hand):", stages))


def unknown(name: str) -> str:
    """Why `knee NAME` is refused: no such command, with the nearest one there is."""
    close = difflib.get_close_matches(name, list(STAGE_OF), n=1)
    return (f"no command {name!r}" + (f"; did you mean 'knee {close[0]}'?" if close else "")
            + " (knee --help lists them)")
