"""Benchmark: knee's sweep and vLLM's own benchmark client on the same prompts, same engine.

    python bench/agreement.py [--config config/config.yaml] [--arm control]
                              [--concurrency 1 4 16] [--requests-per-stream 8] [--repeats 12]
                              [--versus vllm|knee]

Boots the embedded engine once with one arm of the config (its engine_cpus pinning; both
clients run on the remaining CPUs; prefix caching off). At every concurrency point it builds
one prompt set exactly as the sweep does and sends it with knee's client and with
`vllm.benchmarks.serve` (custom dataset of the same texts in the same order, no chat template,
knee's own request fields through `--extra-body`, so both send the same request). vLLM's client
runs in one long-lived process of the engine environment, so each of its runs starts at once,
as knee's do, instead of after seconds of imports with the engine idle, which knee's runs never
followed. Each run is preceded by the same warm-up (the first prompt, `c` times: vLLM's
`--num-warmups c`). After one throw-away round the clients alternate (knee first, then vLLM
first) `--repeats` times; each knee run is paired with the vLLM run next to it. Per point it
prints both median output throughputs (tokens/s) and the mean paired difference with a 95 %
bootstrap interval; what the server saw during each client's runs (its mean inter-token
latency, i.e. step time, and tokens per step, from scrapes around each run); how long each
client left a stream idle per request (its turnaround); and the paired difference in streams
kept decoding (a run's throughput over the engine's own per-stream rate in that run). The
server is the bottleneck, so the throughputs should agree within 3 %; on a shared host the
engine's own speed drifts by more than that between neighbouring runs, and the second figure,
from which that drift cancels, says what the clients themselves differ by. The last lines say,
per point, whether each interval lies within 3 %. `--versus knee` runs knee against itself
under the same protocol: the A/A calibration of how large a difference noise alone makes.
The engine and vLLM's client run in the config's engine environment: the embedded one, or
`runtime.engine` (a GPU host's Python, its env, `runtime.gpus`), so the same command is the GPU
referee. vLLM's saved result names differ between releases (0.32.0 writes per-request
`latencies`, 0.26.0 only `ttfts` and `itls`): a request's busy time is read as its time to the
last token, ttft + the sum of its inter-token latencies, in both, as knee's own `t_last - t_send`.
Needs the engine environment and the model (`snakemake --configfile CONFIG <model path>`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from knee.analyze.window import prom
from knee.core import prompts
from knee.measure import client
from knee.measure.host import gpu
from knee.measure.runtime import endpoint
from knee.measure.runtime.process import Engine, split_cpus
from knee.plan import config, places
from knee.plan.arms import server_argv

ROOT = Path(__file__).resolve().parents[1]
EMBEDDED_PYTHON = "resources/engine-venv/bin/python"
TARGET = 3.0  # per cent
# one argv (JSON) per stdin line; "ok" or the traceback (JSON) on the reply fd given in argv[1]
VLLM_DRIVER = """import json, os, sys, traceback
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.benchmarks.serve import add_cli_args, main
parser = FlexibleArgumentParser(); add_cli_args(parser)
reply = os.fdopen(int(sys.argv[1]), "w", encoding="utf-8")
for line in sys.stdin:
    try:
        main(parser.parse_args(json.loads(line))); reply.write("ok\\n")
    except BaseException:
        reply.write(json.dumps(traceback.format_exc()) + "\\n")
    reply.flush()
