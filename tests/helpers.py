"""What the tests share besides fixtures (those are in conftest.py): the checkout's root, the
reduced experiment, a results folder's receipts and the argv its rules give a command, knee and
Snakemake run as a user runs them, and what a run left behind (its logs, its engines)."""

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
KNEE = [sys.executable, "-m", "knee"]


def run_knee(*argv, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    """`python -m knee ARGV` from the checkout, its output captured as text."""
    return subprocess.run([*KNEE, *map(str, argv)], cwd=kw.pop("cwd", ROOT),
                          capture_output=True, text=True, timeout=timeout, **kw)


def run_snakemake(*argv, cores: int = 1, timeout: float = 120,
                  **kw) -> subprocess.CompletedProcess:
    """`snakemake --cores N ARGV` from the checkout, its output captured as text."""
    return subprocess.run([*SNAKEMAKE, "--cores", str(cores), *map(str, argv)],
                          cwd=kw.pop("cwd", ROOT), capture_output=True, text=True,
                          timeout=timeout, **kw)


def reduced_config(tmp_path: Path, default_config: dict, name: str, eager: bool = False,
                   **sweep) -> Path:
    """The default experiment in miniature: one pair, two sweep points, two fixture classes.
    eager: the engine skips torch.compile (--enforce-eager), for a test of scheduling, order or
    placement rather than of the compile or its cache (a boot here takes about 18 s less)."""
    cfg = default_config
    if eager:
        cfg["server"]["args"]["enforce-eager"] = True
    cfg["name"] = f"{name}-{uuid.uuid4().hex[:6]}"
    cfg["protocol"]["pairs"] = 1
    cfg["instruments"]["sweep"].update(
        {"concurrency": [1, 4], "runs": 1, "output_tokens": 32, "warmup_requests": 1, **sweep})
    cfg["instruments"]["fixture"].update({"classes": ["shell", "tool_json"], "requests": 1,
                                          "output_tokens": 32})
    cfg["instruments"]["depth"].update({"depths": [64, 512], "output_tokens": 32})
    cfg["instruments"]["probe"].update({"requests": 1, "output_tokens": 32})
    points = cfg["instruments"]["sweep"]["concurrency"]
    cfg["bar"]["rules"] = [r for r in cfg["bar"]["rules"] if r["point"] in (*points, "all")]
    cfg["bar"]["rules"].append({"name": "top gain", "instrument": "sweep",
                                "metric": "throughput", "point": points[-1],
                                "min_gain_pct": 15})
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def run_two_pairs_on_two_cores(tmp_path: Path, default_config: dict, results_dir: list,
                               order: str, sets: bool = True) -> tuple[Path, dict]:
    """Two pairs of the default experiment in a both-arms-at-once order on the real engine,
    the sweep and the fixture only: the folder and its config. With `sets`, one core a set:
    each engine and its load generator checked on the arm's core, the cores swapped in pair 2;
    without, every engine on core 0 and every load generator on core 1."""
    from knee.core import jsonio

    default_config["protocol"]["order"] = order
    if sets:
        default_config["runtime"].pop("engine_cpus", None)
        default_config["runtime"]["arm_cpus"] = [[0], [1]]
    else:
        default_config["runtime"]["engine_cpus"] = [0]
    path = reduced_config(tmp_path, default_config, f"it-{order}", eager=True)
    cfg = yaml.safe_load(path.read_text())
    cfg["protocol"]["pairs"] = 2
    for name in ("depth", "probe"):  # the sweep and the fixture are the bar's
        del cfg["instruments"][name]
    path.write_text(yaml.safe_dump(cfg))
    root = ROOT / "results" / cfg["name"]
    results_dir.append(root)
    r = run_snakemake("--configfile", path, cores=2, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:] + logs(root)
    assert not engine_processes(ROOT)
    boots = {f"{p}-{a}": jsonio.read(root / "receipts" / f"{p}-{a}-boot.json", "boot")
             for p in (1, 2) for a in ("control", "candidate")}
    placed = {sid: (b["cpus"]["engine"], b["cpus"]["client"]) for sid, b in boots.items()}
    assert placed == ({"1-control": ([0], [0]), "1-candidate": ([1], [1]),
                       "2-control": ([1], [1]), "2-candidate": ([0], [0])} if sets else
                      dict.fromkeys(boots, ([0], [1])))
    return root, cfg


def receipts(root: Path, kind: str) -> list[str]:
    """A results folder's receipts of one kind, in protocol order (the sessions that ran)."""
    plan = json.loads((root / "plan.json").read_text())
    paths = [root / "receipts" / f"{s['id']}-{kind}.json" for s in plan["protocol"]["sessions"]]
    return [str(p) for p in paths if p.is_file()]


def session_inputs(root: Path) -> list[str]:
    """What `knee compare`, `tables` and `decide` are handed as their rules hand it: every
    session's boot receipt and raw files, and the realized protocol where there is one."""
    realized = root / "protocol" / "realized.json"
    raw = sorted(str(p) for p in (root / "raw").glob("*/*") if "metrics" not in p.name)
    return [*receipts(root, "boot"), *raw, *([str(realized)] if realized.is_file() else [])]


def bar_argv(root: Path, out: Path) -> list[str]:
    """`knee bar` over a results folder, every file it reads named as its rule names them."""
    c = root / "comparison"
    return ["bar", "--plan", str(root / "plan.json"), "--comparison", str(c / "comparison.json"),
            "--boots", *receipts(root, "boot"), "--out", str(out)]


def readme_argv(root: Path, out: Path) -> list[str]:
    """`knee readme` over a results folder, every file it reads named as its rule names them."""
    c = root / "comparison"
    return ["readme", "--plan", str(root / "plan.json"), "--comparison",
            str(c / "comparison.json"), "--bar", str(c / "bar.json"), "--acceptance",
            str(c / "acceptance.json"), "--boots", *receipts(root, "boot"),
            "--stops", *receipts(root, "stop"), "--caches", *receipts(root, "cache"),
            "--recommendation", str(root / "recommend" / "recommendation.json"),
            "--out", str(out), "--out-html", str(out.with_name("index.html"))]


def logs(root: Path) -> str:
    """The workflow's own logs of a run, for an assertion message."""
    return "\n".join(f"--- {p}\n{p.read_text()[-2000:]}" for p in sorted(root.rglob("logs/*.log")))


def engine_processes(cwd: Path) -> list[str]:
    """Engine processes started from this checkout (another checkout's runs are not ours)."""
    out = subprocess.run(["pgrep", "-af", "vllm.entrypoints"], capture_output=True, text=True)
    mine = []
    for line in out.stdout.splitlines():
        try:
            if Path(f"/proc/{line.split()[0]}/cwd").resolve() == cwd.resolve():
                mine.append(line)
        except OSError:
            continue
    return mine


def wait_for_traffic(proc, log: Path, timeout_s: float, who: str) -> None:
    """Wait until the engine log shows a completion request, the workflow still running."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and "POST /v1/completions" in log.read_text():
            break
        time.sleep(0.5)
    assert proc.poll() is None, f"the workflow ended before the {who}'s sweep started"

