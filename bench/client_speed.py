"""Benchmark: knee's streaming client against vLLM's own benchmark client, on a local server
that streams tokens as fast as it can (bench/sse_server.py).

    python bench/client_speed.py [--tokens 256] [--requests-per-stream 4]

For concurrency 1, 64 and 256 it prints, for each client: chunks per second ingested per
client CPU second (chunks counted by the server, CPU time of the client process), and for
knee's client the timing error: each gap between two chunks as the client saw it, minus the
gap between the server's send stamps (p50/p99 of the absolute error). Targets: knee ingests at
least 1.5x vLLM's chunk rate at concurrency 256; p99 timing error under 0.5 ms at 64.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from knee import client
from knee.runtime.endpoint import free_port

ROOT = Path(__file__).resolve().parents[1]
ENGINE_PYTHON = ROOT / "resources" / "engine-venv" / "bin" / "python"
TOKENIZER = ROOT / "resources" / "models" / "tiny-llama-s0-l4-h256"
# vLLM's client in its own process; the CPU time of its benchmark call (not its imports) is
# printed on the last line.
VLLM_BENCH = ("import sys, time\n"
              "from vllm.utils.argparse_utils import FlexibleArgumentParser\n"
              "from vllm.benchmarks.serve import add_cli_args, main\n"
              "p = FlexibleArgumentParser(); add_cli_args(p); args = p.parse_args(sys.argv[1:])\n"
              "t = time.process_time(); main(args)\n"
              "print('KNEE_BENCH_CPU', time.process_time() - t)")


def chunks_sent(base: str) -> int:
    return httpx.get(f"{base}/stats", timeout=10).json()["chunks"]


def knee_client(base: str, c: int, n: int, tokens: int) -> dict:
    sampling = {"max_tokens": tokens, "temperature": 0.0, "ignore_eos": True}
    sent0, cpu0, t0 = chunks_sent(base), time.process_time(), time.perf_counter()
    result = client.run(base, "bench", ["hello"] * n, sampling, c, 600)
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
    saved = json.loads(out.read_text())
    return {"chunks": chunks_sent(base) - sent0, "cpu_s": cpu,
            "wall_s": saved.get("duration", time.perf_counter() - t0),
            "tokens_counted": saved.get("total_output_tokens")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--requests-per-stream", type=int, default=4)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 64, 256])
    ap.add_argument("--mode", choices=["burst", "step"], default="burst",
                    help="how bench/sse_server.py streams (see its docstring)")
    a = ap.parse_args()
    port = free_port("127.0.0.1")
    server = subprocess.Popen([sys.executable, str(ROOT / "bench" / "sse_server.py"),
                               "--port", str(port), "--mode", a.mode])
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                httpx.get(f"{base}/stats", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        print(f"server mode: {a.mode}")
        print("client  conc  chunks  cpu s  wall s  chunks/cpu-s  err p50 ms  err p99 ms")
        rates = {}
        for c in a.concurrency:
            n = c * a.requests_per_stream
            out = Path(tempfile.gettempdir()) / f"knee-bench-vllm-c{c}.json"
            for name in ("knee", "vllm"):
                m = (knee_client(base, c, n, a.tokens) if name == "knee"
                     else vllm_client(base, c, n, a.tokens, out))
                rate = m["chunks"] / m["cpu_s"] if m["cpu_s"] else float("nan")
                rates[(name, c)] = rate
                err = (f"{m['err_p50_ms']:10.3f}  {m['err_p99_ms']:10.3f}"
                       if m.get("err_p50_ms") is not None else f"{'-':>10}  {'-':>10}")
                print(f"{name:6} {c:5d} {m['chunks']:7d} {m['cpu_s']:6.2f} {m['wall_s']:7.2f}"
                      f"  {rate:12.0f}  {err}")
        for c in a.concurrency:
            print(f"concurrency {c}: knee / vllm chunk rate per client core = "
                  f"{rates[('knee', c)] / rates[('vllm', c)]:.2f}x")
    finally:
        server.terminate()
        server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
