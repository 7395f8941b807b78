"""Capture a real scrape pair from the embedded engine around a few requests.

    python tests/data/capture_scrapes.py --out tests/data/spec-off [--spec JSON] [--sampling JSON]
        [--repeat WORD]

Boots resources/engine-venv's vLLM on the generated tiny model, scrapes /metrics, sends
requests, scrapes again, stops the engine. The committed pairs in tests/data were made so.
"""

import argparse
import json
import tempfile
from pathlib import Path

from knee.core import prompts
from knee.measure import client
from knee.measure.runtime import endpoint
from knee.measure.runtime.process import Engine
from knee.plan.arms import server_argv

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--spec", type=json.loads, default=None)
    ap.add_argument("--sampling", type=json.loads, default=None,
                    help='e.g. {"temperature": 0.8}: seeded sampling instead of greedy')
    ap.add_argument("--repeat", help="prompts of this word over and over (a drafter's n-grams "
                    "match their tail, so it proposes), instead of random words")
    ap.add_argument("--model", default="resources/models/tiny-llama-s0-l4-h256")
    a = ap.parse_args()
    port = endpoint.free_port("127.0.0.1")
    arm = {"args": {"dtype": "float32", "max-model-len": 2048, "seed": 0},
           "speculative_config": a.spec}
    argv = server_argv(str(ROOT / "resources/engine-venv/bin/python"), arm, a.model, "tiny",
                       "127.0.0.1", port)
    log = Path(tempfile.mkdtemp()) / "engine.log"
    engine = Engine(argv=argv, env={"VLLM_CPU_KVCACHE_SPACE": "1",
                                    "VLLM_CACHE_ROOT": str(ROOT / "resources/vllm-cache")},
                    log=log, host="127.0.0.1", port=port)
    try:
        engine.start()
        engine.wait_healthy(600)
        before = endpoint.scrape(engine.metrics_url)
        ps = [f"{i} " + " ".join([a.repeat] * 47) for i in range(4)] if a.repeat \
            else prompts.word_prompts(0, "capture", 4, 48)
        client.run(engine.base_url, "tiny", ps, prompts.sampling_params(32, a.sampling), 2, 120)
        after = endpoint.scrape(engine.metrics_url)
    finally:
        engine.stop()
    Path(f"{a.out}.prom.before").write_text(before)
    Path(f"{a.out}.prom.after").write_text(after)


if __name__ == "__main__":
    main()
