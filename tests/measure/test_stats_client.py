import asyncio
import random

import orjson
import pytest

from knee.analyze import stats
from knee.core import prompts
from knee.core.errors import KneeError
from knee.measure import stream


def rec(**kw):
    base = {"warmup": False, "error": None, "t_send": 0.0, "t_first": 1.0, "t_last": 2.0,
            "output_tokens": 11}
    return {**base, **kw}


def test_decode_rate_excludes_ttft_and_counts_tokens_not_chunks():
    # 11 tokens, first chunk at 1.0 s, last at 2.0 s: (11 - 1) / 1.0, whatever the chunk count
    assert stats.decode_rate(rec()) == 10.0
    assert stats.decode_rate(rec(t_send=0.9)) == 10.0


def test_decode_rate_undefined_for_errors_and_single_token():
    assert stats.decode_rate(rec(error="HTTP 500")) is None
    assert stats.decode_rate(rec(output_tokens=1)) is None


def test_point_summary_throughput_is_tokens_over_wall_and_counts_errors():
    point = {"wall_s": 2.0, "records": [rec(), rec(), rec(error="boom", output_tokens=0),
                                        rec(warmup=True, output_tokens=100)]}
    s = stats.point_summary(point)
    assert s["throughput"] == 11.0  # 22 tokens / 2 s; warm-up and errors excluded
    assert s["errors"] == 1 and s["requests"] == 3


def test_chunk_token_counts_come_from_server_usage():
    r = stream.Record(index=0, warmup=False, t_send=0.0)
    stream._apply_chunk(r, {"choices": [{"text": "a"}], "usage": {"prompt_tokens": 7,
                                                                  "completion_tokens": 1}}, 0.5)
    stream._apply_chunk(r, {"choices": [{"text": "bcd"}], "usage": {"completion_tokens": 4}}, 0.6)
    stream._apply_chunk(r, {"choices": [{"text": "", "finish_reason": "length"}],
                            "usage": {"completion_tokens": 4}}, 0.7)
    stream._apply_chunk(r, {"choices": [], "usage": {"completion_tokens": 4}}, 0.8)
    assert r.chunk_tokens == [1, 3]
    assert (r.t_first, r.t_last, r.output_tokens, r.prompt_tokens) == (0.5, 0.6, 4, 7)
    assert r.finish_reason == "length"


def test_error_event_mid_stream_is_an_error_not_a_silent_end():
    r = stream.Record(index=0, warmup=False, t_send=0.0)
    with pytest.raises(stream.StreamError, match="engine dead"):
        stream._apply_chunk(r, {"error": {"message": "engine dead", "code": 500}}, 0.5)


def sse_response(events: list[dict]) -> bytes:
    body = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n" \
           b"transfer-encoding: chunked\r\n\r\n"
    for ev in [orjson.dumps(e) for e in events] + [b"[DONE]"]:
        data = b"data: " + ev + b"\n\n"
        body += f"{len(data):x}\r\n".encode() + data + b"\r\n"
    return body + b"0\r\n\r\n"


def feed(response: bytes, cuts: list[int]) -> tuple[stream.Record, asyncio.Future]:
    loop = asyncio.new_event_loop()
    try:
        conn = stream.Stream(t0=0.0)
        rec, done = stream.Record(index=0, warmup=False, t_send=0.0), loop.create_future()
        conn.start(rec, done)
        for a, b in zip([0, *cuts], [*cuts, len(response)], strict=True):
            conn.data_received(response[a:b], 1.0)
        return rec, done
    finally:
        loop.close()


EVENTS = [{"choices": [{"text": "a", "finish_reason": None}],
           "usage": {"prompt_tokens": 5, "completion_tokens": 1}},
          {"choices": [{"text": "bc", "finish_reason": None}],
           "usage": {"prompt_tokens": 5, "completion_tokens": 3}},
          {"choices": [{"text": "d", "finish_reason": "length"}],
           "usage": {"prompt_tokens": 5, "completion_tokens": 4}},
          {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 4}}]


@pytest.mark.parametrize("seed", range(20))
def test_http_framing_cut_anywhere_gives_the_same_record(seed):
    # reads split at random places (inside sizes, events, CRLFs) must parse like one read
    response = sse_response(EVENTS)
    whole, done = feed(response, [])
    assert done.done() and done.exception() is None
    assert (whole.chunk_tokens, whole.output_tokens, whole.prompt_tokens,
            whole.finish_reason) == ([1, 2, 1], 4, 5, "length")
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(response)), 12))
    rec, done = feed(response, cuts)
    assert done.done() and done.exception() is None
    assert (rec.chunk_tokens, rec.output_tokens, rec.finish_reason) == ([1, 2, 1], 4, "length")


def test_http_error_status_is_reported_with_its_body():
    body = b'{"error": "model not found"}'
    response = (b"HTTP/1.1 404 Not Found\r\ncontent-length: " + str(len(body)).encode()
                + b"\r\n\r\n" + body)
    _, done = feed(response, [10, 40])
    with pytest.raises(stream.HTTPError, match=r"HTTP 404.*model not found"):
        done.result()


def test_exact_token_prompts_hit_the_length_with_multi_token_words():
    # a toy tokenizer: a word of length > 3 is two tokens, so batches overshoot and get cut
    def tokenize(text):
        return [t for w in text.split() for t in ([w] if len(w) <= 3 else [w[:3], w[3:]])]

    ps = prompts.exact_token_prompts(tokenize, 0, "sweep c4 r1", 6, 40)
    assert [len(tokenize(p)) for p in ps] == [40] * 6
    assert len(set(ps)) == 6
    assert ps == prompts.exact_token_prompts(tokenize, 0, "sweep c4 r1", 6, 40)
    assert ps != prompts.exact_token_prompts(tokenize, 0, "sweep c4 r2", 6, 40)
    with pytest.raises(KneeError, match="shorter than the prompt head"):
        prompts.exact_token_prompts(tokenize, 0, "sweep c4 r1", 1, 2)
