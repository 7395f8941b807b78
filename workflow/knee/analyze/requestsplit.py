"""Single-stream noise, request by request: where both arms of a pair sent the same requests
for the same work, how much of the pairs' spread the requests' own noise explains, and how
much is a per-boot offset (the boot part) that no number of requests removes.

Each request the two arms of a pair both sent (same point, same run, same index) for the same
work gives one log ratio of its decode rates (candidate / control). Their mean per pair is the
paired figure's effect (decode_rate_gmean, knee.analyze.armfigures); the pooled within-pair SD
of the log ratios, over √(requests a pair), predicts how far the pairs' means spread if
nothing but the requests varied; the pairs' measured spread beyond that is the boot part,
√(measured² − predicted²). comparison.json holds it (request_split), an A/A's README says
which lever narrows the pairs, and `knee design --pilot` plans from it
(knee.analyze.adjust.pilot).
"""

from __future__ import annotations

import math
import statistics
from typing import TypedDict

from knee import instruments
from knee.analyze.folder import Sessions, paired_requests
from knee.analyze.stats import decode_rate
from knee.core.records import RawWindow, RequestRecord
from knee.core.records.verdict import RequestSplit


class RequestSplitSection(TypedDict, total=False):
    """comparison.json's request_split (no key under two pairs of the same work)."""

    request_split: RequestSplit


def same_work(a: RequestRecord, b: RequestRecord) -> bool:
    """The same tokens, by their sha256; where neither record holds one (a folder measured
    before tokens were recorded), the same number of tokens cut at max_tokens."""
    if a.get("output_sha256") or b.get("output_sha256"):
        return a.get("output_sha256") == b.get("output_sha256")
    return (a["finish_reason"] == b["finish_reason"] == "length"
            and a["output_tokens"] == b["output_tokens"])


def _kept(window: RawWindow, rec: RequestRecord) -> bool:
    return not rec["warmup"] and not rec["error"]


def log_ratios(sessions: Sessions) -> dict[int, list[float]]:
    """Per pair: the log ratio (candidate / control) of the decode rate of each single-stream
    request both arms sent for the same work, over every class."""
    single = instruments.role(instruments.SINGLE_STREAM)
    # only the single-stream instrument's records are paired: another's need not be requests
    only: Sessions = {k: {**s, "raw": {single: s["raw"][single]}}
                      for k, s in sessions.items() if single in s["raw"]}
    out: dict[int, list[float]] = {}
    for _inst, _point, control, candidate, keys in paired_requests(only, _kept):
        for key in keys:
            a, b = control[key], candidate[key]
            ra, rb = decode_rate(a), decode_rate(b)
            if ra and rb and same_work(a, b):
                out.setdefault(int(key[0]), []).append(math.log(rb / ra))
    return out


def request_seconds(sessions: Sessions) -> float | None:
    """The mean time a single-stream request took, send to done, over both arms."""
    single = instruments.role(instruments.SINGLE_STREAM)
    took = [r["t_done"] - r["t_send"] for s in sessions.values()
            for w in (s["raw"].get(single) or {"points": []})["points"]
            for r in w["records"] if _kept(w, r)]
    return statistics.fmean(took) if took else None


def split(per_pair: dict[int, list[float]]) -> RequestSplit | None:
    """The split of the pairs' spread; None under two pairs, or where no pair has two."""
    groups = [v for v in per_pair.values() if v]
    total = sum(len(v) for v in groups)
    if len(groups) < 2 or total <= len(groups):
        return None
    means = [statistics.fmean(v) for v in groups]
    within = math.fsum((x - m) ** 2 for v, m in zip(groups, means, strict=True) for x in v)
    df = total - len(groups)
    n = total / len(groups)
    request_sd = 100 * math.sqrt(within / df)
    predicted = request_sd / math.sqrt(n)
    measured = 100 * statistics.stdev(means)
    return {"pairs": len(groups), "requests": n, "request_sd": request_sd, "request_df": df,
            "predicted": predicted, "measured": measured,
            "boot": math.sqrt(max(measured ** 2 - predicted ** 2, 0.0))}


def section(sessions: Sessions) -> RequestSplitSection:
    """comparison.json's request_split, where two pairs or more sent requests of the same work."""
    found = split(log_ratios(sessions))
    return {"request_split": found} if found else {}
