"""Forgeries of a published folder, made as anyone holding it can: edit, re-derive every derived
file with knee's own commands, re-hash (manifest and crate). Each one makes `knee audit` exit 4
with a message naming the file and what disagrees."""

import json
import shutil

import pytest

from knee import cli
from knee.plan import config
from tests.helpers import ROOT, bar_argv, readme_argv, run_knee, session_inputs


def knee(*argv) -> int:
    return cli.main([str(a) for a in argv])


def rederive(root):
    """Every derived file again from the (edited) folder, with knee's commands, then the
    crate and the manifest over them: what a forger would run."""
    plan, c = root / "plan.json", root / "comparison"
    assert knee("compare", "--plan", plan, "--inputs", *session_inputs(root), "--out-json",
                c / "comparison.json", "--record-invalid") == 0
    assert knee(*bar_argv(root, c / "bar.json"), "--out-md", c / "comparison.md", "--out-html",
                c / "verdict.html") == 0
    assert knee("tables", "--plan", plan, "--comparison", c / "comparison.json", "--inputs",
                *session_inputs(root), "--out-rows", c / "rows.csv", "--out-requests",
                root / "raw" / "requests.parquet") == 0
    knee("recommend", root, "--record-refusal")
    assert knee(*readme_argv(root, root / "README.md")) == 0
    recrate(root)


def recrate(root):
    """The crate (from the folder's own copies of its inputs) and the manifest again."""
    kept = root.parent / "inputs"
    shutil.copytree(root / "workflow", kept, dirs_exist_ok=True)
    assert knee("crate", root, "--snakefile", kept / "Snakefile", "--config",
                kept / "config.yaml") == 0
    assert knee("manifest", root) == 0


def audited(root) -> str:
    r = run_knee("audit", str(root), timeout=300)
    assert r.returncode == 4, r.stdout + r.stderr[-2000:]
    return r.stdout