"""


class VllmClient:
    """vLLM's benchmark client kept loaded in one engine-environment process."""

    def __init__(self, log: Path, python: str, env: dict):
        self.log = log
        r, w = os.pipe()
        with log.open("w", encoding="utf-8") as out:
            self.proc = subprocess.Popen(
                [python, "-c", VLLM_DRIVER, str(w)], stdin=subprocess.PIPE,
                stdout=out, stderr=subprocess.STDOUT, pass_fds=(w,), text=True,
                env={**os.environ, **env, "HF_HUB_OFFLINE": "1"})
        os.close(w)
        self.replies = os.fdopen(r, encoding="utf-8")

    def run(self, argv: list[str]) -> None:
        self.proc.stdin.write(json.dumps(argv) + "\n")
        self.proc.stdin.flush()
        reply = self.replies.readline()
        if reply != "ok\n":
            why = json.loads(reply) if reply else f"the process exited; see {self.log}"
            raise SystemExit(f"vllm bench serve failed:\n{why[-3000:]}")

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.replies.close()


def same_body(model: dict, sampling: dict) -> str:
    """Everything knee's client sends besides model and prompt, for vLLM's `--extra-body`: both
    clients then send the same request (min_tokens, top_p, continuous usage and all)."""
    body = client.request_body("completions", model["name"], "", sampling)
    return json.dumps({k: v for k, v in body.items() if k not in ("model", "prompt")})


def vllm_dataset(texts: list[str], c: int, work: Path) -> Path:
    """The point's prompts as vLLM's custom dataset, written once per point."""
    dataset = work / f"prompts-c{c}.jsonl"
    dataset.write_text("".join(json.dumps({"prompt": t}) + "\n" for t in texts), encoding="utf-8")
    return dataset


def vllm_run(base: str, vllm: VllmClient, model: dict, dataset: Path, n: int, c: int,
             sampling: dict, work: Path) -> dict:
    out = work / f"vllm-c{c}.json"
    vllm.run(["--backend", "openai", "--base-url", base, "--endpoint", "/v1/completions",
              "--model", model["name"], "--tokenizer", str(ROOT / model["path"]),
              "--dataset-name", "custom", "--dataset-path", str(dataset), "--disable-shuffle",
              "--skip-chat-template", "--custom-output-len", str(sampling["max_tokens"]),
              "--num-prompts", str(n), "--max-concurrency", str(c),
              "--num-warmups", str(c), "--request-rate", "inf", "--ignore-eos",
              "--extra-body", same_body(model, sampling), "--disable-tqdm", "--save-result",
              "--save-detailed", "--result-dir", str(work), "--result-filename", out.name])
    saved = json.loads(out.read_text(encoding="utf-8"))
    busy = sum(ttft + sum(itl) for ttft, itl, err in
               zip(saved["ttfts"], saved["itls"], saved["errors"], strict=True) if not err)
    return {"throughput": saved["output_throughput"], "failed": saved.get("failed", 0),
            "idle_ms": idle_ms(c, saved["duration"], busy, n)}


def knee_run(base: str, model: dict, texts: list[str], c: int, sampling: dict) -> dict:
    # the same warm-up as vLLM's `--num-warmups c`: the first prompt c times, right before
    client.run(base, model["name"], texts[:1] * c, sampling, c, 3600, warmup=True)
    result = client.run(base, model["name"], texts, sampling, c, 3600)
    ok = [r for r in result["records"] if not r["error"]]
    tokens = sum(r["output_tokens"] for r in ok)
    busy = sum(r["t_last"] - r["t_send"] for r in ok)
    return {"throughput": tokens / result["wall_s"], "failed": len(result["records"]) - len(ok),
            "idle_ms": idle_ms(c, result["wall_s"], busy, len(texts))}


def idle_ms(c: int, wall_s: float, busy_s: float, n: int) -> float:
    """Stream time per request not spent between a request's send and its last token: the
    client's turnaround (and the ramp and tail), during which the engine has one request less."""
    return 1000 * (c * wall_s - busy_s) / n


def with_server_view(engine: Engine, spec: bool, run, *args) -> dict:
    """One client run bracketed by scrapes: the engine's own step time and tokens per step."""
    before = endpoint.scrape(engine.metrics_url)
    out = run(engine.base_url, *args)
    after = endpoint.scrape(engine.metrics_url)
    d = prom.window_deltas(before, after, "agreement run", 1, spec)
    out["itl_ms"] = 1000 * d["server_latency"]["inter_token_latency_s"]["mean"]
    out["tokens_per_step"] = d.get("tokens_per_step") or 1.0
    return out


