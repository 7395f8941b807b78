"""The code a stage runs is derived from the imports (knee.deps), so no list can drift."""

import ast

import pytest

from knee import deps

STAGES = ("metrics", "acceptance", "compare", "bar", "figures", "readme")


@pytest.mark.parametrize("stage", STAGES)
def test_a_stage_lists_every_module_it_imports(stage):
    files = set(deps.code_files(stage))
    assert "workflow/knee/core/jsonio.py" in files
    # closed under import: every knee module a listed file imports is listed
    for path in (f for f in files if f.endswith(".py")):
        tree = ast.parse((deps.PACKAGE.parents[1] / path).read_text())
        for module in deps.imported(tree):
            f = deps.module_file(module)
            assert str(f.relative_to(deps.PACKAGE.parents[1])) in files, (path, module)


def test_the_comparison_runs_what_its_command_imports():
    """compare's list once left out modules it ran (the depth curve's, results, bar): derived,
    it cannot."""
    files = deps.code_files("compare")
    for module in ("compare", "folder", "inference", "noise", "stats"):
        assert f"workflow/knee/analyze/{module}.py" in files
    # the instruments derive their own sections of the comparison
    for module in ("fixture", "depth", "spec"):
        assert f"workflow/knee/instruments/{module}.py" in files
    assert "workflow/knee/publish/figures.py" not in files
    assert "workflow/knee/measure/client.py" not in files
    assert "workflow/knee/publish/figures.py" in deps.code_files("figures")


@pytest.mark.parametrize(("edited", "stages"), [
    # the 24 window_metrics jobs once reran for any edit of the comparison or the bar
    ("analyze/compare.py", ("metrics", "bar")),
    ("analyze/bar.py", ("metrics", "compare")),
    # the README's code once reran the comparison and the bar
    ("publish/readme.py", ("metrics", "compare", "bar")),
])
def test_editing_one_stage_s_code_reruns_no_stage_that_does_not_run_it(edited, stages):
    for stage in stages:
        assert f"workflow/knee/{edited}" not in deps.code_files(stage), stage
    assert f"workflow/knee/{edited}" in deps.code_files("audit")


def test_a_stage_that_renders_a_page_reruns_when_its_template_changes():
    """comparison.md, the README, a recommendation's README are jinja2 templates: code of the
    stages that render them, and of no stage that renders nothing."""
    for stage in ("bar", "readme", "recommend", "campaign"):
        assert {"workflow/knee/templates/comparison.md.j2", "workflow/knee/templates/README.md.j2",
                "workflow/knee/templates/recommend.md.j2"} <= set(deps.code_files(stage)), stage
    for stage in ("metrics", "acceptance", "session", "pair"):
        assert not [f for f in deps.code_files(stage) if f.endswith(".j2")], stage


def test_an_unknown_command_is_named():
    with pytest.raises(KeyError, match="no command 'nope'"):
        deps.code_files("nope")
