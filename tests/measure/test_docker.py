"""The docker runtime against a real Docker engine and registry (tools/docker-up.sh starts
both here; envs/image/build.sh builds and pushes the CPU engine image)."""

import os
import signal
import subprocess
import time

import pytest
import yaml

from knee.core import jsonio
from tests import helpers
from tests.helpers import ROOT, logs, reduced_config, run_knee, wait_for_traffic

SNAKEMAKE = [*helpers.SNAKEMAKE, "--cores", "2"]
REF = "127.0.0.1:5000/knee/vllm-cpu:0.32.0"
pytestmark = [pytest.mark.engine, pytest.mark.docker]


@pytest.fixture(scope="module")
def image():
    """The CPU engine image in the local registry: {ref, digest}; built if missing (the
    docker marker has made sure the engine and the registry answer)."""
    r = subprocess.run(["bash", "envs/image/build.sh", REF], cwd=ROOT, capture_output=True,
                       text=True, timeout=3600)
    assert r.returncode == 0, r.stderr[-3000:]
    pinned = r.stdout.strip().splitlines()[-1]
    return {"ref": REF, "digest": pinned.split("@", 1)[1]}


def containers(name: str) -> list[str]:
    out = subprocess.run(["docker", "ps", "-a", "-q", "--filter",
                          f"label=knee.experiment={name}"], capture_output=True, text=True)
    return out.stdout.split()


def docker_config(tmp_path, default_config, name, image, **runtime):
    path = reduced_config(tmp_path, default_config, name)
    cfg = yaml.safe_load(path.read_text())
    cfg["runtime"] = {**cfg["runtime"], "kind": "docker", "image": image, "shm_size": "2g",
                      **runtime}
    path.write_text(yaml.safe_dump(cfg))
    return path, cfg["name"], ROOT / "results" / cfg["name"]


def test_reduced_experiment_in_containers(tmp_path, default_config, results_dir,
                                          engine_python, image):
    path, name, root = docker_config(tmp_path, default_config, "it-docker", image)
    results_dir.append(root)
    r = subprocess.run([*SNAKEMAKE, "--config", f"experiment={path}"], cwd=ROOT,
                       capture_output=True, text=True, timeout=2400)
    assert r.returncode == 0, r.stderr[-3000:] + logs(root)
    assert containers(name) == []
    pulled = jsonio.read(root / "receipts" / "image.json", "image")
    assert pulled["digest"] == image["digest"] and pulled["packages"]["vllm-cpu"] == "0.32.0"
    boot = jsonio.read(root / "receipts" / "1-candidate-boot.json", "boot")
    spec = boot["container"]
    assert spec["image"] == f"127.0.0.1:5000/knee/vllm-cpu@{image['digest']}"
    assert spec["ports"] == {"8000/tcp": ["127.0.0.1", int(boot["endpoint"].rsplit(":", 1)[1])]}
    assert spec["labels"] == {"knee.experiment": name, "knee.measure.session": "1-candidate"}
    assert [v["mode"] for v in spec["volumes"].values()] == ["ro", "rw"]
    assert boot["hardware"]["gpus"] == []  # a CPU host: absent cleanly
    caches = [jsonio.read(root / "receipts" / f"1-{arm}-cache.json", "cache")
              for arm in ("control", "candidate")]
    assert all(c["key"] and c["result"] in ("hit", "partial hit", "miss") for c in caches)
    assert (root / "logs" / "engine" / "1-control.log").read_text().strip()
    assert "Compile cache: " in (root / "README.md").read_text()
    assert boot["image_digest"] == image["digest"]
    # a docker run audits and traces like any other: every number from its raw files, every
    # receipt's digest against the plan's
    audited = run_knee("audit", str(root), timeout=600)
    assert audited.returncode == 0, audited.stdout + audited.stderr
    bar = jsonio.read(root / "comparison" / "bar.json", "bar")
    shown = f"{bar['rules'][-1]['per_pair'][0]['delta_pct']:+.2f}%"
    traced = run_knee("trace", str(root), shown, timeout=120)
    assert traced.returncode == 0, traced.stderr
    assert f"docker runtime, image digest {image['digest']}" in traced.stdout


def test_wrong_digest_is_refused_before_anything_boots(tmp_path, default_config, results_dir,
                                                      engine_python, image):
    wrong = {**image, "digest": "sha256:" + "0" * 64}
    path, name, root = docker_config(tmp_path, default_config, "it-digest", wrong)
    results_dir.append(root)
    r = subprocess.run([*SNAKEMAKE, "--config", f"experiment={path}"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode != 0
    log = (root / "logs" / "image.log").read_text()
    assert f"runtime.image.digest: '{image['ref']}' resolves to {image['digest']}" in log
    assert "not the pinned sha256:000" in log and "nothing was pulled or booted" in log
    assert not (root / "receipts").exists() or not list((root / "receipts").glob("*-boot.json"))
    assert containers(name) == []


def test_a_container_that_exits_during_boot_is_reported_with_its_log(
        tmp_path, default_config, results_dir, engine_python, image):
    path, name, root = docker_config(tmp_path, default_config, "it-dies", image)
    cfg = yaml.safe_load(path.read_text())
    cfg["server"]["args"]["max-model-len"] = "not-a-number"
    path.write_text(yaml.safe_dump(cfg))
    results_dir.append(root)
    r = subprocess.run([*SNAKEMAKE, "--config", f"experiment={path}"], cwd=ROOT,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode != 0
    log = (root / "logs" / "session" / "1-control.log").read_text()
    assert "engine exited with status" in log and "during boot" in log
    assert "max-model-len" in log  # the container's own last lines
    assert containers(name) == []


def test_kill_mid_sweep_and_ctrl_c_leave_no_container(tmp_path, default_config, results_dir,
                                                      engine_python, image):
    path, name, root = docker_config(tmp_path, default_config, "it-dkill", image)
    results_dir.append(root)
    proc = subprocess.Popen([*SNAKEMAKE, "--config", f"experiment={path}"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    wait_for_traffic(proc, root / "logs" / "engine" / "1-control.log", 900, "control")
    (cid,) = containers(name)
    subprocess.run(["docker", "kill", cid], check=True, capture_output=True)
    proc.wait(timeout=600)
    assert proc.returncode != 0
    session_log = (root / "logs" / "session" / "1-control.log").read_text()
    assert "engine container exited with status" in session_log
    assert containers(name) == [] and list((root / "failed").glob("1-control-*"))

    # Ctrl-C (SIGINT to the whole process group) during the next attempt's boot
    proc = subprocess.Popen([*SNAKEMAKE, "--config", f"experiment={path}"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None and not containers(name):
        time.sleep(0.5)
    assert containers(name), "no container was started"
    time.sleep(3)
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(timeout=300)
    assert proc.returncode != 0
    assert containers(name) == []
