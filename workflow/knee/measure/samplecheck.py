"""A boot's sampling check: does the engine sample what knee asks, at every temperature above 0
an instrument uses, with speculation as the arm configures it? Seeded requests ask for each
sampled token's log-probability and the 20 most likely tokens'; the first is sent twice. The
judgment (knee.analyze.sampling.judge) goes into the boot receipt with the records it rests
on, and the analysis withholds every figure sampled at a temperature that failed.
"""

from __future__ import annotations

import json

import httpx

from knee.analyze import sampling
from knee.core.errors import KneeError

# prompts whose continuations repeat what came before, so that a drafter proposes at most steps
# and the tokens at draft positions, where a sampler under speculation can go wrong, dominate
PROMPTS = (
    'Call the weather tool for each city and answer in JSON.\n'
    '{"tool": "get_weather", "arguments": {"city": "Lisbon", "unit": "celsius"}}\n'
    '{"tool": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius"}}\n'
    '{"tool": "get_weather", "arguments": {"city":',
    "for i in range(10):\n    print(i, i * i)\nfor j in range(10):\n    print(j, j * j)\n"
    "for k in range(10):\n",
    "ls -la /var/log | sort -k5 -n | tail -n 10\nls -la /var/tmp | sort -k5 -n | tail -n 10\n"
    "ls -la",
    "The old lighthouse keeper walked down to the harbour every morning, and every morning "
    "the harbour was quiet. The old lighthouse keeper",
)
OUTPUT_TOKENS = 48
TOP = 20  # vLLM's default max-logprobs
RESPONSE_BYTES = 4 << 20


def post(base_url: str, body: dict, timeout_s: float) -> dict:
    """One non-streamed completion, its response read up to RESPONSE_BYTES."""
    with httpx.Client(timeout=timeout_s) as http, \
            http.stream("POST", f"{base_url}/v1/completions", json=body) as r:
        data = b""
        for chunk in r.iter_bytes():
            data += chunk
            if len(data) > RESPONSE_BYTES:
                raise KneeError(f"sampling check: {base_url} answered more than "
                                f"{RESPONSE_BYTES} bytes for one {OUTPUT_TOKENS}-token request")
        if r.status_code != 200:
            raise KneeError(f"sampling check: {base_url}/v1/completions answered "
                            f"{r.status_code}: {data[:300]!r}")
    return json.loads(data)


def sample(base_url: str, model: str, prompt: str, temperature: float, seed: int,
           timeout_s: float) -> dict:
    # tokens named by id ("token_id:N"): by text, tokens that decode alike share one key and
    # the 20 likeliest come back fewer, which no judgment can read
    body = {"model": model, "prompt": prompt, "max_tokens": OUTPUT_TOKENS, "seed": seed,
            "temperature": temperature, "top_p": 1.0, "logprobs": TOP,
            "return_tokens_as_token_ids": True}
    choice = post(base_url, body, timeout_s)["choices"][0]
    lp = choice["logprobs"]
    tops, hits = [], []
    for token, top in zip(lp["tokens"], lp["top_logprobs"], strict=True):
        # vLLM adds the sampled token to the TOP asked for when it is not among them
        hit = len(top) <= TOP
        tops.append(sorted((v for k, v in top.items() if hit or k != token), reverse=True)[:TOP])
        hits.append(hit)
    return {"seed": seed, "text": choice["text"], "tokens": lp["tokens"],
            "token_logprobs": lp["token_logprobs"], "top_logprobs": tops, "in_top": hits}


def check(base_url: str, model: str, temperatures: list[float], seed: int,
          timeout_s: float = 600.0) -> list[dict]:
    """Every temperature's verdict with the records it rests on."""
    out = []
    for t in temperatures:
        try:
            records = [sample(base_url, model, p, t, seed + i, timeout_s)
                       for i, p in enumerate(PROMPTS)]
            records[0]["repeat_text"] = sample(base_url, model, PROMPTS[0], t, seed,
                                               timeout_s)["text"]
        except (KneeError, KeyError, TypeError, ValueError, httpx.HTTPError) as e:
            out.append({"temperature": t, "passed": False, "records": [],
                        "why": f"the engine did not answer a seeded request with log-"
                               f"probabilities at temperature {t:g} ({type(e).__name__}: "
                               f"{str(e)[:300]})"})
            continue
        out.append({**sampling.judge(t, records), "records": records})
    return out
