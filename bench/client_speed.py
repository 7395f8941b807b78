"""Benchmark: knee's streaming client against vLLM's own benchmark client, on a local server
that streams tokens as fast as it can (bench/sse_server.py).

    python bench/client_speed.py [--mode burst|step] [--step-ms MS] [--server-cpus N ...]
                                 [--tokens 256] [--requests-per-stream 4]

For concurrency 1, 64 and 256 it prints, for each client: chunks per second ingested per
client CPU second (chunks counted by the server; CPU time of the client's streaming: knee's
`client.run`, vLLM's `benchmark()` coroutine), how busy the client was (CPU / wall: near 100 %
means the client, not the server, set the pace), and for knee's client the timing error: each
gap between two chunks as the client saw it, minus the gap between the server's send stamps
(p50/p99 of the absolute error). Targets: knee ingests at least 1.5x vLLM's chunk rate at
concurrency 256; p99 timing error under 0.5 ms at 64. Each point runs --repeats times, the two
clients in turn, the first alternating between repeats; a target is judged on the median over
repeats of each repeat's ratio (and of the p99), shown with its range: on a small machine one
run's ratio moves by a third from run to run. The server runs on its own CPU and the
clients on the others, as a session splits engine and client CPUs: sharing one CPU, the server
is preempted between a chunk's stamp and its send, and that shows up as timing error.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from knee.measure import client, progress
from knee.measure.runtime.endpoint import free_port
from knee.measure.runtime.process import split_cpus

ROOT = Path(__file__).resolve().parents[1]
ENGINE_PYTHON = ROOT / "resources" / "engine-venv" / "bin" / "python"
TOKENIZER = ROOT / "resources" / "models" / "tiny-llama-s0-l4-h256"
# vLLM's client in its own process; the CPU time of its benchmark() coroutine (the streaming,
# not its imports, tokenizer or dataset) is printed on the last line.
VLLM_BENCH = """import sys, time
from vllm.utils.argparse_utils import FlexibleArgumentParser
import vllm.benchmarks.serve as serve
inner, cpu = serve.benchmark, []
async def timed(*args, **kwargs):
    t = time.process_time()
    try:
        return await inner(*args, **kwargs)
    finally:
        cpu.append(time.process_time() - t)
serve.benchmark = timed
p = FlexibleArgumentParser(); serve.add_cli_args(p); serve.main(p.parse_args(sys.argv[1:]))
print('KNEE_BENCH_CPU', cpu[0])
"""


def chunks_sent(base: str) -> int:
    return httpx.get(f"{base}/stats", timeout=10).json()["chunks"]


def knee_client(base: str, c: int, n: int, tokens: int, bar: bool = False) -> dict:
    """knee's client; with bar, as a session runs it on a terminal: a progress bar drawn from
    a thread four times a second (here into memory, so the terminal is not the cost)."""
    sampling = {"max_tokens": tokens, "temperature": 0.0, "ignore_eos": True}
    done: list = []
    drawing = progress.Bar("bench", n, done, stream=io.StringIO(), force=bar)
    sent0, cpu0, t0 = chunks_sent(base), time.process_time(), time.perf_counter()
    with drawing:
        result = client.run(base, "bench", ["hello"] * n, sampling, c, 600, done=done)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    chunks = chunks_sent(base) - sent0
    errors = []
    for r in result["records"]:
        ct, st = r["chunk_times"], r["server_stamps"] or []
        errors += [abs((ct[i] - ct[i - 1]) - (st[i] - st[i - 1])) for i in range(1, len(st))]
    got = sum(r["output_tokens"] for r in result["records"])
    return {"chunks": chunks, "cpu_s": cpu, "wall_s": wall, "tokens_counted": got,
            "err_p50_ms": float(np.percentile(errors, 50)) * 1e3 if errors else None,
            "err_p99_ms": float(np.percentile(errors, 99)) * 1e3 if errors else None}


def vllm_client(base: str, c: int, n: int, tokens: int, out: Path) -> dict:
    """vLLM's `bench serve` (vllm.benchmarks.serve) in its own process."""
    argv = [str(ENGINE_PYTHON), "-c", VLLM_BENCH, "--backend", "openai", "--base-url", base,
            "--endpoint", "/v1/completions", "--model", "bench", "--tokenizer", str(TOKENIZER),
            "--dataset-name", "random", "--random-input-len", "8", "--random-output-len",
            str(tokens), "--num-prompts", str(n), "--max-concurrency", str(c),
            "--ignore-eos", "--disable-tqdm", "--save-result", "--result-dir", str(out.parent),
            "--result-filename", out.name]
    sent0 = chunks_sent(base)
    t0 = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, timeout=1800,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if r.returncode != 0:
        raise SystemExit(f"vllm bench serve failed:\n{r.stderr[-3000:]}")
    cpu = float(r.stdout.strip().splitlines()[-1].split()[-1])
    saved = json.loads(out.read_text(encoding="utf-8"))
    return {"chunks": chunks_sent(base) - sent0, "cpu_s": cpu,
            "wall_s": saved.get("duration", time.perf_counter() - t0),
            "tokens_counted": saved.get("total_output_tokens")}


