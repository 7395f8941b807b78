"""Instruments against one real embedded engine (vLLM on CPU): exact-token prompts, both
OpenAI endpoints, and the depth instrument's refusal of a prefix-cache hit."""

import pytest

from knee.core import prompts
from knee.core.errors import KneeError
from knee.instruments import depth, fixture, sweep
from knee.measure.runtime.target import Target
from tests.helpers import ROOT

MODEL = {"name": "tiny", "path": "resources/models/tiny-llama-s0-l4-h256"}
pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def engine(engine_python, tmp_path_factory):
    from knee.measure.runtime import endpoint
    from knee.measure.runtime.process import Engine
    from knee.plan.arms import server_argv

    port = endpoint.free_port("127.0.0.1")
    argv = server_argv(engine_python, {"args": {"dtype": "float32", "max-model-len": 1024}},
                       str(ROOT / MODEL["path"]), MODEL["name"], "127.0.0.1", port)
    eng = Engine(argv=argv, env={"VLLM_CPU_KVCACHE_SPACE": "1",
                                 "VLLM_CACHE_ROOT": str(ROOT / "resources" / "vllm-cache")},
                 log=tmp_path_factory.mktemp("engine") / "engine.log", host="127.0.0.1",
                 port=port)
    try:
        eng.start()
        eng.wait_healthy(600)
        yield eng
    finally:
        eng.stop()


SWEEP = {"concurrency": [3], "runs": 1, "requests_per_stream": 2, "min_requests": 1,
         "prompt_tokens": 57, "output_tokens": 12, "warmup_requests": 1}


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_sweep_prompts_are_exactly_the_configured_tokens(engine, api):
    out = sweep.run(Target(engine, MODEL, 3, 120, api), SWEEP)
    (point,) = out["points"]
    records = point["records"]
    assert len(records) == 6 and not any(r["error"] for r in records)
    assert all(r["output_tokens"] == 12 and r["finish_reason"] == "length" for r in records)
    assert point["profile"]["endpoint"] == f"/v1/{'chat/' if api == 'chat' else ''}completions"
    # the engine's own token ids, one per counted token, and their sha256
    assert all(len(r["output_token_ids"]) == 12 and len(r["output_sha256"]) == 64
               for r in records)
    if api == "completions":  # the text itself is the prompt: exactly 57 tokens
        assert {r["prompt_tokens"] for r in records} == {57}
    else:  # the chat template adds the same role prefix and suffix to every prompt
        assert len({r["prompt_tokens"] for r in records}) == 1
        assert records[0]["prompt_tokens"] > 57


def test_chat_fixture_counts_tokens_from_usage(engine):
    cfg = {"prompt_dir": str(ROOT / "config" / "prompts"), "classes": ["shell"], "requests": 2,
           "output_tokens": 9}
    out = fixture.run(Target(engine, MODEL, 0, 120, "chat"), cfg)
    records = out["points"][0]["records"]
    assert [sum(r["chunk_tokens"]) for r in records] == [9, 9]
    assert out["points"][0]["profile"]["api"] == "openai-chat"


def test_a_prefix_cache_hit_is_refused_not_timed(engine):
    cfg = {"depths": [256], "output_tokens": 16}
    target = Target(engine, MODEL, 7, 120, "completions")
    first = depth.run(target, cfg)
    assert first["points"][0]["prefix_cache"]["hits"] == 0
    assert first["points"][0]["records"][0]["prompt_tokens"] == 256
    with pytest.raises(KneeError, match="depth 256: the prefix cache served"):
        depth.run(target, cfg)  # the same prompt again: a cache hit


def test_exact_token_prompts_are_deterministic_and_exact_on_the_real_tokenizer(engine):
    from knee.measure.runtime import endpoint

    tokenize = endpoint.tokenizer(engine.base_url, MODEL["name"])
    a = prompts.exact_token_prompts(tokenize, 5, "x", 3, 40)
    assert a == prompts.exact_token_prompts(tokenize, 5, "x", 3, 40)
    assert [len(tokenize(p)) for p in a] == [40, 40, 40]


