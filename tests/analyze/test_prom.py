"""Scrape analysis on real scrapes of the embedded engine (ngram, k=5)."""

import pytest

from knee.analyze.window import prom
from knee.core.errors import KneeError
from tests.helpers import ROOT

DATA = ROOT / "tests" / "data"
BEFORE = (DATA / "ngram-k5.prom.before").read_text()
AFTER = (DATA / "ngram-k5.prom.after").read_text()


def test_deltas_follow_the_seed_definitions():
    d = prom.window_deltas(BEFORE, AFTER, "w", requests=10, speculation=True)
    drafts, draft_tokens = d["spec_decode_num_drafts"], d["spec_decode_num_draft_tokens"]
    accepted = d["spec_decode_num_accepted_tokens"]
    assert drafts > 0 and draft_tokens > 0
    assert d["acceptance_rate"] == accepted / draft_tokens
    assert d["mean_acceptance_length"] == 1 + accepted / drafts
    per_pos = d["spec_decode_num_accepted_tokens_per_pos"]
    assert len(per_pos) == 5 and sum(per_pos) == accepted
    assert d["per_position_rate"] == [x / drafts for x in per_pos]


def test_created_samples_are_ignored():
    samples = prom.parse(AFTER)
    assert not any(name.endswith("_created") for name in samples)
    assert prom.DRAFTS in samples


def test_a_scrape_pair_that_brackets_no_traffic_is_an_error():
    with pytest.raises(KneeError, match="did not move over a window of 10 requests"):
        prom.window_deltas(AFTER, AFTER, "1-control/sweep", requests=10, speculation=True)


def test_a_counter_reset_is_an_error():
    with pytest.raises(KneeError, match=r"went down.*restarted"):
        prom.window_deltas(AFTER, BEFORE, "1-control/sweep", requests=10, speculation=True)


def test_missing_spec_series_is_an_error_when_speculation_is_on():
    stripped = "\n".join(line for line in AFTER.splitlines() if "spec_decode" not in line)
    with pytest.raises(KneeError, match="speculation is on but vllm:spec_decode_num_drafts_total"):
        prom.window_deltas(BEFORE, stripped + "\n", "w", requests=10, speculation=True)


def test_seed_k4_probe_numbers():
    s = prom.spec_summary({"spec_decode_num_drafts": 3478, "spec_decode_num_draft_tokens": 13912,
                           "spec_decode_num_accepted_tokens": 5738})
    assert round(s["acceptance_rate"] * 100, 2) == 41.24
    assert round(s["mean_acceptance_length"], 4) == 2.6498  # accepted tokens per verify step


def test_seed_k7_window_per_position_rates():
    per_pos = [44225, 29747, 19984, 13513, 9086, 6095, 3840]
    s = prom.spec_summary({"spec_decode_num_drafts": 60944,
                           "spec_decode_num_draft_tokens": 426608,
                           "spec_decode_num_accepted_tokens": 126490,
                           "spec_decode_num_accepted_tokens_per_pos": per_pos})
    assert [round(r * 100, 2) for r in s["per_position_rate"]] == [
        72.57, 48.81, 32.79, 22.17, 14.91, 10.00, 6.30]


def test_seed_ceiling_and_modelled_rate():
    d = {"spec_decode_num_accepted_tokens_per_pos": [1, 1, 1, 1], "tokens_per_step": 2.6498}
    c = prom.ceiling(d, 0.02338)
    # (4 + 1) / 23.38 ms: the reference write-up's 213.8
    assert 213.8 <= c["ceiling_decode_rate"] < 213.9
    assert round(c["modelled_decode_rate"], 1) == 113.3
    assert "inter_token_latency" in c["step_time_source"]


