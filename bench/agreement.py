"""Benchmark: knee's sweep and vLLM's own benchmark client on the same prompts, same engine.

    python bench/agreement.py [--config config/config.yaml] [--arm control]
                              [--concurrency 1 4 16] [--requests-per-stream 4]

Boots the embedded engine once with one arm of the config (its engine_cpus pinning; both
clients run on the remaining CPUs; prefix caching off), then at every concurrency point sends
one prompt set, built exactly as the sweep builds it, first with knee's client, then with
`vllm.benchmarks.serve` (custom dataset of the same texts in the same order, no chat template,
ignore_eos, temperature 0), after one throw-away round, alternating which client goes first,
`--repeats` times each. Each knee run is paired with the vLLM run next to it. Prints the median
output throughput (tokens/s) of both, the median and range of the paired differences, and
every run: the server is the bottleneck, so the two should agree within 3 %. On a small
machine one engine's throughput moves by several per cent from run to run, which is why the
runs are paired and repeated, and the last line gives the largest spread of one client's own
runs at one point, saying so when it is too wide to resolve 3 %. Needs the engine
environment and the model (`snakemake resources/engine-venv/knee-engine.json <model path>`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from knee import client, config, prompts
from knee.runtime import endpoint
from knee.runtime.process import Engine, server_argv, split_cpus

ROOT = Path(__file__).resolve().parents[1]
ENGINE_PYTHON = ROOT / "resources" / "engine-venv" / "bin" / "python"
VLLM_BENCH = ("import sys\n"
              "from vllm.utils.argparse_utils import FlexibleArgumentParser\n"
              "from vllm.benchmarks.serve import add_cli_args, main\n"
              "p = FlexibleArgumentParser(); add_cli_args(p); main(p.parse_args(sys.argv[1:]))\n")


def vllm_bench(base: str, model: dict, texts: list[str], c: int, output_tokens: int,
               work: Path) -> dict:
    dataset = work / f"prompts-c{c}.jsonl"
    dataset.write_text("".join(json.dumps({"prompt": t}) + "\n" for t in texts))
    out = work / f"vllm-c{c}.json"
    argv = [str(ENGINE_PYTHON), "-c", VLLM_BENCH, "--backend", "openai", "--base-url", base,
            "--endpoint", "/v1/completions", "--model", model["name"],
            "--tokenizer", str(ROOT / model["path"]), "--dataset-name", "custom",
            "--dataset-path", str(dataset), "--disable-shuffle", "--skip-chat-template",
            "--custom-output-len", str(output_tokens), "--num-prompts", str(len(texts)),
            "--max-concurrency", str(c), "--request-rate", "inf", "--ignore-eos",
            "--temperature", "0", "--disable-tqdm", "--save-result",
            "--result-dir", str(work), "--result-filename", out.name]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=3600,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if r.returncode != 0:
        raise SystemExit(f"vllm bench serve failed:\n{r.stderr[-3000:]}")
    saved = json.loads(out.read_text())
    return {"tokens": saved["total_output_tokens"], "wall_s": saved["duration"],
            "throughput": saved["output_throughput"], "failed": saved.get("failed", 0)}


def knee_sweep(base: str, model: dict, texts: list[str], c: int, sampling: dict) -> dict:
    result = client.run(base, model["name"], texts, sampling, c, 3600)
    ok = [r for r in result["records"] if not r["error"]]
    tokens = sum(r["output_tokens"] for r in ok)
    return {"tokens": tokens, "wall_s": result["wall_s"], "throughput": tokens / result["wall_s"],
            "failed": len(result["records"]) - len(ok)}


def runs(results: list[dict]) -> str:
    return " ".join(f"{x['throughput']:.1f}" for x in results)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=str(ROOT / "config" / "config.yaml"))
    ap.add_argument("--arm", default="control")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--requests-per-stream", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=5, help="runs per client per point")
    a = ap.parse_args()
    plan = config.make_plan(config.load(a.config), a.config)
    arm, rt, model = plan["arms"][a.arm], plan["runtime"], plan["model"]
    sweep = plan["instruments"]["sweep"]
    sampling = prompts.sampling_params(sweep["output_tokens"])
    engine_cpus, client_cpus = split_cpus(rt.get("engine_cpus"))
    if client_cpus:
        os.sched_setaffinity(0, client_cpus)  # vLLM's client inherits it
    port = endpoint.free_port("127.0.0.1")
    work = Path(tempfile.mkdtemp(prefix="knee-agreement-"))
    # the same texts go to both clients, so neither may be served from the other's prefix cache
    arm = {**arm, "args": {**arm.get("args", {}), "enable-prefix-caching": False,
                           "no-enable-prefix-caching": True}}
    engine = Engine(argv=server_argv(str(ENGINE_PYTHON), arm, str(ROOT / model["path"]),
                                     model["name"], "127.0.0.1", port),
                    env={**arm.get("env", {}), "VLLM_CACHE_ROOT": str(ROOT / rt["cache_dir"])},
                    log=work / "engine.log", host="127.0.0.1", port=port, cpus=engine_cpus)
    try:
        engine.start()
        print(f"engine ({a.arm} arm) healthy after {engine.wait_healthy(900):.1f} s; "
              f"prompts of {sweep['prompt_tokens']} tokens, {sweep['output_tokens']} out")
        tokenize = endpoint.tokenizer(engine.base_url, model["name"])
        warm = prompts.exact_token_prompts(tokenize, 1, "agreement warmup", 2,
                                           sweep["prompt_tokens"])
        client.run(engine.base_url, model["name"], warm, sampling, 1, 600)
        print("conc  requests  knee tok/s  vllm tok/s  paired knee-vllm % (median, range)"
              "  failed (knee/vllm)")
        worst = noise = 0.0
        for c in a.concurrency:
            n = max(sweep["min_requests"], a.requests_per_stream * c)
            texts = prompts.exact_token_prompts(tokenize, 1, f"agreement c{c}", n,
                                                sweep["prompt_tokens"])
            # the first batch of a new size is slower (the engine warms to the shape), so a
            # throw-away round goes first, then the clients alternate and medians are compared
            knee_sweep(engine.base_url, model, texts, c, sampling)
            k, v = [], []
            for i in range(a.repeats):
                for who in (("knee", "vllm") if i % 2 == 0 else ("vllm", "knee")):
                    if who == "knee":
                        k.append(knee_sweep(engine.base_url, model, texts, c, sampling))
                    else:
                        v.append(vllm_bench(engine.base_url, model, texts, c,
                                            sweep["output_tokens"], work))
            kt = statistics.median(x["throughput"] for x in k)
            vt = statistics.median(x["throughput"] for x in v)
            diffs = [100 * (x["throughput"] - y["throughput"]) / y["throughput"]
                     for x, y in zip(k, v, strict=True)]
            diff = statistics.median(diffs)
            worst = max(worst, abs(diff))
            noise = max(noise, *(100 * (max(t) - min(t)) / statistics.median(t) for t in (
                [x["throughput"] for x in k], [x["throughput"] for x in v])))
            print(f"{c:4d}  {n:8d}  {kt:10.1f}  {vt:10.1f}  {diff:+7.2f} ({min(diffs):+.2f} .. "
                  f"{max(diffs):+.2f})  {sum(x['failed'] for x in k)}/"
                  f"{sum(x['failed'] for x in v)}   runs: knee {runs(k)}; vllm {runs(v)}",
                  flush=True)
            engine.check_alive(f"agreement point c={c}")
        print(f"largest median paired disagreement: {worst:.2f} % (target: within 3 %)")
        # the same client's runs on the same engine: what a difference has to beat to mean much
        print(f"largest spread of one client's runs at one point: {noise:.1f} % of its median"
              + (": this engine is too noisy here to resolve 3 %" if noise > 6 else ""))
    finally:
        engine.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
