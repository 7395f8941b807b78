"""Prometheus scrape analysis: parse with prometheus_client, diff after - before, spec-decode.

Pure functions: text in, numbers out. A zero or negative delta over a window that carried
traffic is an error naming the window, never a zero in a table.
"""

from __future__ import annotations

from collections import defaultdict

from prometheus_client.parser import text_string_to_metric_families

from knee.jsonio import KneeError

DRAFTS = "vllm:spec_decode_num_drafts_total"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
GENERATION = "vllm:generation_tokens_total"
PROMPT = "vllm:prompt_tokens_total"
SPEC = (DRAFTS, DRAFT_TOKENS, ACCEPTED)


def parse(text: str) -> dict[str, dict[tuple, float]]:
    """Samples by exact name; `_created` samples dropped; labels other than engine kept."""
    out: dict[str, dict[tuple, float]] = defaultdict(dict)
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name.endswith("_created"):
                continue
            out[s.name][tuple(sorted(s.labels.items()))] = s.value
    return dict(out)


def total(samples: dict, name: str, by: str | None = None) -> float | dict[str, float] | None:
    """Sum a series over the engine label (and every label but `by`, if given)."""
    if name not in samples:
        return None
    if by is None:
        return sum(samples[name].values())
    grouped: dict[str, float] = defaultdict(float)
    for labels, value in samples[name].items():
        grouped[dict(labels).get(by, "")] += value
    return dict(grouped)


def window_deltas(before_text: str, after_text: str, window: str, requests: int,
                  speculation: bool) -> dict:
    """Counter deltas over one instrument window, checked."""
    before, after = parse(before_text), parse(after_text)
    out: dict = {"window": window, "requests": requests}
    names = [GENERATION, PROMPT] + (list(SPEC) if speculation else [])
    for name in names:
        b, a = total(before, name), total(after, name)
        if a is None or b is None:
            raise KneeError(f"{window}: series {name} missing from the "
                            f"{'after' if a is None else 'before'} scrape")
        delta = a - b
        if delta < 0:
            raise KneeError(f"{window}: {name} went down ({b} -> {a}): the engine restarted "
                            "inside the window")
        if delta == 0 and requests > 0:
            raise KneeError(f"{window}: {name} did not move over a window of {requests} "
                            "requests: the scrapes do not bracket the traffic")
        out[name.removeprefix("vllm:").removesuffix("_total")] = delta
    if speculation:
        b, a = total(before, PER_POS, "position"), total(after, PER_POS, "position") or {}
        b = b or {}
        out["spec_decode_num_accepted_tokens_per_pos"] = [
            a[p] - b.get(p, 0.0) for p in sorted(a, key=int)]
        out.update(spec_summary(out))
    return out


def spec_summary(d: dict) -> dict:
    drafts = d["spec_decode_num_drafts"]
    draft_tokens = d["spec_decode_num_draft_tokens"]
    accepted = d["spec_decode_num_accepted_tokens"]
    per_pos = d.get("spec_decode_num_accepted_tokens_per_pos", [])
    return {
        "acceptance_rate": accepted / draft_tokens,
        "mean_acceptance_length": 1 + accepted / drafts,
        "per_position_rate": [x / drafts for x in per_pos],
    }