def interval(diffs: list[float], draws: int = 4000) -> tuple[float, float]:
    """95 % percentile-bootstrap interval of the mean paired difference (seeded)."""
    rng = random.Random(0)
    means = sorted(statistics.fmean(rng.choices(diffs, k=len(diffs))) for _ in range(draws))
    return means[int(0.025 * draws)], means[int(0.975 * draws) - 1]


def med(results: list[dict], key: str) -> float:
    return statistics.median(x[key] for x in results)


def runs(results: list[dict]) -> str:
    return " ".join(f"{x['throughput']:.0f}" for x in results)


def pct(a: float, b: float) -> float:
    return 100 * (a - b) / b


def streams(x: dict) -> float:
    """Streams the client kept decoding on average: its throughput over the engine's own
    per-stream rate in that run (tokens per step / step time). The engine's speed, which drifts
    from run to run on a shared host, cancels; what a client adds or loses remains."""
    return x["throughput"] * x["itl_ms"] / 1000 / x["tokens_per_step"]


def verdict(diffs: list[float]) -> tuple[float, float, float, str]:
    lo, hi = interval(diffs)
    inside = "within" if -TARGET <= lo and hi <= TARGET else "NOT within"
    return statistics.fmean(diffs), lo, hi, inside


def point(c: int, n: int, k: list[dict], v: list[dict], other: str) -> tuple[str, str]:
    """The table row of one point and its verdict."""
    pairs = list(zip(k, v, strict=True))
    raw = verdict([pct(x["throughput"], y["throughput"]) for x, y in pairs])
    adj = verdict([pct(streams(x), streams(y)) for x, y in pairs])
    row = (f"{c:4d}  {n:8d}  {med(k, 'throughput'):10.1f}  {med(v, 'throughput'):10.1f}  "
           f"{raw[0]:+6.2f} [{raw[1]:+.2f}, {raw[2]:+.2f}]  "
           f"{adj[0]:+6.2f} [{adj[1]:+.2f}, {adj[2]:+.2f}]  "
           f"{med(k, 'itl_ms'):5.2f}/{med(v, 'itl_ms'):5.2f}  "
           f"{med(k, 'tokens_per_step'):4.2f}/{med(v, 'tokens_per_step'):4.2f}  "
           f"{med(k, 'idle_ms'):5.1f}/{med(v, 'idle_ms'):5.1f}  "
           f"{sum(x['failed'] for x in k)}/{sum(x['failed'] for x in v)}\n"
           f"      runs: knee {runs(k)}; {other} {runs(v)}")
    return row, (f"c={c}: throughput {raw[3]} {TARGET:g} % ({raw[0]:+.2f} %, 95 % interval "
                 f"{raw[1]:+.2f} .. {raw[2]:+.2f}); streams kept decoding {adj[3]} {TARGET:g} % "
                 f"({adj[0]:+.2f} %, {adj[1]:+.2f} .. {adj[2]:+.2f})")


def engine_of(rt: dict) -> tuple[str, dict]:
    """The config's engine environment: its Python and the variables it runs with (a GPU
    host's, with the GPUs it may use), or the embedded engine's."""
    engine = rt.get("engine")
    python = places.engine_python(engine) if engine else EMBEDDED_PYTHON
    env = dict((engine or {}).get("env", {}))
    if gpu.ids(rt):
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, gpu.ids(rt)))
    return str(ROOT / python) if not Path(python).is_absolute() else python, env