def test_knee_is_first_position_under_threshold():
    d = {"spec_decode_num_drafts": 3478, "spec_decode_num_draft_tokens": 13912,
         "spec_decode_num_accepted_tokens": 5738,
         "spec_decode_num_accepted_tokens_per_pos": [2508, 1607, 1033, 591]}
    assert prom.spec_summary(d)["knee_position"] == 4  # 0.721, 0.462, 0.297, 0.170
    assert prom.spec_summary(d, knee_threshold=0.3)["knee_position"] == 3
    assert prom.spec_summary(d, knee_threshold=0.1)["knee_position"] is None


def test_client_server_token_disagreement_is_flagged_with_both_numbers():
    d = prom.window_deltas(BEFORE, AFTER, "w", requests=10, speculation=True, client_tokens=7)
    assert d["flags"] == [f"server generation tokens {d['generation_tokens']:g} != "
                          "client-counted output tokens 7"]
    ok = prom.window_deltas(BEFORE, AFTER, "w", requests=10, speculation=True,
                            client_tokens=int(d["generation_tokens"]))
    assert ok["flags"] == []


def test_window_without_requests_is_an_error():
    with pytest.raises(KneeError, match="brackets no requests"):
        prom.window_deltas(BEFORE, AFTER, "w", requests=0, speculation=True)


def test_server_histograms_are_summarised_per_window():
    d = prom.window_deltas(BEFORE, AFTER, "w", requests=10, speculation=True)
    itl = d["server_latency"]["inter_token_latency_s"]
    assert itl["count"] > 0 and itl["mean"] == itl["sum"] / itl["count"]
    assert d["step_time_s"] == itl["mean"]
    assert itl["p50"] <= itl["p90"] <= itl["p99"]


def test_bucket_quantile_interpolates_like_prometheus():
    buckets = [(0.1, 10.0), (0.2, 30.0), (float("inf"), 40.0)]
    assert prom.bucket_quantile(0.5, buckets) == pytest.approx(0.15)
    assert prom.bucket_quantile(0.1, buckets) == pytest.approx(0.04)
    assert prom.bucket_quantile(0.99, buckets) == 0.2  # in the +Inf bucket: its lower bound


def test_speculation_off_has_no_spec_series_and_says_so():
    before = (DATA / "spec-off.prom.before").read_text()
    after = (DATA / "spec-off.prom.after").read_text()
    assert prom.DRAFTS not in prom.parse(after)
    d = prom.window_deltas(before, after, "off", requests=4, speculation=False,
                           client_tokens=128)
    assert d["speculation"] == "off" and "acceptance_rate" not in d
    assert d["generation_tokens"] == 128 and d["flags"] == []
    with pytest.raises(KneeError, match="speculation is on but"):
        prom.window_deltas(before, after, "off", requests=4, speculation=True)


def test_zero_drafts_over_a_bracketed_window_is_said_in_words():
    # generation moved (the scrapes bracket the traffic) but the drafter proposed nothing
    frozen = "\n".join(line for line in BEFORE.splitlines()) + "\n"
    after = "\n".join(
        line if "spec_decode" not in line or line.startswith("#")
        else next(b for b in BEFORE.splitlines() if b.split(" ")[0] == line.split(" ")[0])
        for line in AFTER.splitlines()) + "\n"
    d = prom.window_deltas(frozen, after, "w", requests=3, speculation=True)
    assert d["spec_decode_num_drafts"] == 0 and "acceptance_rate" not in d
    assert d["flags"][-1].startswith("no drafts proposed")


@pytest.mark.parametrize("instrument, own", [("probe", True), ("sweep", False)])
def test_each_point_gets_window_metrics_of_its_own_where_its_instrument_declares_its_scrapes(
        instrument, own):
    rec = {"warmup": False, "error": None, "output_tokens": 10, "t_send": 0.0, "t_first": 0.1,
           "t_last": 0.5, "t_done": 0.5, "chunk_times": [0.1, 0.3, 0.5]}
    raw = {"session": "1-control", "instrument": instrument, "warmup": None, "points": [
        {"point": "T=0.0", "records": [rec], "prom_before": BEFORE, "prom_after": AFTER}]}
    out = prom.instrument_metrics(raw, BEFORE, AFTER, speculation=True, knee_threshold=0.5,
                                  files="f")
    assert ("temperatures" in out) is own
    if own:  # the point's own scrapes: the same pair here, so the same counters
        [t] = out["temperatures"]
        assert t["point"] == "T=0.0" and t["acceptance_rate"] == out["acceptance_rate"]


