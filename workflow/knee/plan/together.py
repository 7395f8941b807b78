"""Simultaneous order (`protocol.order: simultaneous`): each pair boots its control and its
candidate at the same time, on disjoint sets of GPUs and CPUs, and starts every window of the
two arms at the same moment, so that both arms see the same seconds of the host's drift.

The two sets are `runtime.arm_cpus` (two lists: each arm's engine and its load generator are
pinned together to one) and, for an engine on GPUs, `runtime.gpus` cut in two halves. The sets
swap between pairs (crossover: pair 1 gives the control set 1, pair 2 gives it set 2, ...), so
that a difference between the sets cancels over an even number of pairs and can be measured.
The plan names each session's set, partner, GPUs and CPUs; nothing here reads the host."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from knee.core.errors import KneeError
from knee.plan import runtimes
from knee.plan.arms import ARMS

SIMULTANEOUS = "simultaneous"
PARALLEL = ("tensor-parallel-size", "pipeline-parallel-size", "data-parallel-size")


def is_simultaneous(protocol: Mapping[str, Any]) -> bool:
    return protocol.get("order") == SIMULTANEOUS


def gpu_sets(rt: Mapping[str, Any]) -> list[list[int]] | None:
    """runtime.gpus cut in two halves (the first half is set 1), where the runtime takes GPU
    ids; None otherwise."""
    gpus = rt.get("gpus")
    if not (isinstance(gpus, list) and gpus):
        return None
    half = len(gpus) // 2
    return [list(gpus[:half]), list(gpus[half:])]


def sessions(pairs: int, rt: Mapping[str, Any]) -> list[dict]:
    """Both sessions of every pair, each with its partner (`together`), its set (1 or 2), its
    CPUs and (on GPUs) its GPUs; a session boots after its arm's session of the pair before."""
    gpus, cpus, out = gpu_sets(rt), rt["arm_cpus"], []
    for pair in range(1, pairs + 1):
        for arm in ARMS:
            k = (pair - 1 + (arm == "candidate")) % 2
            partner = next(a for a in ARMS if a != arm)
            out.append({"id": f"{pair}-{arm}", "pair": pair, "arm": arm,
                        "after": f"{pair - 1}-{arm}" if pair > 1 else None,
                        "together": f"{pair}-{partner}", "set": k + 1, "cpus": list(cpus[k]),
                        **({"gpus": gpus[k]} if gpus else {})})
    return out


def span(server: Mapping[str, Any], where: str) -> tuple[int, str]:
    """How many GPUs one engine of this arm spans, and the settings that say so."""
    args = server.get("args", {})
    sizes = {k: args.get(k, 1) for k in PARALLEL}
    for k, v in sizes.items():
        if not (type(v) is int and v >= 1):
            raise KneeError(f"{where}: args.{k}: {v!r} is not a whole number of GPUs (1 or more)")
    said = " × ".join(f"{k} {v}" for k, v in sizes.items() if k in args) or \
        "tensor-parallel-size 1 (vLLM's default)"
    return math.prod(sizes.values()), said


def check_named_once(gpus: list[int], source: str) -> None:
    if twice := sorted({g for g in gpus if gpus.count(g) > 1}):
        raise KneeError(f"{source}: runtime.gpus: {gpus!r}: GPU {twice[0]} is named twice")


def check(config: Mapping[str, Any], arms: Mapping[str, Any], source: str) -> None:
    """A simultaneous config fits the host twice: a runtime knee boots, two disjoint CPU sets
    (runtime.arm_cpus, in place of runtime.engine_cpus) and, on GPUs, twice the GPUs one
    engine spans, each arm's half spanned exactly."""
    if not is_simultaneous(config["protocol"]):
        return
    rt = config["runtime"]
    runtime = runtimes.of(config)
    if not runtime.boots:
        raise KneeError(f"{source}: protocol.order: simultaneous boots both arms at once, and "
                        f"runtime.kind {runtime.kind!r} boots nothing: run the servers in "
                        "sequential order, or let knee boot them (process or docker)")
    if rt.get("engine_cpus"):
        raise KneeError(f"{source}: runtime.engine_cpus: {rt['engine_cpus']!r}: in simultaneous "
                        "order each arm has a CPU set of its own for its engine and its load "
                        "generator: name the two in runtime.arm_cpus instead")
    sets = rt.get("arm_cpus")
    if not sets:
        raise KneeError(f"{source}: runtime.arm_cpus: missing: simultaneous order pins each "
                        "arm's engine and load generator to a CPU set of its own, e.g. "
                        "arm_cpus: [[0, 1, 2, 3], [4, 5, 6, 7]]")
    if both := sorted(set(sets[0]) & set(sets[1])):
        raise KneeError(f"{source}: runtime.arm_cpus: {sets!r}: CPU {both[0]} is in both sets: "
                        "the two arms run at the same time and need CPUs of their own")
    if len(sets[0]) != len(sets[1]):
        raise KneeError(f"{source}: runtime.arm_cpus: {sets!r}: the sets have {len(sets[0])} "
                        f"and {len(sets[1])} CPUs: the arms swap sets between pairs, so they "
                        "must be the same size")
    check_gpus(rt, arms, source)


def check_gpus(rt: Mapping[str, Any], arms: Mapping[str, Any], source: str) -> None:
    gpus = rt.get("gpus")
    if gpus in (None, [], 0, ""):
        return
    if not (isinstance(gpus, list) and all(type(g) is int for g in gpus)):
        raise KneeError(f"{source}: runtime.gpus: {gpus!r}: in simultaneous order each arm has "
                        "GPUs of its own: list their ids, twice as many as one engine spans")
    check_named_once(gpus, source)
    for arm, server in arms.items():
        n, said = span(server, f"{source}: arms.{arm}")
        if 2 * n != len(gpus):
            raise KneeError(
                f"{source}: arms.{arm}: the engine spans {n} GPU(s) ({said}); simultaneous "
                f"order boots both arms at once on disjoint sets, 2 × {n} = {2 * n} GPU(s), "
                f"but runtime.gpus names {len(gpus)} ({gpus!r})")
