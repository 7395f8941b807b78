"""The depth instrument: its curve (pure) and its refusal of a prefix-cache hit (real engine)."""

import pytest

from knee import depthcurve
from knee.jsonio import KneeError
from tests.conftest import ROOT


def point(depth, chunks, tokens=65, span=1.0):
    times = [0.5 + span * i / max(chunks - 1, 1) for i in range(chunks)]
    return {"point": depth, "records": [{
        "warmup": False, "error": None, "t_send": 0.0, "t_first": times[0], "t_last": times[-1],
        "t_done": times[-1], "chunk_times": times, "output_tokens": tokens}]}


def test_flat_curve_band_and_a_streaky_point_excluded_with_its_reason():
    raw = {"points": [point(64, 40), point(256, 41, span=1.05), point(1024, 12),
                      point(1792, 39, span=1.07)]}
    c = depthcurve.curve(raw)
    included = [p["depth"] for p in c["points"] if p["included"]]
    assert included == [64, 256, 1792]
    [out] = [p for p in c["points"] if not p["included"]]
    assert out["depth"] == 1024 and out["reason"].startswith("repetitive continuation: 12 chunks")
    assert round(c["band_pct"], 1) == round((1 - 1 / 1.07) * 100, 1)


@pytest.mark.engine
def test_a_prefix_cache_hit_is_refused_not_timed(engine_python, tmp_path):
    from knee.instruments import depth
    from knee.runtime import endpoint
    from knee.runtime.process import Engine, server_argv

    model = {"name": "tiny", "path": "resources/models/tiny-llama-s0-l4-h256"}
    assert (ROOT / model["path"]).is_dir()
    port = endpoint.free_port("127.0.0.1")
    argv = server_argv(engine_python, {"args": {"dtype": "float32", "max-model-len": 1024}},
                       str(ROOT / model["path"]), "tiny", "127.0.0.1", port)
    engine = Engine(argv=argv, env={"VLLM_CPU_KVCACHE_SPACE": "1",
                                    "VLLM_CACHE_ROOT": str(ROOT / "resources" / "vllm-cache")},
                    log=tmp_path / "engine.log", host="127.0.0.1", port=port)
    cfg = {"depths": [256], "output_tokens": 16}
    try:
        engine.start()
        engine.wait_healthy(600)
        first = depth.run(engine, cfg, 7, model, 120)
        assert first["points"][0]["prefix_cache"]["hits"] == 0
        assert first["points"][0]["records"][0]["prompt_tokens"] == 256
        with pytest.raises(KneeError, match="depth 256: the prefix cache served"):
            depth.run(engine, cfg, 7, model, 120)  # the same prompt again: a cache hit
    finally:
        engine.stop()
