"""knee audit and knee trace on the committed example results (a real run of the default)."""

import json
import shutil

import pytest

from knee.core import jsonio
from knee.publish import audit, trace
from tests.helpers import ROOT, run_knee

EXAMPLE = ROOT / "results" / "ksched-cpu"


def test_the_published_example_passes_the_audit(results):
    assert audit.audit(results) == []


def test_a_renamed_copy_in_another_place_passes_the_audit(results, tmp_path):
    archived = tmp_path / "elsewhere" / "ksched-cpu-archived"
    shutil.copytree(results, archived)
    assert audit.audit(archived) == []


def test_cli_audit_exit_codes(results):
    """0 when everything agrees, with the result on stdout and what it checked on stderr as it
    went; 4 with what disagrees; 1 where there is no folder (a mistyped path is not a
    disagreement), naming the folder it may have meant."""
    ok = run_knee("audit", str(results), timeout=300)
    assert ok.returncode == 0, ok.stdout
    assert ok.stdout.rstrip().endswith(f"{results}: OK")
    assert "audit: session 1-control (1 of " in ok.stderr and "the README, recomputed" in ok.stderr
    typo = run_knee("audit", str(results)[:-1], timeout=60)
    assert typo.returncode == 1 and typo.stdout == ""
    assert f"no results folder there; did you mean {results}?" in typo.stderr
    (results / "raw" / "1-control" / "sweep.prom.after").write_text("# emptied\n")
    bad = run_knee("audit", str(results), timeout=300)
    assert bad.returncode == 4 and "raw/1-control/sweep.prom.after" in bad.stdout