def measure(name: str, base: str, c: int, n: int, tokens: int) -> dict:
    """One run of one client at one concurrency, printed as a row; its chunk rate per client
    CPU second in "rate"."""
    out = Path(tempfile.gettempdir()) / f"knee-bench-vllm-c{c}.json"
    m = (vllm_client(base, c, n, tokens, out) if name == "vllm"
         else knee_client(base, c, n, tokens, bar=name == "knee+bar"))
    m["rate"] = m["chunks"] / m["cpu_s"] if m["cpu_s"] else float("nan")
    err = (f"{m['err_p50_ms']:10.3f}  {m['err_p99_ms']:10.3f}"
           if m.get("err_p50_ms") is not None else f"{'-':>10}  {'-':>10}")
    print(f"{name:8} {c:5d} {m['chunks']:7d} {m['cpu_s']:6.2f} {m['wall_s']:7.2f}"
          f"  {m['cpu_s'] / m['wall_s']:4.0%}  {m['rate']:12.0f}  {err}", flush=True)
    if name == "knee" and m["tokens_counted"] != m["chunks"]:
        print(f"  knee counted {m['tokens_counted']} tokens for {m['chunks']}"
              " one-token chunks sent")
    return m


def summary(rates: dict, p99: dict, concurrency: list[int], progress: bool) -> None:
    """Each concurrency's chunk rate per client core, knee's against vLLM's (and with the
    progress bar against without): the median over repeats of each repeat's ratio, with its
    range; and the two targets, judged on the medians."""
    def ratio(a: str, b: str, c: int) -> tuple[float, float, float]:
        r = [x / y for x, y in zip(rates[(a, c)], rates[(b, c)], strict=True)]
        return statistics.median(r), min(r), max(r)

    for c in concurrency:
        print(f"concurrency {c}: knee / vllm chunk rate per client core = "
              "{:.2f}x ({:.2f}-{:.2f})".format(*ratio("knee", "vllm", c))
              + ("; knee with the progress bar / without = {:.2f}x ({:.2f}-{:.2f})".format(
                  *ratio("knee+bar", "knee", c)) if progress else ""))
    if 256 in concurrency and 64 in concurrency:
        met = ratio("knee", "vllm", 256)[0] >= 1.5
        err = statistics.median(p99[64])
        print(f"target chunk rate >= 1.5x at 256: {'met' if met else 'MISSED'}; "
              f"target p99 timing error < 0.5 ms at 64: {'met' if err < 0.5 else 'MISSED'} "
              f"({err:.3f} ms, median over {len(p99[64])} repeats)")


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--requests-per-stream", type=int, default=4)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 64, 256])
    ap.add_argument("--repeats", type=int, default=3, help="runs of each client per point")
    ap.add_argument("--mode", choices=["burst", "step"], default="burst",
                    help="how bench/sse_server.py streams (see its docstring)")
    ap.add_argument("--step-ms", type=float, default=0.0,
                    help="step mode: the server's step time (0: as fast as it can)")
    ap.add_argument("--progress", action="store_true",
                    help="also run knee's client with the live progress bar on (knee+bar)")
    ap.add_argument("--server-cpus", type=int, nargs="*",
                    default=sorted(os.sched_getaffinity(0))[-1:],
                    help="CPUs of the server; the clients get the others, as a session splits "
                         "engine and client (default: the last CPU; none: no pinning)")
    return ap.parse_args()


def main() -> int:
    a = parse_args()
    port = free_port("127.0.0.1")
    server_cpus, client_cpus = split_cpus(a.server_cpus)
    server = subprocess.Popen([sys.executable, str(ROOT / "bench" / "sse_server.py"),
                               "--port", str(port), "--mode", a.mode,
                               "--step-ms", str(a.step_ms)])
    if client_cpus:  # vLLM's client, a child of this process, runs on the same CPUs
        os.sched_setaffinity(server.pid, server_cpus)
        os.sched_setaffinity(0, client_cpus)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                httpx.get(f"{base}/stats", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        print(f"server mode: {a.mode}" + (f", {a.step_ms} ms steps" if a.step_ms else "")
              + (f"; server on CPUs {server_cpus}, clients on CPUs {client_cpus}"
                 if client_cpus else "; not pinned"))
        print("client    conc  chunks  cpu s  wall s  busy  chunks/cpu-s  err p50 ms  err p99 ms")
        rates: dict = {}
        p99: dict = {}
        for c in a.concurrency:
            for i in range(a.repeats):
                names = ["knee", "knee+bar", "vllm"] if a.progress else ["knee", "vllm"]
                for name in names if i % 2 == 0 else names[::-1]:
                    m = measure(name, base, c, c * a.requests_per_stream, a.tokens)
                    rates.setdefault((name, c), []).append(m["rate"])
                    if name == "knee":
                        p99.setdefault(c, []).append(m["err_p99_ms"])
        summary(rates, p99, a.concurrency, a.progress)
    finally:
        server.terminate()
        server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
