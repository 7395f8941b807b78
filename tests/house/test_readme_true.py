"""What the README and docs/ name exists (every `knee` command, config key, file under bench/),
every config key is described in docs/config.md, and the README's own config validates."""

import re
import sys

from knee.commands.registry import STAGE_OF
from knee.instruments import config_schema
from tests.helpers import ROOT

TEXTS = [ROOT / "README.md", ROOT / "config" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
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
            assert cmd in STAGE_OF, f"{path.name}: knee {cmd}"


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


def schema_paths(node: dict, prefix: str = "", depth: int = 3):
    """The dotted keys of the config schema, `depth` levels down (through $ref, oneOf, anyOf)."""
    schema = config_schema()
    while "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    props = dict(node.get("properties", {}))
    for alt in node.get("oneOf", []) + node.get("anyOf", []):
        while "$ref" in alt:
            alt = schema["$defs"][alt["$ref"].rsplit("/", 1)[-1]]
        props.update(alt.get("properties", {}))
    for key, sub in props.items():
        yield prefix + key
        if depth > 1:
            yield from schema_paths(sub, f"{prefix}{key}.", depth - 1)


def described(dotted: str, rows: list[str]) -> bool:
    """A key is described by a reference row of its own (`a.b`, `a.b[]`, `a.b`, `.c`), or by
    its parent's row naming it in backticks."""
    if any(re.search(rf"`{re.escape(dotted)}(\[\])?`", row) for row in rows):
        return True
    parent, _, leaf = dotted.rpartition(".")
    return any(row.startswith(f"| `{parent}") and (f"`.{leaf}`" in row
               or re.search(rf"`[^`|]*\b{re.escape(leaf)}\b[^`|]*`", row)) for row in rows)


def test_every_config_key_is_described_in_the_reference():
    rows = [line for line in (ROOT / "docs" / "config.md").read_text().splitlines()
            if line.startswith("| `")]
    keys = set(schema_paths(config_schema()))
    assert {"runtime.cache_dir", "model.generate.seed", "bar.rules"} <= keys
    # an arm's keys are the server's, described under server.*
    missing = sorted(k for k in keys if not k.startswith("arms.c") or k.count(".") == 1
                     if not described(k, rows))
    assert not missing, f"docs/config.md does not describe {missing}"


def test_a_planted_undescribed_key_is_found():
    rows = ["| `runtime.kind` | (required) | `process` |"]
    assert described("runtime.kind", rows)
    assert not described("runtime.cache_dir", rows) and not described("runtime.kind.x", rows)


def test_the_readme_stays_a_front_page():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move detail into docs/"


def test_the_readmes_own_experiment_validates(tmp_path, monkeypatch, capsys):
    """The config block under 'Your own experiment' is a valid experiment once its two
    placeholders (an engine's Python, a model folder) name real ones."""
    from knee import cli

    text = (ROOT / "README.md").read_text().split("## Your own experiment", 1)[1]
    block = text.split("```", 2)[1]
    assert "/path/to/python-with-vllm" in block and "/models/my-model" in block
    model = tmp_path / "my-model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    path = tmp_path / "my.yaml"
    path.write_text(block.replace("/path/to/python-with-vllm", sys.executable)
                    .replace("/models/my-model", str(model)))
    monkeypatch.chdir(ROOT)
    assert cli.main(["validate-config", str(path)]) == 0, capsys.readouterr()


def test_the_docs_home_complete_config_validates(tmp_path, monkeypatch, capsys):
    """The complete config on the documentation site's home page is a valid experiment, of
    every section an experiment sets."""
    import yaml

    from knee import cli

    text = (ROOT / "docs" / "index.md").read_text().split("## Your own experiment", 1)[1]
    block = text.split("```yaml", 1)[1].split("```", 1)[0]
    cfg = yaml.safe_load(block)
    assert {"name", "question", "runtime", "model", "server", "variable", "arms", "protocol",
            "instruments", "bar"} <= set(cfg)
    path = tmp_path / "my.yaml"
    path.write_text(block)
    monkeypatch.chdir(ROOT)
    assert cli.main(["validate-config", str(path)]) == 0, capsys.readouterr()