def edit_json(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def test_a_tampered_raw_record_is_caught_and_named(results):
    def more_tokens(d):
        d["points"][0]["records"][0]["output_tokens"] += 100
    edit_json(results / "raw" / "1-candidate" / "sweep.json", more_tokens)
    problems = "\n".join(audit.audit(results))
    assert "MANIFEST.sha256" in problems and "raw/1-candidate/sweep.json does not match" in problems
    # the derived numbers no longer follow from it
    assert "comparison/comparison.json#/rows/" in problems
    assert "raw/1-candidate/sweep.metrics.json#/client_output_tokens" in problems


def test_a_tampered_derived_file_is_caught_and_named(results):
    def better(d):
        d["rows"][0]["candidate"] *= 1.1
    edit_json(results / "comparison" / "comparison.json", better)
    problems = audit.audit(results)
    assert "comparison/comparison.json#/rows/0/candidate: differs from the recomputation" in \
        "\n".join(problems)


def test_a_tampered_readme_number_is_caught_and_named(results):
    readme = results / "README.md"
    data = json.loads((results / "comparison" / "comparison.json").read_text())
    row = next(r for r in data["rows"]
               if r["instrument"] == "sweep" and r["metric"] == "throughput")
    shown = f"{row['candidate']:.2f}"
    text = readme.read_text()
    assert shown in text
    readme.write_text(text.replace(shown, f"{float(shown) * 1.2:.2f}", 1))
    problems = "\n".join(audit.audit(results))
    assert "README.md:" in problems and "differs from the recomputation" in problems


def test_a_tampered_receipt_is_caught_and_named(results):
    def other_config(d):
        d["config_sha256"] = "0" * 64
    edit_json(results / "receipts" / "2-control-boot.json", other_config)
    problems = "\n".join(audit.audit(results))
    assert "receipts/2-control-boot.json: config_sha256 0000" in problems


def test_trace_prints_the_chain_from_readme_to_config(results):
    data = json.loads((results / "comparison" / "bar.json").read_text())
    pairs = data["rules"][-1]["per_pair"]  # the README shows the lowest and the highest
    low = min(range(len(pairs)), key=lambda i: pairs[i]["delta_pct"])
    shown = f"{pairs[low]['delta_pct']:+.2f}%"
    chain = "\n".join(trace.trace(results, shown))
    assert "README.md:" in chain and f"comparison/bar.json#/rules/2/per_pair/{low}/delta_pct" \
        in chain
    assert f"raw/{pairs[low]['pair']}-candidate/sweep.json" in chain and "request records" \
        in chain
    assert f"receipts/{pairs[low]['pair']}-candidate-boot.json" in chain and "argv:" in chain
    assert "config_sha256" in chain or "config " in chain
    assert "workflow commit" in chain


def test_readme_of_a_sweep_only_experiment_renders():
    from knee.core import jsonio
    from knee.publish import readme

    pub = ROOT / "results" / "ksched-cpu"
    plan = jsonio.read(pub / "plan.json", "plan")
    plan["instruments"] = {k: v for k, v in plan["instruments"].items() if k != "fixture"}
    comparison = jsonio.read(pub / "comparison" / "comparison.json", "comparison")
    comparison["rows"] = [r for r in comparison["rows"] if r["instrument"] != "fixture"]
    comparison["fixture_classes"] = []
    boots = [jsonio.read(p, "boot") for p in sorted((pub / "receipts").glob("*-boot.json"))]
    text = readme.render(plan, comparison, jsonio.read(pub / "comparison" / "bar.json", "bar"),
                         boots, jsonio.read(pub / "comparison" / "acceptance.json"))
    assert "Sweep: closed loop" in text and "Fixture: single stream" not in text


def out_of_order(d):
    d["started_at"] = "2000-01-01T00:00:00+00:00"


def passed(d):
    d["verdict"] = "PASS"
    d["rules"][0]["verdict"] = "PASS"


@pytest.mark.parametrize(("path", "change", "expected"), [
    ("receipts/2-candidate-boot.json", out_of_order,
     ["receipts/2-candidate-boot.json: started_at 2000-01-01", "not run in the planned order"]),
    ("comparison/bar.json", passed,
     ["comparison/bar.json#/verdict: differs from the recomputation",
      "comparison/bar.json#/rules/0/verdict"]),
])
def test_a_session_out_of_order_or_a_tampered_verdict_is_caught(results, path, change, expected):
    edit_json(results / path, change)
    problems = "\n".join(audit.audit(results))
    for text in expected:
        assert text in problems


def test_a_folder_of_the_previous_schema_is_refused_with_how_to_rederive_it(results):
    from knee.core.errors import KneeError

    def old(d):
        d["schema_version"] = 1
    edit_json(results / "comparison" / "comparison.json", old)
    with pytest.raises(KneeError, match=r"comparison.json: knee/comparison version 1.*"
                                        r"--forcerun compare"):
        audit.audit(results)


def test_trace_takes_a_negative_number_from_the_command_line(results):
    data = json.loads((results / "comparison" / "bar.json").read_text())
    lowest = [min(p["delta_pct"] for p in r["per_pair"]) for r in data["rules"]]  # shown
    shown = next(f"{x:+.2f}%" for x in lowest if x < 0)
    r = run_knee("trace", str(results), shown, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "comparison/bar.json#/rules/" in r.stdout and "workflow commit" in r.stdout


def test_the_readme_shows_what_each_session_used_when_its_stop_receipt_says():
    from knee.analyze import folder
    from knee.core import jsonio
    from knee.publish import readme

    pub = ROOT / "results" / "ksched-cpu"
    plan = jsonio.read(pub / "plan.json", "plan")
    args = (plan, jsonio.read(pub / "comparison" / "comparison.json", "comparison"),
            jsonio.read(pub / "comparison" / "bar.json", "bar"), folder.load_boots(plan, pub),
            jsonio.read(pub / "comparison" / "acceptance.json"))
    receipts = folder.session_receipts(plan, pub)
    assert "peak memory" not in readme.render(*args, **receipts)  # older receipts: no column
    receipts["stops"]["1-control"]["resources"] = {
        "wall_s": 312.4, "knee_peak_rss_mib": 180.2, "engine_peak_rss_mib": 2301.6}
    receipts["stops"]["2-control"]["resources"] = {
        "wall_s": 290.0, "knee_peak_rss_mib": 170.0, "engine_peak_rss_mib": None}
    text = readme.render(*args, **receipts)
    assert "| [312](receipts/1-control-stop.json#/resources/wall_s), 180 / 2302 MiB |" in text
    assert "170 / n/a (in its container)" in text
    assert "| 1-candidate | " in text and " | – | " in text  # a receipt without the figures


def test_a_folder_still_being_measured_is_called_unfinished(results):
    """Measured in part (a lease of a GPU host ended): the audit says how far it got and what
    measures the rest, not which file it met missing first; nothing is published yet."""
    (results / "MANIFEST.sha256").unlink()
    for path in [*(results / "receipts").glob("3-*"), results / "raw" / "3-candidate",
                 results / "raw" / "3-control"]:
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    r = run_knee("audit", str(results), timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    boot = jsonio.read(results / "receipts" / "2-control-boot.json", "boot")["hardware"]
    kind = f"{boot['cpus']} CPUs ({boot['cpu_model']})"  # the host that measured 2-control
    assert (f"{results}: unfinished: 4 of 6 sessions measured (the last: 2-control, on {kind})"
            in r.stderr and "`snakemake --configfile config/config.yaml --config "
            "name=ksched-cpu` measures the rest on a host of that kind" in r.stderr), r.stderr
