"""Read an experiment file: plain YAML data only, nothing evaluated, nothing ambiguous.

Snakemake's own config loader lets a later duplicate key win silently and renders a file that
sets `__use_yte__: true` as a YTE template (Python expressions) before any workflow code runs.
Whichever way the experiment is named (`--configfile FILE ...` or `--config experiment=FILE`),
the Snakefile gets the config only through this module, which reads the files again itself
(see workflow/rules/load.smk): what Snakemake's loader made of them is never used.
"""

from __future__ import annotations

import math
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from knee.core.errors import KneeError
from knee.core.records import Section

MAX_BYTES = 1 << 20
MAX_ALIASES = 64
MAX_NODES = 20_000  # values after aliases are expanded; a config has a few hundred
MAX_DEPTH = 32  # nesting of mappings and lists; a config nests five deep
MAX_DIGITS = 18  # an integer setting of knee's fits in 64 bits (and in a float's 53 when small)
# control characters: a newline in a name splits a shell command; multi-line text only here.
# With them C1 controls, bidirectional overrides and isolates (text that displays other than it
# reads) and zero-width characters (names that look alike and differ)
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e"
                     "\u2060-\u2069\ufeff]")
MULTILINE = {"question"}
# YAML 1.2 plain scalars: a number written as one, true or false; YAML 1.1 (PyYAML) would also
# read 010 as 8, 0x10 as 16, 1_000 as 1000, 10:00 as 600 and yes, no, on and off as booleans
PLAIN_INT = re.compile(r"[-+]?(0|[1-9][0-9]*)\Z")
PLAIN_FLOAT = re.compile(r"[-+]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\Z"
                         r"|[-+]?\.(inf|Inf|INF)\Z|\.(nan|NaN|NAN)\Z")
PLAIN_BOOL = {"true", "True", "TRUE", "false", "False", "FALSE"}


def _yaml_11(text: str) -> str:
    """Why YAML 1.1 reads this scalar as a number it does not look like."""
    if ":" in text:
        return "base 60"
    if "_" in text:
        return "its underscores dropped"
    if re.match(r"[-+]?0[xX]", text):
        return "hexadecimal"
    if re.match(r"[-+]?0[bB]", text):
        return "binary"
    return "octal" if re.match(r"[-+]?0[0-9]", text) else "YAML 1.1's reading"


class _Loader(yaml.SafeLoader):
    """SafeLoader that counts aliases and refuses duplicate and non-string keys."""

    def __init__(self, stream: str, source: str):
        super().__init__(stream)
        self.source = source
        self.aliases = 0
        self.depth = 0

    def at(self, mark: Any) -> str:
        return f"{self.source}:{mark.line + 1}:{mark.column + 1}"

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                mark = self.peek_event().start_mark
                raise KneeError(f"{self.at(mark)}: more than {MAX_ALIASES} YAML aliases (*name): "
                                "write the values out")
        self.depth += 1
        if self.depth > MAX_DEPTH:
            mark = self.peek_event().start_mark
            raise KneeError(f"{self.at(mark)}: nested more than {MAX_DEPTH} deep: a config is a "
                            "few levels of settings")
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise KneeError(f"{self.at(key_node.start_mark)}: key {key_node.value!r} is read "
                                f"as {type(key).__name__} {key!r}, not text: quote it")
            if key in seen:
                raise KneeError(f"{self.at(key_node.start_mark)}: duplicate key {key!r} (first "
                                f"at line {seen[key].line + 1}): YAML keeps only one of them")
            seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep)

    def _refuse(self, node: Any, read: object, how: str) -> None:
        raise KneeError(f"{self.at(node.start_mark)}: {node.value!r} is read by YAML 1.1 as "
                        f"{read!r} ({how}): {how_to_write(node.value, read)}")

    def construct_strict_int(self, node: Any) -> Any:
        digits = len(node.value.lstrip("+-"))
        if PLAIN_INT.match(node.value) and digits > MAX_DIGITS:
            raise KneeError(f"{self.at(node.start_mark)}: an integer of {digits} digits: no "
                            f"setting of knee's is larger than {MAX_DIGITS} digits")
        read = self.construct_yaml_int(node)
        if not PLAIN_INT.match(node.value):
            self._refuse(node, read, _yaml_11(node.value))
        return read

    def construct_strict_float(self, node: Any) -> Any:
        read = self.construct_yaml_float(node)
        if not PLAIN_FLOAT.match(node.value):
            self._refuse(node, read, _yaml_11(node.value))
        return read

    def construct_strict_bool(self, node: Any) -> Any:
        read = self.construct_yaml_bool(node)
        if node.value not in PLAIN_BOOL:
            self._refuse(node, read, "a YAML 1.1 boolean")
        return read


def how_to_write(text: str, read: object) -> str:
    if isinstance(read, bool):
        return f'write true or false, or "{text}" (quoted) for the text'
    return f'write the number you mean in plain digits, or "{text}" (quoted) for the text'


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_strict_int)
_Loader.add_constructor("tag:yaml.org,2002:float", _Loader.construct_strict_float)
_Loader.add_constructor("tag:yaml.org,2002:bool", _Loader.construct_strict_bool)


