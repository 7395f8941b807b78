"""Where a session's raw files lie. A session stores each compressed (raw/<sid>/sweep.json.gz,
sweep.prom.before.gz, sweep.prom.after.gz: the records and the full scrapes, a tenth of their
size); a folder measured by an older knee holds them plain, and reads the same (knee.core.jsonio
expands a .gz name when it reads it)."""

from __future__ import annotations

from pathlib import Path

from knee.core.jsonio import COMPRESSED

KINDS = ("json", "prom.before", "prom.after")  # an instrument window's raw files


def stored(folder: Path | str, name: str) -> Path:
    """raw/<sid>/<name> as it is stored: name.gz, or name where an older session wrote it
    plain (and no compressed one)."""
    folder = Path(folder)
    plain, packed = folder / name, folder / (name + COMPRESSED)
    return plain if plain.exists() and not packed.exists() else packed


def suffix(folder: Path | str, instruments: list[str]) -> str:
    """What this session's raw file names end in: plain where an older session stored them
    so, compressed otherwise (a session to come)."""
    folder = Path(folder)
    return "" if any((folder / f"{n}.json").exists() for n in instruments) else COMPRESSED


def window(folder: Path | str, instrument: str) -> dict[str, Path]:
    """An instrument window's raw files: {"json", "prom.before", "prom.after"} -> path."""
    return {kind: stored(folder, f"{instrument}.{kind}") for kind in KINDS}


def shown(root: Path | str, path: Path) -> str:
    """A raw file's name inside its results folder, for messages."""
    return Path(path).relative_to(root).as_posix()