def test_every_draft_rejected_is_a_measured_acceptance_of_zero():
    # a real scrape pair of the embedded engine around 4 requests (tests/data/capture_scrapes.py
    # --spec '{..."prompt_lookup_min": 1}' --sampling '{"temperature": 0.8}': random weights
    # sample almost uniformly): 40 drafts of 5 tokens and 128 generated tokens, none accepted
    before = (DATA / "ngram-k5-rejected.prom.before").read_text()
    after = (DATA / "ngram-k5-rejected.prom.after").read_text()
    d = prom.window_deltas(before, after, "1-control/probe T=0.8", requests=4,
                           speculation=True)
    assert d["spec_decode_num_drafts"] > 0 and d["spec_decode_num_draft_tokens"] > 0
    assert d["spec_decode_num_accepted_tokens"] == 0
    assert d["acceptance_rate"] == 0 and d["mean_acceptance_length"] == 1
    assert d["per_position_rate"] == [0.0] * 5 and d["knee_position"] == 1
    assert d["flags"][-1] == "every draft was rejected in this window: acceptance 0 (measured)"


def _moved(text: str, name: str, by: float) -> str:
    """The scrape with one counter's sample moved by `by`."""
    out = []
    for line in text.splitlines():
        if line.startswith(name + "{"):
            head, value = line.rsplit(" ", 1)
            line = f"{head} {float(value) + by}"
        out.append(line)
    return "\n".join(out) + "\n"


def test_drafts_without_draft_tokens_cannot_be_a_measurement():
    after = _moved(AFTER, prom.DRAFT_TOKENS, -(prom.total(prom.parse(AFTER), prom.DRAFT_TOKENS)
                                              - prom.total(prom.parse(BEFORE), prom.DRAFT_TOKENS)))
    with pytest.raises(KneeError, match=r"draft_tokens_total did not move.*do not bracket"):
        prom.window_deltas(BEFORE, after, "w", requests=10, speculation=True)


def test_more_accepted_than_drafted_cannot_be_a_measurement():
    after = _moved(AFTER, prom.ACCEPTED, 1e6)
    with pytest.raises(KneeError, match=r"more than the .* draft tokens proposed: not a measure"):
        prom.window_deltas(BEFORE, after, "w", requests=10, speculation=True)


def test_draft_lengths_of_a_fixed_k_and_of_a_schedule_by_requests_in_flight():
    schedule = {"num_speculative_tokens": 5,
                "num_speculative_tokens_per_batch_size": [[1, 2, 5], [3, 16, 1]]}
    assert prom.draft_lengths(None) == []
    assert prom.draft_lengths({"method": "ngram", "num_speculative_tokens": 5}, 16) == [5]
    assert prom.draft_lengths(schedule) == [1, 5]
    assert prom.draft_lengths(schedule, 1) == prom.draft_lengths(schedule, 2) == [5]
    assert prom.draft_lengths(schedule, 8) == [1, 5]
    # k=0 proposes nothing; a batch size the schedule leaves out runs the config's own k
    assert prom.draft_lengths({"num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size":
                               [[1, 2, 5], [3, 8, 0]]}, 8) == [5]
    assert prom.draft_lengths({"num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size":
                               [[2, 8, 5]]}, 4) == [3, 5]


def test_requests_in_flight_and_the_share_of_time_a_loop_held_its_concurrency():
    from knee.analyze.stats import held_share, in_flight

    recs = [{"t_send": 0.0, "t_done": 2.0}, {"t_send": 1.0, "t_done": 3.0},
            {"t_send": 2.0, "t_done": 4.0}, {"t_send": 5.0, "t_done": None}]
    assert in_flight(recs) == 2 and in_flight([]) == 0  # the first is done as the third is sent
    # two in flight from 1 s to 3 s of the 4 s from first send to last done
    assert held_share(recs, 2) == pytest.approx(0.5)
    assert held_share(recs, 1) == pytest.approx(1.0) and held_share(recs, 3) == 0.0
    assert held_share([], 2) is None