def test_a_toy_instrument_in_one_file_is_planned_measured_compared_derived_and_rendered(
        engine, toy, default_config, tmp_path):
    from knee.analyze import bar as bar_module
    from knee.analyze import compare
    from knee.core import jsonio
    from knee.instruments import instrument_names
    from knee.measure import session
    from knee.plan import config
    from knee.publish import readme

    cfg = default_config
    # 64 tokens: a request of a few tokens can arrive in one chunk under speculation, and a
    # decode rate needs two chunks (it is undefined, not zero, for one)
    cfg["instruments"] = {"sweep": {"concurrency": [1]},
                          "burst": {"requests": 2, "output_tokens": 64}}
    cfg["bar"]["rules"] = [{"name": "burst parity", "instrument": "burst", "metric": "throughput",
                            "point": "burst", "within_pct": 50}]
    _, plan = config.plan_config(cfg, "toy.yaml", ROOT)  # planned: its schema, its defaults
    assert plan["instruments"]["burst"] == {"requests": 2, "prompt_tokens": 32, "output_tokens": 64}
    assert instrument_names(plan) == ["sweep", "burst"]
    pub = ROOT / "results" / "ksched-cpu"
    boot = jsonio.read(pub / "receipts" / "1-control-boot.json", "boot")
    sessions = {}
    for arm in ("control", "candidate"):  # measured: the session's window, on the real engine
        session.measure(engine, plan, "burst", f"1-{arm}", tmp_path / arm, MODEL)
        raw = jsonio.read(tmp_path / arm / "burst.json.gz", "raw")
        assert [len(p["records"]) for p in raw["points"]] == [2]
        assert (tmp_path / arm / "burst.prom.after.gz").is_file()
        sessions[(1, arm)] = {"raw": {"burst": raw}, "boot": {
            **boot, "pair": 1, "arm": arm, "bar_sha256": plan["bar_sha256"]}}
    comparison = compare.compare(plan, sessions)  # compared
    assert comparison["verdict"] == "VALID", comparison["mismatches"]
    spans = comparison["burst_spans"]  # derived, by its own module
    assert [(s["pair"], s["arm"], s["requests"]) for s in spans] == [
        (1, "candidate", 2), (1, "control", 2)]
    assert all(0 < s["fastest_s"] <= s["slowest_s"] for s in spans), spans
    assert comparison["fixture_classes"] == [] == comparison["depth_curves"]  # did not run
    rows = {(r["point"], r["metric"]) for r in comparison["rows"] if r["instrument"] == "burst"}
    rates = ("decode_rate_p50", "decode_rate_gmean")
    assert rows >= {("burst", m) for m in compare.METRICS if m not in rates}
    # a decode rate needs a request's chunks received at two different times: the engine may
    # flush a whole stream in one receive, and then the rate is undefined (None), never zero;
    # each rate's row (the median and the paired geometric mean) exists when either arm has a
    # request with a rate, and has a delta only when both have one
    from knee.analyze.stats import decode_rate

    rated = [any(decode_rate(r) is not None for p in s["raw"]["burst"]["points"]
                 for r in p["records"]) for s in sessions.values()]
    assert {m: ("burst", m) in rows for m in rates} == dict.fromkeys(rates, any(rated))
    for r in comparison["rows"]:
        if r["instrument"] == "burst" and r["metric"] in rates:
            assert (r["delta_pct"] is not None) == all(rated), (rated, r)
    bar = bar_module.judge_plan(plan, comparison, [s["boot"] for s in sessions.values()])
    assert [r["rule"] for r in bar["rules"]] == ["burst parity"]
    from knee.publish import figures

    drawn = figures.render_all(plan, comparison, [], tmp_path / "figures", bar)  # drawn
    assert tmp_path / "figures" / "burst.png" in drawn and (tmp_path / "figures" / "burst.svg"
                                                             ).stat().st_size > 0
    assert "burst throughput per pair" in (tmp_path / "figures" / "burst.svg").read_text()
    text = readme.render(plan, comparison, bar, [s["boot"] for s in sessions.values()],
                         jsonio.read(pub / "comparison" / "acceptance.json"))  # rendered
    assert "Burst (every request at once)" in text and "burst parity" in text
    assert "Burst spans, fastest to slowest request: 1-candidate " in text  # its caveat
    assert "![burst throughput](figures/burst.png)" in text


def test_a_held_sweep_keeps_its_concurrency_for_min_window_s(engine):
    """min_window_s: the run sends from its longer prompt list, in order, until the time has
    passed; the profile names the list (the same in every session), the record what was sent."""
    cfg = {**SWEEP, "concurrency": [2], "warmup_requests": 0, "output_tokens": 8,
           "min_window_s": 2.0, "max_requests_per_stream": 40}
    (point,) = sweep.run(Target(engine, MODEL, 3, 120, "completions"), cfg)["points"]
    hold, records = point["hold"], point["records"]
    assert point["profile"]["requests"] == hold["planned"] == 80
    assert hold["sent"] == len(records) >= 2 and not any(r["error"] for r in records)
    assert [r["index"] for r in records] == list(range(len(records)))
    assert hold["reached"] == (point["wall_s"] >= 2.0)
    assert hold["reached"] or hold["sent"] == 80
    assert 0 < point["concurrency_held_share"] <= 1