def edit(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def rehash_bar(plan):
    plan["bar_sha256"] = config.registered_bar_sha256(plan)


def loosen(plan):
    plan["bar"]["rules"][1]["min_gain_pct"] = -50
    plan["bar"]["alpha"] = 0.5


def never_booted(plan):
    plan["arms"]["candidate"]["speculative_config"][
        "num_speculative_tokens_per_batch_size"] = [[1, 16, 3]]


@pytest.mark.parametrize(("change", "expected"), [
    (loosen, ["plan.json#/bar/alpha: differs from the plan re-made from workflow/config.yaml",
              "plan.json#/bar/rules/1/min_gain_pct: differs from the plan re-made",
              "plan.json#/bar_sha256: bb6d6ec63b18 is not the sha256 of plan.json's bar"]),
    (lambda p: (loosen(p), rehash_bar(p)),
     ["receipts/1-control-boot.json: bar_sha256 bb6d6ec63b18 != ",
      "this bar was not registered before the session booted",
      "plan.json#/bar/rules/1/min_gain_pct: differs from the plan re-made"]),
    (lambda p: (never_booted(p), rehash_bar(p)),
     ["receipts/1-candidate-boot.json#/server/speculative_config/"
      "num_speculative_tokens_per_batch_size: differs from plan.json#/arms/candidate",
      "receipts/1-candidate-boot.json#/argv: --speculative-config"]),
])
def test_an_edited_plan_is_caught(results, change, expected):
    edit(results / "plan.json", change)
    rederive(results)
    out = audited(results)
    for text in expected:
        assert text in out


def test_a_bar_loosened_in_the_config_copy_too_is_caught_by_the_boot_receipts(results):
    """The forger edits the config copy and the plan consistently: the boots still recorded
    the config and bar they measured under."""
    copy_ = results / "workflow" / "config.yaml"
    copy_.write_text(copy_.read_text().replace("min_gain_pct: 15", "min_gain_pct: -50"))
    cfg = config.validate(config.load(copy_), str(copy_))
    fresh = config.plan_of(cfg, "config/config.yaml")
    edit(results / "plan.json", lambda p: p.update(
        {k: v for k, v in fresh.items() if k != "workflow"}))
    rederive(results)
    out = audited(results)
    assert "receipts/1-control-boot.json: config_sha256 28e3477f3110 != " in out
    assert "the session booted under another config" in out
    assert "this bar was not registered before the session booted" in out


def test_a_removed_pair_is_caught(results):
    for sid in ("3-control", "3-candidate"):
        shutil.rmtree(results / "raw" / sid)
        for kind in ("boot", "stop", "cache"):
            (results / "receipts" / f"{sid}-{kind}.json").unlink()

    def two_pairs(plan):
        plan["protocol"]["pairs"] = 2
        plan["protocol"]["sessions"] = [s for s in plan["protocol"]["sessions"]
                                        if s["pair"] <= 2]
        rehash_bar(plan)
    edit(results / "plan.json", two_pairs)
    rederive(results)
    out = audited(results)
    assert "plan.json#/protocol/pairs: differs from the plan re-made from workflow/config.yaml" \
        in out
    assert "this bar was not registered before the session booted" in out


@pytest.mark.parametrize(("a", "b"), [("1-control", "1-candidate"), ("1-control", "2-control")])
def test_swapped_sessions_are_caught(results, a, b):
    raw = results / "raw"
    (raw / a).rename(raw / "swap")
    (raw / b).rename(raw / a)
    (raw / "swap").rename(raw / b)
    rederive(results)
    out = audited(results)
    assert f"raw/{a}/sweep.json: session '{b}' != '{a}': not this session's measurement" in out
    assert f"raw/{b}/sweep.prom.before: the engine process started at" in out


def test_edited_verdict_pages_and_a_replaced_figure_are_caught(results):
    c = results / "comparison"
    for name in ("verdict.html", "comparison.md"):
        (c / name).write_text((c / name).read_text().replace("FAIL", "PASS"))
    page = results / "index.html"
    page.write_text(page.read_text().replace('class="v FAIL">FAIL', 'class="v PASS">PASS'))
    f = results / "figures"
    shutil.copy(f / "ttft.png", f / "throughput.png")
    shutil.copy(f / "ttft.png", f / "latency.png")  # a figure no instrument of it draws
    (f / "depth.svg").write_text((f / "depth.svg").read_text().replace("depth", "dep"))
    recrate(results)
    out = audited(results)
    for name in ("comparison/verdict.html", "comparison/comparison.md"):
        assert f"{name}: differs from its rendering from the recomputed comparison and bar" \
            in out
    for name in ("figures/throughput.png", "figures/depth.svg"):
        assert f"{name}: differs from the figure rendered again" in out
    assert "index.html: differs from the page of the recomputed README" in out
    assert "figures/latency.png: not a figure of this experiment's instruments" in out


def test_an_untouched_copy_anywhere_passes_and_says_what_it_cannot_prove(results, tmp_path):
    r = run_knee("audit", str(results), timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stdout
    assert "not possible: raw files held to the sha256" in r.stderr  # an older folder
    assert "git: the folder is not in a git repository" in r.stderr
    assert "cannot prove about itself" in r.stderr


def test_the_published_folder_in_its_repository_says_what_git_shows():
    r = run_knee("audit", str(ROOT / "results" / "aa-cpu"), timeout=300)
    assert r.returncode == 0, r.stdout
    assert "git: plan.json was committed in the same commit as the receipts" in r.stderr


def test_raw_files_are_held_to_the_hashes_their_stop_receipt_recorded(results):
    from knee.core import jsonio
    from knee.publish import evidence

    plan = jsonio.read(results / "plan.json", "plan")
    sid, raw = "2-control", results / "raw" / "2-control"
    boot = jsonio.read(results / "receipts" / f"{sid}-boot.json", "boot")
    stop = {"raw_sha256": {p.name: jsonio.sha256_file(p) for p in sorted(raw.iterdir())
                           if ".metrics." not in p.name}}
    names = ["sweep", "fixture", "depth", "probe"]
    assert evidence.bound_to_session(results, plan, sid, boot, stop, names) == ([], [])
    (raw / "probe.json").write_text((raw / "probe.json").read_text().replace("0", "1", 1))
    (raw / "extra.json").write_text("{}")
    problems, _ = evidence.bound_to_session(results, plan, sid, boot, stop, names)
    assert problems == [
        "raw/2-control/extra.json: not recorded by receipts/2-control-stop.json",
        "raw/2-control/probe.json: sha256 differs from the one receipts/2-control-stop.json "
        "recorded when the session published"]


def test_a_request_record_removed_and_everything_rederived_is_caught_and_invalidates(results):
    """A folder measured before stop receipts sealed the raw files: one request record taken out
    of a raw sweep file and every derived file made again with knee's own commands. The server's
    own counters still count its tokens: the audit names the window, and the comparison (so
    the verdict) is INVALID."""
    sweep = results / "raw" / "2-control" / "sweep.json"
    edit(sweep, lambda raw: raw["points"][0]["records"].pop())
    rederive(results)
    out = audited(results)
    assert "raw/2-control/sweep: the raw records disagree with the server's own counters" in out
    comparison = json.loads((results / "comparison" / "comparison.json").read_text())
    assert comparison["verdict"] == "INVALID"
    assert [w["session"] for w in comparison["counter_disagreements"]] == ["2-control"]
    assert "disagree with the server's own counters" in (results / "README.md").read_text()


def test_an_edited_prediction_error_is_caught_where_the_readme_links_it(tmp_path):
    """A verification run's prediction error, narrowed in comparison.json and the README
    alike and re-hashed, is recomputed from the raw records and the sealed prediction."""
    root = tmp_path / "ksched-cpu-verify"
    shutil.copytree(ROOT / "results" / "ksched-cpu-verify", root)
    was = json.loads((root / "comparison" / "comparison.json").read_text())["prediction"]
    edit(root / "comparison" / "comparison.json",
         lambda c: c["prediction"].update(median_abs=c["prediction"]["median_abs"] / 2))
    readme = root / "README.md"
    shown = f"[{was['median_abs']:.1f}%](comparison/comparison.json#/prediction/median_abs)"
    assert shown in readme.read_text()
    forged = shown.replace(f"{was['median_abs']:.1f}%", f"{was['median_abs'] / 2:.1f}%")
    readme.write_text(readme.read_text().replace(shown, forged))
    recrate(root)
    out = audited(root)
    assert "comparison/comparison.json#/prediction/median_abs: differs from the recomputation" \
        in out, out
    assert "README.md:" in out, out
