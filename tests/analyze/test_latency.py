"""The latency's tail per arm and point: TTFT and inter-token latency at p50, p90 and p99 over
every boot's measured requests (warm-up and failed requests apart)."""

from knee.analyze import latency


def record(t_send, t_first, t_done, tokens, warmup=False, error=None):
    return {"warmup": warmup, "error": error, "t_send": t_send, "t_first": t_first,
            "t_done": t_done, "t_last": t_done, "output_tokens": tokens}


def sessions(control, candidate):
    def one(records):
        return {"raw": {"sweep": {"points": [{"point": 8, "run": 1, "records": records}]}}}
    return {(1, "control"): one(control), (1, "candidate"): one(candidate)}


def test_each_arm_and_point_has_its_ttft_and_itl_quantiles_over_its_measured_requests():
    control = [record(0.0, 0.1 * i, 0.1 * i + 1.0, 11) for i in range(1, 101)]
    control += [record(0.0, 50.0, 60.0, 11, warmup=True), record(0.0, 9.0, 9.5, 11, error="x")]
    candidate = [record(0.0, 0.2, 2.2, 21)]
    rows = latency.section(sessions(control, candidate))["latency"]
    assert [(r["arm"], r["point"], r["requests"]) for r in rows] == [
        ("control", 8, 100), ("candidate", 8, 1)]
    c = rows[0]
    assert abs(c["ttft_s_p50"] - 5.05) < 1e-9 and abs(c["ttft_s_p99"] - 9.901) < 1e-9
    assert c["ttft_s_p50"] < c["ttft_s_p90"] < c["ttft_s_p99"]
    assert abs(c["itl_s_p50"] - 0.1) < 1e-12 and abs(c["itl_s_p99"] - 0.1) < 1e-12
    assert abs(rows[1]["itl_s_p50"] - 0.1) < 1e-12  # 2 s over the 20 tokens after the first


def test_records_that_are_not_a_clients_requests_give_no_row():
    toy = [{"warmup": False, "t_send": 0.0, "size": 3}]
    assert latency.section(sessions(toy, toy)) == {}