def engine_for(arm: dict, rt: dict, model: dict, python: str, engine_env: dict, work: Path,
               cpus: list[int] | None) -> Engine:
    """The arm's server on a free local port, with the prefix cache off: the same texts go to
    both clients, so neither may be served from the other's prefix cache."""
    port = endpoint.free_port("127.0.0.1")
    arm = {**arm, "args": {**arm.get("args", {}), "enable-prefix-caching": False,
                           "no-enable-prefix-caching": True}}
    return Engine(argv=server_argv(python, arm, str(ROOT / model["path"]),
                                   model["name"], "127.0.0.1", port),
                  env={**engine_env, **arm.get("env", {}),
                       "VLLM_CACHE_ROOT": str(ROOT / rt["cache_dir"])},
                  log=work / "engine.log", host="127.0.0.1", port=port, cpus=cpus)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=str(ROOT / "config" / "config.yaml"))
    ap.add_argument("--arm", default="control")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--requests-per-stream", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=12, help="runs per client per point")
    ap.add_argument("--versus", choices=("vllm", "knee"), default="vllm",
                    help="the other client; `knee` is the A/A calibration: knee against itself "
                         "under the same protocol shows how large a difference noise alone makes")
    return ap.parse_args()


def main() -> int:
    a = parse_args()
    plan = config.make_plan(config.load(a.config), a.config)
    arm, rt, model = plan["arms"][a.arm], plan["runtime"], plan["model"]
    sweep = plan["instruments"]["sweep"]
    sampling = prompts.sampling_params(sweep["output_tokens"])
    python, engine_env = engine_of(rt)
    engine_cpus, client_cpus = split_cpus(rt.get("engine_cpus"))
    if client_cpus:
        os.sched_setaffinity(0, client_cpus)  # vLLM's client inherits it
    work = Path(tempfile.mkdtemp(prefix="knee-agreement-"))
    engine = engine_for(arm, rt, model, python, engine_env, work, engine_cpus)
    vllm = (VllmClient(work / "vllm-client.log", python, engine_env) if a.versus == "vllm"
            else None)
    try:
        engine.start()
        print(f"engine ({a.arm} arm) healthy after {engine.wait_healthy(900):.1f} s; "
              f"prompts of {sweep['prompt_tokens']} tokens, {sweep['output_tokens']} out")
        tokenize = endpoint.tokenizer(engine.base_url, model["name"])
        other = "vllm" if a.versus == "vllm" else "knee-again"
        print(f"conc  requests  knee tok/s  {other} tok/s  throughput knee-{other} % mean "
              f"[95 %]  streams decoding %  server itl ms  tok/step  idle ms/req  failed   "
              f"(pairs: knee/{other})", flush=True)
        spec = bool(arm.get("speculative_config"))

        def first(c: int, texts: list[str]) -> dict:
            return with_server_view(engine, spec, knee_run, model, texts, c, sampling)

        def second(c: int, texts: list[str]) -> dict:
            if vllm is None:
                return first(c, texts)
            return with_server_view(engine, spec, vllm_run, vllm, model, datasets[c],
                                    len(texts), c, sampling, work)

        verdicts, datasets = [], {}
        for c in a.concurrency:
            n = max(sweep["min_requests"], a.requests_per_stream * c)
            texts = prompts.exact_token_prompts(tokenize, 1, f"agreement c{c}", n,
                                                sweep["prompt_tokens"])
            datasets[c] = vllm_dataset(texts, c, work)
            # the first batch of a new size is slower (the engine warms to the shape)
            first(c, texts)
            second(c, texts)
            k, v = [], []
            for i in range(a.repeats):
                for who, run in ([(k, first), (v, second)] if i % 2 == 0 else
                                 [(v, second), (k, first)]):
                    who.append(run(c, texts))
            row, verdict = point(c, n, k, v, other)
            print(row, flush=True)
            verdicts.append(verdict)
            engine.check_alive(f"agreement point c={c}")
        print("\n".join(verdicts))
    finally:
        if vllm is not None:
            vllm.close()
        engine.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
