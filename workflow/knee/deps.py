"""The code a workflow stage runs, derived from the imports: `knee <command>` runs the module
of knee.commands that declares it, which imports some knee modules, which import others. Each
rule takes the files of that closure as inputs (and knee's page templates, where it renders
one), so editing any module a stage runs reruns exactly the stages that use it
(workflow/rules/common.smk: get_code)."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from knee.commands import registry

PACKAGE = Path(__file__).resolve().parent


def module_file(name: str) -> Path | None:
    """knee.a.b -> workflow/knee/a/b.py (or a package's __init__.py); None if not knee's."""
    if name != "knee" and not name.startswith("knee."):
        return None
    parts = name.split(".")[1:]
    path = PACKAGE.joinpath(*parts)
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported(node: ast.AST) -> set[str]:
    """The knee modules an AST imports, at any depth (function-level imports included)."""
    names: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Import):
            names |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
            names.add(n.module)
            names |= {f"{n.module}.{a.name}" for a in n.names}  # `from knee import x`
    # importing a.b.c runs a, a.b and a.b.c
    runs = {".".join(m.split(".")[:i]) for m in names for i in range(1, m.count(".") + 2)}
    return {m for m in runs if module_file(m)}


@cache
def imports_of(name: str) -> frozenset[str]:
    """The knee modules one module imports (its file parsed once per process)."""
    path = module_file(name)
    if path is None:
        raise KeyError(f"{name} is not a module of knee's")
    return frozenset(imported(ast.parse(path.read_text(encoding="utf-8"))))


@cache
def closure(module: str) -> frozenset[str]:
    """A knee module and every knee module it imports, transitively."""
    seen, todo = set(), [module]
    while todo:
        name = todo.pop()
        if name in seen or module_file(name) is None:
            continue
        seen.add(name)
        todo += sorted(imports_of(name) - seen)
    return frozenset(seen)


@cache
def code_files(command: str) -> list[str]:
    """The source files a stage's command runs, relative to the workflow's checkout: the import
    closure of the module that declares the command and holds its handler."""
    root = PACKAGE.parents[1]
    modules = closure(registry.module_name(command))
    files = {module_file(m) for m in modules}
    if "knee.publish.templating" in modules:  # a page's template is code of its stage too
        files |= set((PACKAGE / "templates").glob("*.j2"))
    return sorted(str(f.relative_to(root)) for f in files if f is not None)
