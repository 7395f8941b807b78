"""Each command is declared once, in its stage's module beside its handler; the registry lists
them without importing them, and a command's code inputs are its own module's import closure."""

import pytest

from knee import deps
from knee.commands import registry
from tests.helpers import ROOT

PACKAGE = ROOT / "workflow" / "knee" / "commands"


def test_every_module_of_a_stage_is_a_registered_command_of_that_stage():
    found = {(m.parent.name, m.stem) for m in PACKAGE.glob("*/*.py") if m.stem != "__init__"}
    assert found == {(stage, n.replace("-", "_")) for n, stage in registry.STAGE_OF.items()}
    assert set(registry.STAGES) == {p.name for p in PACKAGE.iterdir() if p.is_dir()
                                    and (p / "__init__.py").is_file()}


def test_each_command_declares_its_name_example_and_handler_in_its_own_module():
    for name, command in registry.every().items():
        assert command.name == name and command.run.__module__ == registry.module_name(name)
        assert command.what and command.example.startswith(f"knee {name}")


def test_a_command_s_code_is_its_module_and_what_that_imports_not_the_others():
    files = deps.code_files("metrics")
    assert "workflow/knee/commands/analyze/metrics.py" in files
    assert "workflow/knee/commands/spec.py" in files
    assert not [f for f in files if f.startswith("workflow/knee/commands/")
                and f.endswith(("compare.py", "bar.py", "registry.py"))]
    assert "workflow/knee/cli.py" not in files


def test_an_unknown_command_is_refused_by_name():
    with pytest.raises(KeyError, match="no command 'nope'"):
        registry.module_name("nope")
    assert registry.unknown("audti") == ("no command 'audti'; did you mean 'knee audit'? "
                                         "(knee --help lists them)")
