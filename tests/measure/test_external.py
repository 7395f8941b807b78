"""runtime.kind external: two real embedded engines started by the test (one per arm, each with
its arm's settings) are measured end to end; knee boots and stops nothing, says so in its
receipts and README, and the results pass the audit."""

import uuid

import pytest
import yaml

from knee.core import jsonio
from knee.measure.runtime import endpoint
from knee.measure.runtime.process import Engine
from knee.plan import config
from knee.plan.arms import server_argv
from knee.publish import audit
from knee.publish.readme import EXTERNAL
from tests.helpers import ROOT, logs, run_snakemake


def external_config(default_config: dict, ports: dict) -> dict:
    cfg = default_config
    cfg["name"] = f"it-external-{uuid.uuid4().hex[:6]}"
    cfg["runtime"] = {"kind": "external", "servers": {
        arm: {"url": f"http://127.0.0.1:{port}"} for arm, port in ports.items()}}
    cfg["protocol"]["pairs"] = 1
    cfg["instruments"] = {"seed": 7, "sweep": {
        "concurrency": [1, 2], "runs": 1, "requests_per_stream": 2, "min_requests": 2,
        "output_tokens": 24, "warmup_requests": 1}}
    cfg["bar"]["rules"] = [{"name": "C2 gain", "instrument": "sweep", "metric": "throughput",
                            "point": 2, "min_gain_pct": 0}]
    return cfg


@pytest.fixture
def servers(engine_python, default_config, tmp_path):
    """One running engine per arm, as the arm's settings say, torn down by the test."""
    ports = {arm: endpoint.free_port("127.0.0.1") for arm in ("control", "candidate")}
    cfg = external_config(default_config, ports)
    _, plan = config.plan_config(cfg, "external.yaml", ROOT)
    engines = {}
    try:
        for arm, port in ports.items():
            argv = server_argv(engine_python, plan["arms"][arm], plan["model"]["path"],
                               plan["model"]["name"], "127.0.0.1", port)
            env = {**plan["arms"][arm].get("env", {}), "VLLM_CPU_KVCACHE_SPACE": "1",
                   "VLLM_CACHE_ROOT": str(ROOT / "resources" / "vllm-cache")}
            engines[arm] = Engine(argv=argv, env=env, log=tmp_path / f"{arm}.log",
                                  host="127.0.0.1", port=port)
            engines[arm].start()
        for engine in engines.values():
            engine.wait_healthy(600)
        yield cfg, engines
    finally:
        for engine in engines.values():
            engine.stop(30)


def run_workflow(cfg: dict, tmp_path, results_dir) -> tuple:
    """The workflow on this config, in this checkout; (its results folder, the run)."""
    path = tmp_path / "external.yaml"
    path.write_text(yaml.safe_dump(cfg))
    root = ROOT / "results" / cfg["name"]
    results_dir.append(root)
    return root, run_snakemake("--config", f"experiment={path}", cores=2, timeout=1800)


@pytest.mark.engine
def test_two_running_servers_are_measured_and_audited(servers, tmp_path, results_dir):
    cfg, engines = servers
    root, r = run_workflow(cfg, tmp_path, results_dir)
    assert r.returncode == 0, logs(root) + r.stderr[-3000:]
    assert all(e.exited() is None for e in engines.values())  # knee stopped nothing
    assert audit.audit(root) == []
    servers = jsonio.read(root / "receipts" / "servers.json", "servers")
    for sid, arm in (("1-control", "control"), ("1-candidate", "candidate")):
        boot = jsonio.read(root / "receipts" / f"{sid}-boot.json", "boot")
        assert boot["runtime"] == "external" and boot["argv"] == []
        assert boot["external"]["booted_by_knee"] is False
        assert boot["external"]["url"] == cfg["runtime"]["servers"][arm]["url"]
        assert boot["external"]["models"] == [cfg_model_name(root)]
        assert boot["engine"]["packages"]["vllm"] == servers[arm]["version"]
        assert boot["compile_cache"] is None
        assert not (root / "receipts" / f"{sid}-cache.json").exists()
        stop = jsonio.read(root / "receipts" / f"{sid}-stop.json", "stop")
        assert stop["stopped_by_knee"] is False and stop["completed"] is True
    readme = (root / "README.md").read_text()
    assert EXTERNAL in readme and "not knee's to see (external server)" in readme
    comparison = jsonio.read(root / "comparison" / "comparison.json", "comparison")
    assert comparison["verdict"] == "VALID"


def cfg_model_name(root):
    return jsonio.read(root / "plan.json", "plan")["model"]["name"]


@pytest.mark.workflow
def test_an_external_server_that_does_not_answer_is_refused_before_a_session(
        default_config, tmp_path, results_dir):
    cfg = external_config(default_config, {"control": endpoint.free_port("127.0.0.1"),
                                           "candidate": endpoint.free_port("127.0.0.1")})
    root, r = run_workflow(cfg, tmp_path, results_dir)
    assert r.returncode != 0
    assert "runtime.servers.control.url" in (root / "logs" / "servers.log").read_text()
    assert not list((root / "receipts").glob("*-boot.json"))
