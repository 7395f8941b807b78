"""The package's layers, checked statically over every import a module can run (function-level
imports included): each layer imports only the layers it may, and no analysis or publishing
module reaches a runtime, the client, the session or a sampler, however deep. A second,
independent reading of the imports checks the one that derives the rules' code inputs."""

import ast
from pathlib import Path

import pytest

from knee import deps
from tests.helpers import ROOT

PACKAGE = ROOT / "workflow" / "knee"
# what each layer may import besides itself (the top level, cli and deps, may import any)
MAY_IMPORT = {
    "core": set(),
    "instruments": {"core"},
    "plan": {"core", "instruments"},
    "analyze": {"core", "instruments", "plan"},
    "measure": {"core", "instruments", "plan", "analyze"},
    "publish": {"core", "instruments", "plan", "analyze"},
    # a command's module, beside its handler: the stage it serves may use any layer
    "commands": {"core", "instruments", "plan", "analyze", "measure", "publish"},
}
# modules that open a connection or read the GPU (git, which the plan and the audit run, may
# be started by any layer)
NETWORK = ("httpx", "docker", "requests", "urllib.request", "socket", "pynvml")


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = ("knee", *path.relative_to(package).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports(name: str, path: Path, known: dict) -> set[str]:
    """Every module one file can import (absolute or relative, at any depth), as the import
    system runs them: importing a.b.c runs a, a.b and a.b.c."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known}
    runs = set()
    for full in found:
        parts = full.split(".")
        runs |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return {m for m in runs if m in known or not m.startswith("knee")} - {name}


def graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    known = modules(package)
    return {name: imports(name, path, known) for name, path in known.items()}


def closure(name: str, edges: dict) -> set[str]:
    seen, todo = set(), [name]
    while todo:
        for dep in edges.get(todo.pop(), ()):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def layer(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in MAY_IMPORT) else None


def violations(edges: dict) -> list[str]:
    bad = []
    for name, deps_ in sorted(edges.items()):
        own = layer(name)
        if own is None:
            continue
        for dep in sorted(d for d in deps_ if d.startswith("knee.")):
            if layer(dep) is None and dep != "knee":
                bad.append(f"{name} imports {dep}, above every layer")
            elif layer(dep) not in MAY_IMPORT[own] | {own, None}:
                bad.append(f"{name} ({own}) imports {dep} ({layer(dep)})")
    return bad


def unreachable(edges: dict) -> list[str]:
    """Analysis and publishing modules whose import closure reaches measurement or a network
    or process library."""
    bad = []
    for name in sorted(edges):
        if layer(name) in ("analyze", "publish"):
            reach = closure(name, edges)
            hits = sorted(m for m in reach if layer(m) == "measure"
                          or (m.startswith(NETWORK) and not m.startswith("knee")))
            if hits:
                bad.append(f"{name} reaches {', '.join(hits)}")
    return bad


def test_every_module_lives_in_a_layer_and_imports_only_the_layers_below_it():
    edges = graph()
    assert {layer(m) for m in edges} >= set(MAY_IMPORT)
    top = {m for m in edges if layer(m) is None}
    assert top == {"knee", "knee.__main__", "knee.cli", "knee.deps"}
    assert violations(edges) == []


def test_no_analysis_or_publishing_module_can_reach_a_server_however_deep():
    edges = graph()
    assert unreachable(edges) == []
    # the check sees what it guards: measurement does reach the client and a process library
    assert "knee.measure.client" in closure("knee.measure.session", edges)
    assert "httpx" in closure("knee.measure.session", edges)


def copy_package(tmp_path: Path) -> Path:
    copy = tmp_path / "knee"
    for path in modules().values():
        target = copy / path.relative_to(PACKAGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text())
    return copy


@pytest.mark.parametrize("planted, expect", [
    ("import knee.measure.client\n", "knee.measure.client"),
    ("def later():\n    from knee.measure import session\n", "knee.measure.session"),
    ("def later():\n    import httpx\n", "httpx"),
    ("from ..measure.runtime import process\n", "knee.measure.runtime.process"),
])
def test_a_planted_import_is_caught_even_inside_a_function(tmp_path, planted, expect):
    copy = copy_package(tmp_path)
    crate = copy / "publish" / "crate.py"
    crate.write_text(crate.read_text() + "\n" + planted)
    edges = graph(copy)
    reached = [line for line in unreachable(edges) if line.startswith("knee.publish.crate ")]
    assert reached and expect in reached[0].split(" reaches ")[1].split(", "), reached
    assert any(line.startswith("knee.publish.crate (publish) imports knee.measure")
               for line in violations(edges)) or "httpx" in planted


def test_an_import_running_back_up_is_a_violation(tmp_path):
    copy = copy_package(tmp_path)
    jsonio = copy / "core" / "jsonio.py"
    jsonio.write_text(jsonio.read_text() + "\ndef later():\n    from knee import instruments\n")
    assert "knee.core.jsonio (core) imports knee.instruments (instruments)" in violations(
        graph(copy))


def test_the_code_inputs_agree_with_an_independent_reading_of_the_imports():
    edges = graph()
    for name in sorted(edges):
        ours = {m for m in closure(name, edges) | {name} if m.startswith("knee")}
        assert set(deps.closure(name)) == ours, name


def test_the_tests_mirror_the_layers():
    tests = ROOT / "tests"
    folders = {p.parent.name for p in tests.glob("*/test_*.py")}
    assert folders == set(MAY_IMPORT) | {"workflow", "house"}
    assert sorted(p.name for p in tests.glob("test_*.py")) == []  # none outside a folder
    assert all((tests / f / "__init__.py").is_file() for f in folders)
