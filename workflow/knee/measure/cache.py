"""The engine's compile cache: what a boot should find before it starts, what it did after.

vLLM keys its torch.compile cache by a hash of the configuration:
`torch_compile_cache/torch_aot_compile/<key>/`. Three layers live under a key, each reported
for what it did, never as a hit the engine did not have:
- `aot`: the AOT-compiled artifact (`rank_*/<tag>`), read from the engine's own log lines:
  loaded; present but failed to load, so recompiled; or compiled fresh and saved.
- `inductor`: compiled graph code (`inductor_cache/<xx>/...`): entries before and after the
  boot; a compile that wrote no entry was served from the ones present.
- `aotautograd`: the AOTAutograd cache (`inductor_cache/aotautograd/`), likewise.
Before a boot the key is known only from an earlier boot of the same arm against the same cache
(an index kept in the cache directory), so the prediction is hit, miss or unknown.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from knee.core.jsonio import atomic_write_text
from knee.core.records import Section

INDEX = "knee-cache-index.json"
AOT_DIR = Path("torch_compile_cache") / "torch_aot_compile"
AOT_LINE = re.compile(
    r"(Directly load AOT compilation from path|Compiling model again due to a load failure from"
    r"|saved AOT compiled function to) (\S+?)(?:,|\s|$)")
AOT_EVENT = {"Directly": "loaded", "Compiling": "load_failed", "saved": "saved"}


def fingerprint(arm: Section, model_sha256: str | None, engine: str) -> str:
    """What decides the cache key, as far as knee can see it: server settings, model, engine."""
    blob = json.dumps({"arm": arm, "model": model_sha256, "engine": engine}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _count(folder: Path, skip: tuple[str, ...] = ()) -> int:
    if not folder.is_dir():
        return 0
    return sum(1 for p in folder.rglob("*")
               if p.is_file() and p.relative_to(folder).parts[0] not in skip)


def snapshot(cache_root: Path) -> Section:
    """Per key: its AOT artifacts and how many entries each inner layer holds."""
    base = Path(cache_root) / AOT_DIR
    out = {}
    for key_dir in sorted(base.iterdir()) if base.is_dir() else []:
        if not key_dir.is_dir():
            continue
        inner = key_dir / "inductor_cache"
        out[key_dir.name] = {
            "aot": sorted(str(p.relative_to(key_dir)) for p in key_dir.glob("rank_*/*")
                          if p.is_file() and not p.name.endswith(".tmp")),
            "inductor": _count(inner, skip=("aotautograd", "locks")),
            "aotautograd": _count(inner / "aotautograd"),
        }
    return out


def read_index(cache_root: Path) -> Section:
    try:
        index: Section = json.loads((Path(cache_root) / INDEX).read_text(encoding="utf-8"))
        return index
    except (OSError, ValueError):
        return {}


def predict(cache_root: Path, arm_fingerprint: str, snap: Section) -> Section:
    """Before a boot: the key this arm used last time against this cache, and whether it is
    there. Without an earlier boot of the arm the answer is unknown (or a miss: empty cache)."""
    known = read_index(cache_root).get(arm_fingerprint)
    if known:
        key = known["key"]
        there = bool(snap.get(key, {}).get("aot"))
        return {"key": key, "expected": "hit" if there else "miss",
                "reason": f"this arm used key {key[:12]} before; it is "
                          + ("in the cache" if there else "not in the cache")}
    if not snap:
        return {"key": None, "expected": "miss", "reason": "the cache holds no key"}
    return {"key": None, "expected": "unknown",
            "reason": f"this arm has not booted against this cache ({len(snap)} other key(s) "
                      "present); its key is known after the boot"}


def observe(log_text: str, before: Section, after: Section) -> Section:
    """After a boot: the key(s) the engine used and what each layer did."""
    events: dict[str, list[str]] = {}
    for m in AOT_LINE.finditer(log_text):
        parts = Path(m.group(2)).parts
        if "torch_aot_compile" in parts and parts.index("torch_aot_compile") + 1 < len(parts):
            key = parts[parts.index("torch_aot_compile") + 1]
            events.setdefault(key, []).append(AOT_EVENT[m.group(1).split()[0]])
    keys = {}
    for key, seen in events.items():
        if "loaded" in seen:
            aot = "loaded"
        elif "load_failed" in seen:
            aot = "present, failed to load, recompiled"
        else:
            aot = "compiled and saved (not in the cache)"
        compiled = aot != "loaded"
        layers: dict[str, Any] = {"aot": aot}
        for layer in ("inductor", "aotautograd"):
            n0 = before.get(key, {}).get(layer, 0)
            n1 = after.get(key, {}).get(layer, 0)
            layers[layer] = {"entries_before": n0, "entries_after": n1, "written": n1 - n0,
                             "state": _layer_state(n0, n1 - n0, compiled)}
        keys[key] = {**layers, "hit": _verdict(layers)}
    hits = {k["hit"] for k in keys.values()}
    overall = "no compile cache used" if not keys else hits.pop() if len(hits) == 1 else "mixed"
    return {"keys": keys, "key": next(iter(keys), None), "result": overall}


def _layer_state(before: int, written: int, compiled: bool) -> str:
    if not compiled:
        return "not consulted (the AOT artifact loaded)"
    if before == 0:
        return f"miss ({written} entries written)" if written else "empty, nothing written"
    if written == 0:
        return f"hit (the compile was served from the {before} entries; none written)"
    return f"partial ({written} entries written beside {before})"


def _verdict(layers: Section) -> str:
    if layers["aot"] == "loaded":
        return "hit"
    if any(layers[x]["state"].startswith(("hit", "partial")) for x in ("inductor", "aotautograd")):
        return "partial hit"
    return "miss"


def remember(cache_root: Path, arm_fingerprint: str, key: str | None, when: str) -> None:
    """Record the key this arm used (atomically; the index lives beside the cache)."""
    if not key:
        return
    root = Path(cache_root)
    index = read_index(root)
    index[arm_fingerprint] = {"key": key, "seen_at": when}
    atomic_write_text(root / INDEX, json.dumps(index, indent=1, sort_keys=True))
