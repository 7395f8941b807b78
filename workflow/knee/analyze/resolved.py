"""What the engine says it resolved, read from its own log when it is up: the arguments it ran
with beyond its defaults (vLLM's "non-default args: {...}") and every setting it changed on its
own ("Overriding cudagraph_mode from FULL_AND_PIECEWISE to PIECEWISE", "... will be disabled",
"falling back to ..."). The comparison reports each difference between the arms beyond the
declared variable: one variable as the engine runs it, not only as the config says.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from knee.analyze.folder import Sessions, paired_requests
from knee.core.records.engine import EngineDifference, EngineResolved
from knee.plan import secrets

# vLLM's log prefix: "(APIServer pid=1) INFO 12-01 10:00:00 [file.py:12] " (the process tag
# optional, the timestamp's form varies)
PREFIX = re.compile(r"^(?:\(\S+ pid=\d+\)\s*)?(?:INFO|WARNING|DEBUG|ERROR)\s+[^\[]*\[[^\]]*\]\s*")
ARGS = "non-default args: "
CHANGES = re.compile(r"[Oo]verriding \S+|\bwill be disabled\b|\bfalling back to\b|"
                     r"\b[Dd]isabling \S+|\bis not supported\b.*\bdisabl")
# what differs from boot to boot of one config: the port and addresses knee picks
PER_BOOT = ("port", "host", "model", "served_model_name")
MAX_CHANGES = 50


def message(line: str) -> str:
    return PREFIX.sub("", line.strip())


def read(log_text: str) -> EngineResolved:
    """{non_default_args: {...} or None, changes: [message, ...]} from an engine log."""
    args = None
    changes: list[str] = []
    for line in log_text.splitlines():
        text = message(line)
        if text.startswith(ARGS) and args is None:
            try:
                parsed = ast.literal_eval(text[len(ARGS):])
                args = parsed if isinstance(parsed, dict) else None
            except (ValueError, SyntaxError):
                args = {"unparsed": text[len(ARGS):][:2000]}
        elif CHANGES.search(text) and text not in changes and len(changes) < MAX_CHANGES:
            changes.append(text[:500])
    return {"non_default_args": plain(args), "changes": [secrets.redact_value(c)
                                                          for c in changes]}


def plain(value: object, key: str = "") -> Any:
    """A literal as JSON data (tuples as lists, other keys as text), passed through the
    receipts' redaction: an argument whose name says it is a credential (api_key, hf_token)
    and any value that looks like one are never recorded."""
    if isinstance(value, dict):
        return {str(k): plain(v, str(k)) for k, v in value.items()}
    if key and secrets.secret_name(key) and value not in (None, [], ""):
        return secrets.REDACTED
    if isinstance(value, (list, tuple, set)):
        return [plain(v) for v in value]
    if isinstance(value, str):
        return secrets.redact_value(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return secrets.redact_value(repr(value))


def variable_keys(variable: str | list[str] | None) -> set[str]:
    """The engine argument names a declared variable touches (server.X or arms' X.Y -> X)."""
    names = [variable] if isinstance(variable, str) else list(variable or [])
    keys = set()
    for name in names:
        parts = name.split(".")
        head = parts[1] if parts[0] in ("args", "env") and len(parts) > 1 else parts[0]
        keys |= {head, head.replace("-", "_")}
    return keys


def differences(variable: str | list[str] | None,
                boots: Sequence[Mapping[str, Any]]) -> list[EngineDifference]:
    """Every engine-side difference between the arms beyond the variable, over all boots:
    a change the engine made in one arm's boots only, or a non-default argument the arms
    ran with differently. Boots without what the engine resolved (older runs) are skipped."""
    by_arm: dict[str, list[EngineResolved]] = {"control": [], "candidate": []}
    for boot in boots:
        if boot.get("engine_resolved"):
            by_arm[boot["arm"]].append(boot["engine_resolved"])
    if not by_arm["control"] or not by_arm["candidate"]:
        return []
    out: list[EngineDifference] = []
    seen = {arm: {c for r in got for c in r["changes"]} for arm, got in by_arm.items()}
    for change in sorted(seen["control"] ^ seen["candidate"]):
        arm = "control" if change in seen["control"] else "candidate"
        out.append({"kind": "engine change", "arms": [arm], "what": change})
    skip = variable_keys(variable) | set(PER_BOOT)
    args = {arm: [r.get("non_default_args") or {} for r in got] for arm, got in by_arm.items()}
    keys = sorted({k for got in args.values() for a in got for k in a} - skip)
    for key in keys:
        values = {arm: sorted({repr(a.get(key)) for a in got}) for arm, got in args.items()}
        if values["control"] != values["candidate"]:
            out.append({"kind": "engine argument", "arms": ["control", "candidate"],
                        "what": f"{key}: control {', '.join(values['control'])}, candidate "
                                f"{', '.join(values['candidate'])}",
                        "setting": f"{key} from {_word(values['control'])} to "
                                   f"{_word(values['candidate'])}"})
    return out



def _word(values: list[str]) -> str:
    """An arm's values of a setting as one word (NAME from A to B: A and B hold no blank)."""
    return ",".join(values).replace(" ", "")


# where requests may end at end-of-sequence (instruments.stop_at_eos), the candidate's requests
# may be longer or shorter than the control's same requests by at most this much on average,
# or by at most LENGTH_Z standard errors of that mean
LENGTH_PCT = 5.0
LENGTH_Z = 3.0


def length_differences(sessions: Sessions) -> list[EngineDifference]:
    """sessions[(pair, arm)] = {"raw": {instrument: raw}}. Each point whose requests may end at
    end-of-sequence and whose arms generated different lengths for the same requests (each
    request of the candidate against the control's same request in its pair: the mean
    difference beyond LENGTH_PCT % of the control's mean and LENGTH_Z standard errors): a
    throughput then compares different work, a difference the engine made on its own."""
    out: list[EngineDifference] = []
    for inst, point, control, candidate, same in paired_requests(sessions, lambda p, r: (
            not p.get("profile", {}).get("ignore_eos", True)
            and not r["warmup"] and not r["error"])):
        a = [control[k]["output_tokens"] for k in same]
        d = [candidate[k]["output_tokens"] - control[k]["output_tokens"] for k in same]
        if _apart(sum(a) / len(a), d):
            out.append({"kind": "output length", "arms": ["control", "candidate"],
                        "what": f"{inst} point {point}: mean output {sum(a) / len(a):.1f} tokens "
                                f"(control) against {sum(a) / len(a) + _mean(d):.1f} (candidate), "
                                f"over the same {len(same)} requests"})
    return out


def _mean(xs: list[int]) -> float:
    return sum(xs) / len(xs)


def _apart(control_mean: float, d: list[int]) -> bool:
    m = _mean(d)
    if abs(m) <= LENGTH_PCT / 100 * control_mean:
        return False
    var = math.fsum((x - m) ** 2 for x in d) / (len(d) - 1) if len(d) > 1 else 0.0
    return var == 0 or abs(m) / (var / len(d)) ** 0.5 > LENGTH_Z