def mixed_window(long: int, short: int, truth: list[float]) -> dict:
    """The counters of a window in which `long` drafts proposed len(truth) tokens, accepted at
    position i with probability truth[i] (expected counts), and `short` drafts proposed one."""
    per_pos = [truth[0] * (long + short)] + [t * long for t in truth[1:]]
    return {"spec_decode_num_drafts": long + short,
            "spec_decode_num_draft_tokens": len(truth) * long + short,
            "spec_decode_num_accepted_tokens": sum(per_pos),
            "spec_decode_num_accepted_tokens_per_pos": per_pos}


def test_a_window_of_two_draft_lengths_shows_no_rate_it_cannot_tell():
    """k=5 at 1-2 sequences and k=1 above, in one window: position 2 on reached by the k=5
    drafts alone, in a number the counters do not give. Dividing by every draft read 0.95,
    0.10, ... (the published smollm2-cpu candidate): a schedule effect, not acceptance."""
    truth = [0.95, 0.8, 0.7, 0.6, 0.5]
    d = mixed_window(long=100, short=900, truth=truth)
    s = prom.spec_summary(d, draft_ks=[1, 5])
    assert prom.proposing_drafts(1000, 5, [1, 5]) == [1000, None, None, None, None]
    assert s["per_position_rate"] == [pytest.approx(0.95), None, None, None, None]
    assert s["knee_position"] is None
    assert prom.spec_summary(d)["per_position_rate"][1] == pytest.approx(0.08)  # the old reading
    assert s["mean_acceptance_length"] == pytest.approx(1 + (950 + 80 + 70 + 60 + 50) / 1000)
    one = prom.spec_summary(mixed_window(200, 0, [0.9, 0.5, 0.1]), draft_ks=[3])
    assert one["per_position_rate"] == pytest.approx([0.9, 0.5, 0.1])
    assert one["knee_position"] == 3


def test_a_window_of_several_lengths_says_why_its_later_positions_are_not_shown():
    d = prom.window_deltas(BEFORE, AFTER, "w", requests=10, speculation=True,
                           draft_ks=[2, 3, 5])
    fixed = prom.window_deltas(BEFORE, AFTER, "w", requests=10, speculation=True)
    assert d["per_position_rate"][:2] == fixed["per_position_rate"][:2]
    assert d["per_position_rate"][2:] == [None, None, None]
    assert any("draft lengths [2, 3, 5] in one window" in f for f in d["flags"])
    assert not any("draft lengths" in f for f in fixed["flags"])


@pytest.mark.parametrize("name", ["smollm2-cpu", "ksched-h200"])
def test_published_schedule_windows_show_rates_only_where_every_draft_proposed(name):
    """On the published folders: a k-schedule candidate's single-stream windows (one request in
    flight: k=5 only) keep every position; its sweep (up to 16 in flight: k=5 and k=1) shows
    position 1 alone; the fixed-k control keeps every position everywhere."""
    from knee.core import jsonio, rawfiles

    root = ROOT / "results" / name
    for sid in ("1-control", "1-candidate"):
        boot = jsonio.read(root / "receipts" / f"{sid}-boot.json", "boot")
        for inst, positions in (("sweep", 1 if sid == "1-candidate" else 5), ("fixture", 5)):
            stored = [rawfiles.stored(root / "raw" / sid, f"{inst}.{kind}")
                      for kind in ("json", "prom.before", "prom.after")]
            m = prom.window_metrics(jsonio.read(stored[0], "raw"), boot, *stored[1:], 0.2)
            rates = m["per_position_rate"]
            assert len(rates) == 5 and sum(r is not None for r in rates) == positions, (sid, inst)
            assert all(r <= 1 for r in rates if r is not None)
