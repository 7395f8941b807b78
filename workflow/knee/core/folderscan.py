"""Before knee reads a results folder to audit or trace it: every entry of the folder is a
regular file or a directory of its own, no entry is a link (named, never followed: a link to a
file elsewhere would have the audit read, and its diff print, what lies outside), and no file
is larger than a results file can be. A folder that fails is refused before anything in it is
read, so nothing from outside reaches a message and no file is read whole first."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from knee.core.errors import KneeError

# the largest file of a results folder: a raw sweep file of an H200 experiment is 3 MB
FILE_LIMIT = 64 << 20
ENTRY_LIMIT = 100_000  # files and folders one results folder may hold
SHOWN = 20


def problems(root: Path | str) -> list[str]:
    """What makes the folder unreadable by the audit (links, special files, oversize files,
    too many entries), each naming the entry; [] when every entry may be read."""
    root = Path(root)
    try:
        info = os.lstat(root)
    except OSError as e:
        return [f"{root}: cannot be read ({e.strerror})"]
    if stat.S_ISLNK(info.st_mode):
        return [f"{root}: a symbolic link (to {os.readlink(root)}): a results folder is read "
                "where it is, never through a link"]
    if not stat.S_ISDIR(info.st_mode):
        return [f"{root}: not a folder"]
    found: list[str] = []
    entries = 0
    for top, dirs, files in os.walk(root, followlinks=False):
        for name in sorted(dirs) + sorted(files):
            entries += 1
            if entries > ENTRY_LIMIT:
                return [*found[:SHOWN], f"{root}: more than {ENTRY_LIMIT} entries: not read"]
            found += entry_problem(Path(top) / name, root)
        if len(found) > SHOWN:
            break
    return found[:SHOWN] + ([f"{root}: {len(found) - SHOWN} more such entries"]
                            if len(found) > SHOWN else [])


def entry_problem(path: Path, root: Path) -> list[str]:
    shown = path.relative_to(root).as_posix()
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        return [f"{root}: {shown} is a symbolic link: not followed, not read"]
    if stat.S_ISDIR(info.st_mode):
        return []
    if not stat.S_ISREG(info.st_mode):
        return [f"{root}: {shown} is not a regular file (a device, pipe or socket): not read"]
    if info.st_size > FILE_LIMIT:
        return [f"{root}: {shown}: {info.st_size} bytes, over the {FILE_LIMIT} a results file "
                "may hold: not read"]
    return []


def checked(roots: Iterable[Path | str], command: str) -> list[Path]:
    """The results folders a command was handed, each checked as the audit checks it before
    anything in it is read, and none handed twice (by where it resolves: a second spelling of
    one folder would count its boots twice)."""
    seen: dict[Path, Path] = {}
    for root in map(Path, roots):
        if bad := problems(root):
            raise KneeError(f"{command}: {root} cannot be read:\n  " + "\n  ".join(bad))
        real = root.resolve()
        if real in seen:
            raise KneeError(f"{command}: {root} is {seen[real]} again: each folder is read once "
                            "(twice, its boots would count twice)")
        seen[real] = root
    return list(seen.values())
