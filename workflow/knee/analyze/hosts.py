"""A folder measured on several hosts, one GPU lease after another (pure).

Each boot receipt names its host (`hardware.boot_id`). Where the sessions ran on more than one,
the bar says which pairs each host measured and, per rule, how far the pairs' effects spread on
each host, as measured and adjusted. A pair whose two sessions ran on different hosts (a lease
lost between them) carries the hosts' difference in its effect as well as the arms': the bar is
still judged on every pair, as registered, and each rule is judged again without such pairs
beside it, deciding nothing, to show whether its verdict rests on them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import stdev
from typing import Any

from knee.analyze import inference
from knee.analyze.adjust import covariate
from knee.core.records import BarRule
from knee.core.records.verdict import HostRule, HostSpread, HostsSection


def pair_hosts(boots: Sequence[Mapping[str, Any]]) -> dict[int, list[str]]:
    """Each pair's hosts (boot ids), in the order the sessions ran; {} where a receipt has no
    boot id (an older folder, or a host that does not say)."""
    out: dict[int, list[str]] = {}
    for b in sorted(boots, key=lambda b: b.get("started_at") or ""):
        host = (b.get("hardware") or {}).get("boot_id")
        if not host:
            return {}
        seen = out.setdefault(int(b["pair"]), [])
        if host not in seen:
            seen.append(host)
    return dict(sorted(out.items()))


def kind(hardware: Mapping[str, Any]) -> dict[str, Any]:
    """What two hosts must share for their sessions to be one experiment's, from a boot
    receipt's `hardware`: the CPU model and count, and the GPUs' models (NVML's names of the
    runtime's GPUs, else nvidia-smi's); None where the receipt does not say."""
    names = [g.get("name") for g in hardware.get("nvml") or []] or \
        [str(g).split(",")[0].strip() for g in hardware.get("gpus") or []]
    return {"CPU model": hardware.get("cpu_model") or None, "CPU count": hardware.get("cpus"),
            "GPU": ", ".join(map(str, names)) or None}


def kind_text(host: Mapping[str, Any]) -> str:
    """A kind of host in words: 'NVIDIA H200, 16 CPUs (Intel(R) Xeon(R) Processor)'; '' where
    its receipt says nothing of it."""
    cpu = f"{host['CPU count']} CPUs" if host["CPU count"] else ""
    if host["CPU model"]:
        cpu = f"{cpu or 'CPUs'} ({host['CPU model']})"
    return ", ".join(part for part in (host["GPU"], cpu) if part)


def section(rules: Sequence[BarRule], judged: Sequence[Mapping[str, Any]],
            boots: Sequence[Mapping[str, Any]], comparison: Mapping[str, Any],
            alpha: float) -> HostsSection | None:
    """The bar's `hosts` section, or None where every session ran on one host."""
    by_pair = pair_hosts(boots)
    hosts: list[str] = []
    for seen in by_pair.values():
        hosts += [h for h in seen if h not in hosts]
    if len(hosts) < 2:
        return None
    split = [p for p, seen in by_pair.items() if len(seen) > 1]
    return {
        "hosts": [{"boot_id": h, "pairs": [p for p, seen in by_pair.items() if seen == [h]]}
                  for h in hosts],
        "split_pairs": [{"pair": p, "hosts": by_pair[p]} for p in split],
        "rules": [judge_rule(rule, verdict, comparison, by_pair, hosts, split, alpha)
                  for rule, verdict in zip(rules, judged, strict=True)
                  if verdict.get("per_pair") and verdict.get("estimate") is not None]}


def judge_rule(rule: BarRule, verdict: Mapping[str, Any],
               comparison: Mapping[str, Any], by_pair: Mapping[int, list[str]],
               hosts: list[str], split: list[int], alpha: float) -> HostRule:
    """One rule: each host's spread of the per-pair effect and, where a pair is split across
    hosts, the rule judged without it (on the effect the verdict used)."""
    pairs = [p["pair"] for p in verdict["per_pair"]]
    measured, used = covariate.used_effects(rule, verdict, comparison)
    adjustment = verdict.get("adjustment") or {}
    out: HostRule = {"rule": verdict["rule"], "adjusted": bool(adjustment.get("applied")),
                     "per_host": [spread(h, pairs, by_pair, measured, used) for h in hosts]}
    if split:
        kept = [e for p, e in zip(pairs, used, strict=True) if p not in split]
        eff = inference.effect(kept)
        level = 1 - 2 * alpha
        bounds = eff.bounds(level) if eff else None
        out["without_split_pairs"] = {
            "pairs": len(kept), "verdict": inference.decide(rule, bounds) if eff else
            "INCONCLUSIVE", "estimate": inference.to_pct(eff.mean) if eff else None,
            "interval": eff.interval_pct(level) if eff else None}
    return out


def spread(host: str, pairs: list[int], by_pair: Mapping[int, list[str]],
           measured: list[float], used: list[float]) -> HostSpread:
    """The SD over one host's own pairs of the per-pair effect (log ratio, as a %), as
    measured and as the verdict used it; None with fewer than two pairs."""
    mine = [i for i, p in enumerate(pairs) if by_pair.get(p) == [host]]

    def sd(values: list[float]) -> float | None:
        picked = [values[i] for i in mine]
        return 100 * stdev(picked) if len(picked) > 1 else None

    return {"boot_id": host, "pairs": len(mine), "sd_pct": sd(measured), "sd_used_pct": sd(used)}
