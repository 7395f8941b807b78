"""Instruments against one real embedded engine (vLLM on CPU): exact-token prompts, both
OpenAI endpoints, and the depth instrument's refusal of a prefix-cache hit."""

import pytest

from knee import prompts
from knee.errors import KneeError
from knee.instruments import depth, fixture, sweep
from tests.conftest import ROOT

MODEL = {"name": "tiny", "path": "resources/models/tiny-llama-s0-l4-h256"}
pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def engine(engine_python, tmp_path_factory):
    from knee.arms import server_argv
    from knee.runtime import endpoint
    from knee.runtime.process import Engine

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
    out = sweep.run(engine, {**SWEEP, "api": api}, 3, MODEL, 120)
    (point,) = out["points"]
    records = point["records"]
    assert len(records) == 6 and not any(r["error"] for r in records)
    assert all(r["output_tokens"] == 12 and r["finish_reason"] == "length" for r in records)
    assert point["profile"]["endpoint"] == f"/v1/{'chat/' if api == 'chat' else ''}completions"
    if api == "completions":  # the text itself is the prompt: exactly 57 tokens
        assert {r["prompt_tokens"] for r in records} == {57}
    else:  # the chat template adds the same role prefix and suffix to every prompt
        assert len({r["prompt_tokens"] for r in records}) == 1
        assert records[0]["prompt_tokens"] > 57


def test_chat_fixture_counts_tokens_from_usage(engine):
    cfg = {"prompt_dir": str(ROOT / "config" / "prompts"), "classes": ["shell"], "requests": 2,
           "output_tokens": 9, "api": "chat"}
    out = fixture.run(engine, cfg, 0, MODEL, 120)
    records = out["points"][0]["records"]
    assert [sum(r["chunk_tokens"]) for r in records] == [9, 9]
    assert out["points"][0]["profile"]["api"] == "openai-chat"


def test_a_prefix_cache_hit_is_refused_not_timed(engine):
    cfg = {"depths": [256], "output_tokens": 16}
    first = depth.run(engine, cfg, 7, MODEL, 120)
    assert first["points"][0]["prefix_cache"]["hits"] == 0
    assert first["points"][0]["records"][0]["prompt_tokens"] == 256
    with pytest.raises(KneeError, match="depth 256: the prefix cache served"):
        depth.run(engine, cfg, 7, MODEL, 120)  # the same prompt again: a cache hit


def test_exact_token_prompts_are_deterministic_and_exact_on_the_real_tokenizer(engine):
    from knee.runtime import endpoint

    tokenize = endpoint.tokenizer(engine.base_url, MODEL["name"])
    a = prompts.exact_token_prompts(tokenize, 5, "x", 3, 40)
    assert a == prompts.exact_token_prompts(tokenize, 5, "x", 3, 40)
    assert [len(tokenize(p)) for p in a] == [40, 40, 40]