def expanded_size(node: yaml.Node, source: str, memo: dict[int, int] | None = None,
                  open_: frozenset[int] = frozenset()) -> int:
    """How many values a node becomes once its aliases are expanded (memoized: fast even for
    an alias bomb, which is refused by this count)."""
    memo = {} if memo is None else memo
    if id(node) in open_:
        raise KneeError(f"{source}:{node.start_mark.line + 1}: a YAML alias refers to a value "
                        "that contains it (a recursive structure)")
    if id(node) not in memo:
        inner = open_ | {id(node)}
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            children = []
        memo[id(node)] = 1 + sum(expanded_size(c, source, memo, inner) for c in children)
    return memo[id(node)]


def text_of(path: Path | str) -> str:
    path = Path(path)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise KneeError(f"{path}: not a regular file (a directory, device or pipe): a config "
                            "is a YAML file")
        data = path.read_bytes() if info.st_size <= MAX_BYTES else None
    except OSError as e:
        raise KneeError(f"{path}: cannot read config: {e.strerror or e}") from None
    if data is None:
        raise KneeError(f"{path}: {path.stat().st_size} bytes is more than a config file's "
                        f"limit of {MAX_BYTES}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise KneeError(f"{path}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset "
                        f"{e.start})") from None


def parse(text: str, source: str) -> Any:
    loader = _Loader(text, source)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        size = expanded_size(node, source)
        if size > MAX_NODES:
            raise KneeError(f"{source}: the file expands to {size} values through its YAML "
                            f"aliases (limit {MAX_NODES}): write the values out")
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        raise KneeError(f"{where}: not valid YAML: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise KneeError(f"{source}: not valid YAML: {e}") from None
    finally:
        loader.dispose()


def plain(value: Any, path: str, source: str) -> None:
    """Only JSON data: text without control characters, finite numbers, lists and mappings."""
    key = path or "(top level)"
    if isinstance(value, dict):
        for k, v in value.items():
            if CONTROL.search(k) or "\n" in k:
                raise KneeError(f"{source}: {key}: key {k!r} holds a control character")
            plain(v, f"{path}.{k}" if path else k, source)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            plain(v, f"{path}[{i}]", source)
    elif isinstance(value, str):
        if CONTROL.search(value) or ("\n" in value and path not in MULTILINE):
            raise KneeError(f"{source}: {key}: {value!r} holds a control character or a line "
                            "break")
    elif isinstance(value, float) and not math.isfinite(value):
        raise KneeError(f"{source}: {key}: {value!r} is not a finite number")
    elif value is not None and not isinstance(value, (bool, int, float)):
        raise KneeError(f"{source}: {key}: {value!r} is a {type(value).__name__}, which a "
                        "config does not hold (quote it to make it text)")


def load(path: Path | str) -> Section:
    """The experiment file at path as plain data. Raises KneeError naming file, line, key."""
    source = str(path)
    data = parse(text_of(path), source)
    if not isinstance(data, dict):
        raise KneeError(f"{source}: a config is a mapping of keys, got "
                        f"{type(data).__name__ if data is not None else 'an empty file'}")
    if "__use_yte__" in data:
        raise KneeError(
            f"{source}: __use_yte__: a config that is a YTE template is refused (its expressions "
            "run code). Snakemake renders such a file passed with --configfile before any "
            "workflow code runs, so knee cannot stop that: check a file you do not trust with "
            f"`knee validate-config {source}`, which reads it without rendering anything")
    plain(data, "", source)
    return data


COMMAND_LINE = ("experiment", "name", "experiments")


def merge(into: Section, other: Section) -> Section:
    """Snakemake's merge of several --configfile files: a later file's mapping updates the
    earlier one key by key, recursively; any other value replaces it."""
    for key, value in other.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merge(into[key], value)
        else:
            into[key] = value
    return into


MAX_FILES = 16  # --configfile files merged into one experiment


def load_all(paths: Sequence[Path | str]) -> Section:
    """Several experiment files read as one, merged in order as Snakemake merges them: at most
    MAX_FILES of them and MAX_BYTES together, both checked before any is read."""
    if len(paths) > MAX_FILES:
        raise KneeError(f"--configfile: {len(paths)} files; an experiment is merged from at most "
                        f"{MAX_FILES}")
    sizes = []
    for path in paths:
        try:
            sizes.append(Path(path).stat().st_size)
        except OSError as e:
            raise KneeError(f"{path}: cannot read config: {e.strerror or e}") from None
    if sum(sizes) > MAX_BYTES:
        together = " together" if len(paths) > 1 else ""
        raise KneeError(f"{source_of([str(p) for p in paths])}: {sum(sizes)} bytes{together} "
                        f"is more than a config's limit of {MAX_BYTES}")
    data: Section = {}
    for path in paths:
        merge(data, load(path))
    return data


def source_of(paths: list[str]) -> str:
    """How plans and messages name the experiment file(s)."""
    return " + ".join(str(p) for p in paths)


CAMPAIGN = "campaign-"  # the prefix of a campaign page's folder: no experiment is named so
NAME_BYTES = 200  # a folder name stays well under the 255 bytes a file system allows


def campaign_folder(names: list[str]) -> str:
    """The results folder of a campaign over these experiments: their names joined, or, where
    that would be too long for a folder name, their count and a hash of the names."""
    joined = CAMPAIGN + "-".join(names)
    if len(joined.encode()) <= NAME_BYTES:
        return joined
    import hashlib

    digest = hashlib.sha256("\0".join(names).encode()).hexdigest()[:12]
    return f"{CAMPAIGN}{len(names)}-experiments-{digest}"


MAX_EXPERIMENTS = 64


def check_experiment_list(entries: Any) -> None:
    """`experiments:` is a list of at most MAX_EXPERIMENTS file names, each naming a regular
    file: all of them checked before the first is read, so a bad entry at the end of a long
    list is found at once."""
    if not isinstance(entries, list) or not entries:
        raise KneeError(f"experiments: a list of experiment config files is needed, not "
                        f"{str(entries)[:200]!r}")
    if len(entries) > MAX_EXPERIMENTS:
        raise KneeError(f"experiments: {len(entries)} files; one invocation runs at most "
                        f"{MAX_EXPERIMENTS} (split the campaign)")
    for i, entry in enumerate(entries):
        if not isinstance(entry, str) or not entry or CONTROL.search(entry):
            raise KneeError(f"experiments[{i}]: {str(entry)[:200]!r} is not the file name of an "
                            "experiment config (a list holds file names, not lists or values)")
        try:
            regular = stat.S_ISREG(Path(entry).stat().st_mode)
        except OSError as e:
            raise KneeError(f"experiments[{i}]: {entry}: cannot read config: "
                            f"{e.strerror or e}") from None
        if not regular:
            raise KneeError(f"experiments[{i}]: {entry}: not a regular file")


def check_campaign_page(folder: str, names: list[str]) -> None:
    """Two different lists of experiments never share a campaign page: a page already there
    for other experiments (their names joined the same way) is refused, not overwritten."""
    page = Path(folder) / "README.md"
    if not page.is_file():
        return
    with open(page, "rb") as f:
        first = f.readline(4096).decode("utf-8", "replace").strip()
    if first != f"# Campaign: {', '.join(names)}":
        raise KneeError(f"{page}: the campaign page of other experiments ({first[:300]!r}) has "
                        f"the folder these ({', '.join(names)}) would write; run them under "
                        "other names or move that page away")


def check_name(name: Any, source: str) -> str:
    from knee.core.jsonio import schema_file

    pattern = schema_file("config")["properties"]["name"]["pattern"]
    if not isinstance(name, str) or not re.search(pattern, name):
        raise KneeError(f"{source}: {name!r} is not an experiment name (letters, digits, '.', "
                        "'_' and '-', starting with a letter or digit)")
    check_reserved(name, source)
    return name


def check_reserved(name: str, source: str) -> None:
    if name.startswith(CAMPAIGN):
        raise KneeError(f"{source}: name: {name!r}: names starting {CAMPAIGN!r} are the "
                        "folders of campaign pages (results/campaign-A-B): name the experiment "
                        "otherwise")


def take(given: Section, configfiles: list[str], default: str) -> tuple[Section, str, list[str]]:
    """The config a Snakemake invocation asks for, where it came from and the files it was read
    from: the --configfile files (merged in order) or the experiment file (--config
    experiment=FILE, else the default), each read by knee itself, with --config name=NAME over
    it; or a list of experiment files (--config experiments=[A,B], or a file holding only an
    `experiments:` list). `given` is what --config set."""
    extra = [k for k in given if k not in COMMAND_LINE]
    if extra:
        raise KneeError(f"--config {extra[0]}={given[extra[0]]!r}: not a command-line setting; "
                        "knee takes every setting from the experiment file (--config accepts "
                        "experiment=FILE, name=NAME, or experiments=[FILE,...])")
    if configfiles and ("experiment" in given or "experiments" in given):
        key = "experiment" if "experiment" in given else "experiments"
        raise KneeError(f"--configfile {' '.join(configfiles)} and --config {key}=...: two "
                        "ways of naming the experiment; give one of them")
    if "experiments" in given:
        if len(given) > 1:
            raise KneeError("--config experiments=[...] runs each file as it is: it takes no "
                            "experiment= or name=")
        return {"experiments": given["experiments"]}, "--config experiments", []
    files = list(configfiles) or [str(given.get("experiment", default))]
    source = source_of(files)
    data = load_all(files)
    if "experiments" in data:
        if len(data) > 1 or "name" in given:
            raise KneeError(f"{source}: a file with an experiments list holds nothing else, and "
                            "takes no --config name=")
        return data, source, files
    if "name" in given:
        data["name"] = check_name(given["name"], f"--config name={given['name']!r}")
    return data, source, files
