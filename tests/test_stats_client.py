from knee import client, stats


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
    r = client.Record(index=0, warmup=False, t_send=0.0)
    client._apply_chunk(r, {"choices": [{"text": "a"}], "usage": {"prompt_tokens": 7,
                                                                  "completion_tokens": 1}}, 0.5)
    client._apply_chunk(r, {"choices": [{"text": "bcd"}], "usage": {"completion_tokens": 4}}, 0.6)
    client._apply_chunk(r, {"choices": [{"text": "", "finish_reason": "length"}],
                            "usage": {"completion_tokens": 4}}, 0.7)
    client._apply_chunk(r, {"choices": [], "usage": {"completion_tokens": 4}}, 0.8)
    assert r.chunk_tokens == [1, 3]
    assert (r.t_first, r.t_last, r.output_tokens, r.prompt_tokens) == (0.5, 0.6, 4, 7)
    assert r.finish_reason == "length"
