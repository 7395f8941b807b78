"""Figures are their instruments' (knee.instruments.spec.Figure): a registered figure is drawn,
titled and listed without editing the publishing code."""

from knee.core import jsonio
from knee.publish import figures, readme, rulefig
from tests.helpers import ROOT

PUBLISHED = ROOT / "results" / "ksched-cpu"


def published():
    plan = jsonio.read(PUBLISHED / "plan.json", "plan")
    comparison = jsonio.read(PUBLISHED / "comparison" / "comparison.json", "comparison")
    table = jsonio.read(PUBLISHED / "comparison" / "acceptance.json")["windows"]
    return plan, comparison, table, jsonio.read(PUBLISHED / "comparison" / "bar.json", "bar")


def test_every_registered_figure_is_drawn_as_published_and_has_a_report_caption(tmp_path):
    plan, comparison, table, bar = published()
    drawn = figures.render_all(plan, comparison, table, tmp_path, bar)
    names = figures.names(plan)
    assert names == ["rules", "throughput", "ttft", "acceptance", "fixture", "depth"]
    assert drawn == [tmp_path / f"{n}.{ext}" for n in names for ext in ("png", "svg")]
    for path in drawn:  # byte-stable: the published figures come out again
        assert path.read_bytes() == (PUBLISHED / "figures" / path.name).read_bytes(), path.name
    for name in names:
        assert (ROOT / "workflow" / "report" / f"{name}.rst").is_file(), name


def test_an_instrument_that_did_not_run_draws_no_figure_and_the_readme_lists_none(tmp_path):
    plan, comparison, table, bar = published()
    plan = {**plan, "instruments": {k: v for k, v in plan["instruments"].items()
                                    if k not in ("depth", "fixture")}}
    drawn = figures.render_all(plan, comparison, table, tmp_path, bar)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in drawn)
    assert figures.names(plan) == ["rules", "throughput", "ttft", "acceptance"]
    boots = [jsonio.read(p, "boot") for p in sorted((PUBLISHED / "receipts").glob("*-boot.json"))]
    text = readme.render(plan, {**comparison, "depth_curves": []}, bar, boots,
                         jsonio.read(PUBLISHED / "comparison" / "acceptance.json"))
    assert "figures/fixture.png" not in text and "figures/depth.png" not in text


def test_a_toy_figure_is_drawn_titled_and_listed_in_the_readme(toy, tmp_path):
    plan, comparison, table, bar = published()
    plan = {**plan, "instruments": {**plan["instruments"], toy.name: {}}}
    drawn = figures.render_all(plan, comparison, table, tmp_path, bar)
    assert tmp_path / "burst.svg" in drawn
    assert f"{plan['name']}: burst throughput per pair" in (tmp_path / "burst.svg").read_text()
    boots = [jsonio.read(p, "boot") for p in sorted((PUBLISHED / "receipts").glob("*-boot.json"))]
    text = readme.render(plan, comparison, bar, boots,
                         jsonio.read(PUBLISHED / "comparison" / "acceptance.json"))
    shown = [line for line in text.splitlines() if line.startswith("![")]
    assert shown == [  # the bar's first, under its table; the toy listed after the built-in
        # figures; depth is shown in its own section
        f"![{rulefig.ALT}](figures/rules.png)",
        "![output throughput per concurrency](figures/throughput.png)",
        "![time to first token per concurrency](figures/ttft.png)",
        "![per-position acceptance](figures/acceptance.png)",
        "![fixture classes against the control range](figures/fixture.png)",
        "![burst throughput](figures/burst.png)",
        "![decode rate against prompt depth](figures/depth.png)"]


def test_the_sweep_figures_link_each_pair_show_ttft_in_ms_and_name_each_arm_once(tmp_path):
    """TTFT in milliseconds, each annotation's interval to a tenth of a percent and its level
    said, each boot pair's two values joined by a line, and the acceptance legend by arm (with
    its boots), not one entry per session."""
    import re

    plan, comparison, table, bar = published()
    figures.render_all(plan, comparison, table, tmp_path, bar)
    ttft = (tmp_path / "ttft.svg").read_text()
    assert "TTFT p50 (ms)" in ttft and "TTFT p50 (s)" not in ttft
    assert "brackets: 95 % interval over boot pairs" in ttft
    effect = next(r for r in comparison["rows"] if r["instrument"] == "sweep"
                  and r["metric"] == "throughput" and r["pair"] == "all")
    lo, hi = effect["interval"]
    assert f"[{lo:+.1f}, {hi:+.1f}]" in (tmp_path / "throughput.svg").read_text()
    per_pair = [r for r in comparison["rows"] if r["instrument"] == "sweep"
                and r["metric"] == "throughput" and r["pair"] != "all"]
    joined = re.findall(r'<path d="M [\d.]+ [\d.]+ \nL [\d.]+ [\d.]+ \n"[^>]*stroke-opacity: '
                        r'0.7; stroke-width: 0.6', (tmp_path / "throughput.svg").read_text())
    assert len(per_pair) > 1 and len(joined) == len(per_pair)
    legend = (tmp_path / "acceptance.svg").read_text()
    assert re.search(r"control \(\d+ boots\)", legend) and "1-control" not in legend


def test_positions_an_arm_has_no_rate_at_are_marked_not_drawn_as_zero(tmp_path):
    """k=4 against k=7: the k=4 arm never drafted positions 5-7; a k schedule's window mixes
    more draft lengths than the counters tell apart: no rate past position 1."""
    for name, said in (("k7v4", "candidate: never drafted there"),
                       ("ksched-cpu", "candidate: no rate: drafts per position not told")):
        root = ROOT / "results" / name
        plan = jsonio.read(root / "plan.json", "plan")
        figures.render_all(plan, jsonio.read(root / "comparison" / "comparison.json"),
                           jsonio.read(root / "comparison" / "acceptance.json")["windows"],
                           tmp_path / name, jsonio.read(root / "comparison" / "bar.json"))
        svg = (tmp_path / name / "acceptance.svg").read_text()
        assert said in svg, name
        assert "never drafted" not in svg or name == "k7v4"
