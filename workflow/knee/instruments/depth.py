"""Depth instrument: one prompt per depth, prefilled for real, decode timed first to last token.

Each prompt is exactly `depth` tokens of the model's own tokenizer (the server's /tokenize),
sent as token ids, with a unique head so no depth can be served from another's prefix cache.
The prefix-cache counters are scraped around every request: a hit would time a re-prefill or
skip one (the seed's broken first instrument), so it is refused, not measured.
"""

from __future__ import annotations

from knee import client, prom, prompts
from knee.errors import KneeError
from knee.runtime import endpoint

HITS = "vllm:prefix_cache_hits_total"
QUERIES = "vllm:prefix_cache_queries_total"


def depth_prompt(tokenize, seed: int, depth: int) -> list[int]:
    """Exactly `depth` token ids of deterministic words (identical across arms)."""
    words = depth
    while True:
        ids = tokenize(prompts.word_prompts(seed, f"depth {depth}", 1, words)[0])
        if len(ids) >= depth:
            return ids[:depth]
        words *= 2


def counters(base_url: str) -> tuple[float, float]:
    samples = prom.parse(endpoint.scrape(base_url), "prefix-cache scrape")
    return prom.total(samples, HITS) or 0.0, prom.total(samples, QUERIES) or 0.0


def run(engine, cfg: dict, seed: int, model: dict, timeout_s: float) -> dict:
    sampling = prompts.sampling_params(cfg["output_tokens"])
    out = {"instrument": "depth", "points": [], "warmup": None}
    tokenize = endpoint.tokenizer(engine.base_url, model["name"], engine.check_alive)
    for depth in cfg["depths"]:
        ids = depth_prompt(tokenize, seed, depth)
        hits0, queries0 = counters(engine.base_url)
        result = client.run(engine.base_url, model["name"], [ids], sampling, 1, timeout_s)
        hits1, queries1 = counters(engine.base_url)
        engine.check_alive(f"depth {depth}")
        rec = result["records"][0]
        if rec["error"]:
            raise KneeError(f"depth {depth}: the request failed: {rec['error']}")
        if rec["prompt_tokens"] != depth:
            raise KneeError(f"depth {depth}: the server counted {rec['prompt_tokens']} prompt "
                            f"tokens, not {depth}")
        if hits1 - hits0 > 0:
            raise KneeError(
                f"depth {depth}: the prefix cache served {hits1 - hits0:g} of "
                f"{queries1 - queries0:g} prompt tokens, so the decode would not follow a real "
                "prefill at this depth; refusing to time it (use unique prompts or "
                "--no-enable-prefix-caching)")
        out["points"].append(prompts.point_record(
            result, point=depth,
            extra={"prefix_cache": {"hits": hits1 - hits0, "queries": queries1 - queries0}},
            instrument="depth", prompts=[ids], sampling=sampling, model=model, seed=seed,
            prompt_spec=f"{depth} token ids of random words, unique head"))
    return out
