"""What the READMEs name exists: every `knee` command, every config key, every file under bench/."""

import re

from knee.cli import COMMANDS
from knee.instruments import config_schema
from tests.helpers import ROOT

TEXTS = [ROOT / "README.md", ROOT / "config" / "README.md"]
KEY = re.compile(r"`((?:runtime|model|server|arms|variable|protocol|instruments|analysis|bar)"
                 r"(?:\.[a-z_]+(?:\.[a-z_]+)*)?)[`,]")


def schema_has(dotted: str) -> bool:
    schema = config_schema()
    node = schema
    for part in dotted.split("."):
        if "$ref" in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
        props = node.get("properties", {})
        if part not in props:
            return False
        node = props[part]
    return True


def test_every_knee_command_named_exists():
    for path in TEXTS:
        for cmd in re.findall(r"`knee ([a-z][a-z-]*)", path.read_text()):
            assert cmd in COMMANDS, f"{path.name}: knee {cmd}"


def test_every_config_key_named_exists():
    named = set()
    for path in TEXTS:
        named |= set(KEY.findall(path.read_text()))
    assert {"runtime.cache_dir", "server.secret_env", "bar.alpha"} <= named
    refused = {"bar.pairs"}  # named as a setting that is refused, with what replaced it
    missing = sorted(k for k in named - refused if not schema_has(k))
    assert not missing, missing


def test_every_bench_script_named_exists():
    for path in TEXTS:
        for script in re.findall(r"bench/[a-z_]+\.py", path.read_text()):
            assert (ROOT / script).is_file(), f"{path.name}: {script}"
