"""A boot's sampling check: does the engine sample what knee asks, at every temperature above 0
an instrument uses, with speculation as the arm configures it? Seeded requests ask for each
sampled token's log-probability and the 20 most likely tokens', with the config's top_k and
top_p; the first is sent twice. Each boot draws with seeds of its own. The
judgment (knee.analyze.sampling.judge) goes into the boot receipt with the records it rests
on, and the analysis withholds every figure sampled at a temperature that failed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import httpx

from knee.analyze import sampling
from knee.analyze.temperature import NO_CUT, Cut
from knee.core.errors import KneeError
from knee.core.records import Section
from knee.core.records.sampling import SampledRequest, SamplingCheck

# half the prompts continue what came before, so that a drafter proposes often and the tokens at
# draft positions, where a sampler under speculation can go wrong, are many; half are open
# prose, whose many likely next tokens measure the temperature (low-entropy positions carry
# little information about it)
REPEATING = (
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
    "SELECT name, total FROM orders WHERE total > 100;\nSELECT name, total FROM refunds WHERE "
    "total > 100;\nSELECT name,",
    "- [ ] buy milk\n- [ ] buy bread\n- [ ] buy eggs\n- [ ] buy",
    "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef",
    "Monday: rain. Tuesday: rain. Wednesday: sun. Thursday: rain. Friday:",
)
OPEN = (
    "Write a short story about a city that wakes up one morning to find",
    "Here are some ideas for a rainy weekend at home:",
    "My grandmother always said that the secret to a good life was",
    "The committee met on Tuesday and discussed, among other things,",
    "Q: What is your favourite season, and why?\nA:",
    "Some words that come to mind when I think of the sea:",
    "Dear Sam, it has been a long time since I last wrote. So much has happened:",
    "The museum's newest exhibition brings together",
)
PROMPTS = REPEATING + OPEN
OUTPUT_TOKENS = 64
TOP = 20  # vLLM's default max-logprobs
RESPONSE_BYTES = 4 << 20


def post(base_url: str, body: Section, timeout_s: float) -> Section:
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
    answer: Section = json.loads(data)
    return answer


def boot_seed(seed: int, session: str) -> int:
    """The check's first seed in this session: instruments.seed and the session id hashed, so
    that every boot draws anew (a fixed seed repeats one draw in every boot)."""
    return int.from_bytes(hashlib.sha256(f"{seed}/{session}".encode()).digest()[:4], "big") >> 1


def sample(base_url: str, model: str, prompt: str, temperature: float, seed: int,
           timeout_s: float, cut: Cut = NO_CUT) -> SampledRequest:
    # tokens named by id ("token_id:N"): by text, tokens that decode alike share one key and
    # the 20 likeliest come back fewer, which no judgment can read
    body = {"model": model, "prompt": prompt, "max_tokens": OUTPUT_TOKENS, "seed": seed,
            "temperature": temperature, "top_p": cut.top_p, "logprobs": TOP,
            "return_tokens_as_token_ids": True} | ({"top_k": cut.top_k} if cut.top_k > 0 else {})
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


def logprobs_mode(args: Mapping[str, Any]) -> str:
    """The log-probabilities the engine returns, as the arm's server arguments set them (vLLM's
    --logprobs-mode; its default gives the model's raw ones)."""
    return str(args.get("logprobs-mode", args.get("logprobs_mode", sampling.RAW)))


def cut_at(sampling: Mapping[str, Any] | None, temperature: float) -> Cut:
    """The top_k and top_p the instruments sample with at this temperature (instruments.sampling's
    where its temperature is this one; none elsewhere)."""
    shared = sampling or {}
    if float(shared.get("temperature", 0.0)) != temperature:
        return Cut()
    return Cut(int(shared.get("top_k", -1)), float(shared.get("top_p", 1.0)))


def check(base_url: str, model: str, temperatures: list[float], seed: int,
          timeout_s: float = 600.0, sampling_config: Mapping[str, Any] | None = None,
          logprobs_mode: str = sampling.RAW) -> list[SamplingCheck]:
    """Every temperature's verdict with the records it rests on. seed: this boot's first
    (boot_seed); sampling_config: instruments.sampling, whose top_k and top_p are checked."""
    out: list[SamplingCheck] = []
    for t in temperatures:
        cut = cut_at(sampling_config, t)
        try:
            records = [sample(base_url, model, p, t, seed + i, timeout_s, cut)
                       for i, p in enumerate(PROMPTS)]
            records[0]["repeat_text"] = sample(base_url, model, PROMPTS[0], t, seed,
                                               timeout_s, cut)["text"]
        except (KneeError, KeyError, TypeError, ValueError, httpx.HTTPError) as e:
            out.append({"temperature": t, "top_k": cut.top_k, "top_p": cut.top_p,
                        "passed": False, "records": [],
                        "why": f"the engine did not answer a seeded request with log-"
                               f"probabilities at temperature {t:g} ({type(e).__name__}: "
                               f"{str(e)[:300]})"})
            continue
        out.append({**sampling.judge(t, records, cut, logprobs_mode), "records": records})
    return out
