"""Both arms of a pair at once. Simultaneous order (`protocol.order: simultaneous`): each pair
boots its control and its candidate at the same time, on disjoint sets of GPUs and CPUs, and
starts every window of the two arms at the same moment, so that both arms see the same seconds
of the host's drift. Interleaved order (`protocol.order: interleaved`): both engines of a pair
are up at once on the same GPUs (each on its own CPU set), and the arms take turns, in ABBA
blocks whose first arm is drawn per block from protocol.seed (knee.measure.together.first_arm),
so that the host's drift between boots is common to both arms while neither arm's traffic ever
shares the GPU with the other's.

The two sets are `runtime.arm_cpus` (two lists: each arm's engine and its load generator are
pinned together to one) and, for an engine on GPUs, `runtime.gpus` cut in two halves. The sets
swap between pairs (crossover: pair 1 gives the control set 1, pair 2 gives it set 2, ...), so
that a difference between the sets cancels over an even number of pairs and can be measured.
In interleaved order both engines span all of `runtime.gpus`, so their memory shares
(server.args.gpu-memory-utilization) must fit the GPUs together (`check_fit`).
The plan names each session's set, partner, GPUs and CPUs; nothing here reads the host."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

from knee.core.errors import KneeError
from knee.core.records import Section
from knee.plan import runtimes
from knee.plan.arms import ARMS

SIMULTANEOUS = "simultaneous"
INTERLEAVED = "interleaved"
# what both engines of an interleaved pair may claim of each GPU together: the rest is each
# process's CUDA context and what vLLM allocates outside its share
GPU_SHARE_MAX = 0.95
VLLM_GPU_SHARE = 0.9  # vLLM's default gpu-memory-utilization
PARALLEL = ("tensor-parallel-size", "pipeline-parallel-size", "data-parallel-size")


def is_simultaneous(protocol: Mapping[str, Any]) -> bool:
    return protocol.get("order") == SIMULTANEOUS


def is_together(protocol: Mapping[str, Any]) -> bool:
    """Both arms of a pair up at once: simultaneous or interleaved order."""
    return protocol.get("order") in (SIMULTANEOUS, INTERLEAVED)


def candidate_sets(protocol: Mapping[str, Any]) -> dict[int, int]:
    """pair -> the CPU (and GPU) set its candidate had, where the arms swap sets between pairs
    (simultaneous and interleaved orders); empty for orders without sets."""
    return {s["pair"]: s["set"] for s in protocol.get("sessions", [])
            if s["arm"] == "candidate" and "set" in s}


def first_arm(seed: int, pair: int, window: str, block: int) -> str:
    """Interleaved order: which arm takes the first turn of a block (ABBA: the other arm takes
    the block's second and third turns, this one its fourth), drawn from protocol.seed, the
    pair, the window and the block, so the plan registers every draw before the first boot."""
    digest = hashlib.sha256(f"{seed}/{pair}/{window}/{block}".encode()).digest()
    return ARMS[digest[0] & 1]


def position(seed: int, pair: int, window: str, unit: int, arm: str) -> int:
    """Interleaved order: 0 where `arm` takes the first turn at a window's unit, else 1. Unit
    k belongs to block k // 2; the block's first arm goes first at its even unit, second at
    its odd one."""
    return int((first_arm(seed, pair, window, unit // 2) == arm) == (unit % 2 == 1))


def gpu_sets(rt: Mapping[str, Any]) -> list[list[int]] | None:
    """runtime.gpus cut in two halves (the first half is set 1), where the runtime takes GPU
    ids; None otherwise."""
    gpus = rt.get("gpus")
    if not (isinstance(gpus, list) and gpus):
        return None
    half = len(gpus) // 2
    return [list(gpus[:half]), list(gpus[half:])]


def sessions(pairs: int, rt: Mapping[str, Any], order: str = SIMULTANEOUS) -> list[Section]:
    """Both sessions of every pair, each with its partner (`together`), its set (1 or 2: in
    interleaved order set 1 boots first), its CPUs (where runtime.arm_cpus names sets) and
    (simultaneous order, on GPUs) its half of the GPUs; a session boots after its arm's
    session of the pair before."""
    gpus = gpu_sets(rt) if order == SIMULTANEOUS else None
    cpus, out = rt.get("arm_cpus"), []
    for pair in range(1, pairs + 1):
        for arm in ARMS:
            k = (pair - 1 + (arm == "candidate")) % 2
            partner = next(a for a in ARMS if a != arm)
            out.append({"id": f"{pair}-{arm}", "pair": pair, "arm": arm,
                        "after": f"{pair - 1}-{arm}" if pair > 1 else None,
                        "together": f"{pair}-{partner}", "set": k + 1,
                        **({"cpus": list(cpus[k])} if cpus else {}),
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
    """A simultaneous or interleaved config fits the host twice: a runtime knee boots, two
    disjoint CPU sets (runtime.arm_cpus, in place of runtime.engine_cpus; in interleaved order
    they are optional, the arms sharing runtime.engine_cpus or the whole host otherwise) and,
    on GPUs, twice the GPUs one engine spans, each arm's half spanned exactly (simultaneous),
    or both engines' memory shares on the same GPUs (interleaved)."""
    order = config["protocol"].get("order")
    if not is_together(config["protocol"]):
        return
    rt = config["runtime"]
    runtime = runtimes.of(config)
    if not runtime.boots:
        raise KneeError(f"{source}: protocol.order: {order} boots both arms at once, and "
                        f"runtime.kind {runtime.kind!r} boots nothing: run the servers in "
                        "sequential order, or let knee boot them (process or docker)")
    if order == SIMULTANEOUS or rt.get("arm_cpus"):
        check_sets(rt, order, source)
    if order == SIMULTANEOUS:
        check_gpus(rt, arms, source)
    elif runtime.gpu_ids and rt.get("gpus"):
        check_fit(arms, source)


def check_sets(rt: Mapping[str, Any], order: str, source: str) -> None:
    """Two disjoint CPU sets of one size in runtime.arm_cpus, and no runtime.engine_cpus."""
    if rt.get("engine_cpus"):
        raise KneeError(
            f"{source}: runtime.engine_cpus: {rt['engine_cpus']!r}: in {order} order "
            + ("each arm has a CPU set of its own for its engine and its load generator: name "
               "the two in runtime.arm_cpus instead" if order == SIMULTANEOUS else
               "with runtime.arm_cpus each arm has a CPU set of its own: keep arm_cpus, or "
               "drop it for both arms to share engine_cpus"))
    sets = rt.get("arm_cpus")
    if not sets:
        raise KneeError(f"{source}: runtime.arm_cpus: missing: {order} order pins each "
                        "arm's engine and load generator to a CPU set of its own, e.g. "
                        "arm_cpus: [[0, 1, 2, 3], [4, 5, 6, 7]]")
    if both := sorted(set(sets[0]) & set(sets[1])):
        raise KneeError(f"{source}: runtime.arm_cpus: {sets!r}: CPU {both[0]} is in both sets: "
                        "both arms' engines are up at the same time and need CPUs of their own")
    if len(sets[0]) != len(sets[1]):
        raise KneeError(f"{source}: runtime.arm_cpus: {sets!r}: the sets have {len(sets[0])} "
                        f"and {len(sets[1])} CPUs: the arms swap sets between pairs, so they "
                        "must be the same size")


def check_fit(arms: Mapping[str, Any], source: str) -> None:
    """Interleaved order keeps both engines on the same GPUs: the two arms' memory shares
    (gpu-memory-utilization, vLLM's default where unset) sum to at most GPU_SHARE_MAX."""
    shares, said = {}, []
    for arm, server in arms.items():
        given = "gpu-memory-utilization" in server.get("args", {})
        v = server.get("args", {}).get("gpu-memory-utilization", VLLM_GPU_SHARE)
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v <= 1:
            raise KneeError(f"{source}: arms.{arm}: args.gpu-memory-utilization: {v!r} is not "
                            "a share of each GPU's memory (above 0, at most 1)")
        shares[arm] = float(v)
        said.append(f"{v:g} ({arm}{'' if given else ', vLLM default'})")
    total = sum(shares.values())
    if total > GPU_SHARE_MAX + 1e-9:
        raise KneeError(
            f"{source}: protocol.order: interleaved keeps both arms' engines on the same GPUs "
            "at once, and their server.args.gpu-memory-utilization claim "
            f"{' + '.join(said)} = {total:g} of each GPU's memory, more than "
            f"{GPU_SHARE_MAX:g} (the rest is each process's CUDA context): set "
            f"gpu-memory-utilization to at most {GPU_SHARE_MAX / 2:g} in server.args (both "
            "arms)")


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
