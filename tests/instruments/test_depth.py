"""The depth curve: band, streaky points excluded with their reason."""

from knee.analyze.stats import decode_rate
from knee.instruments import depth


def point(depth, chunks, tokens=65, span=1.0):
    times = [0.5 + span * i / max(chunks - 1, 1) for i in range(chunks)]
    return {"point": depth, "records": [{
        "warmup": False, "error": None, "t_send": 0.0, "t_first": times[0], "t_last": times[-1],
        "t_done": times[-1], "chunk_times": times, "output_tokens": tokens}]}


def test_flat_curve_band_and_a_streaky_point_excluded_with_its_reason():
    raw = {"points": [point(64, 40), point(256, 41, span=1.05), point(1024, 12),
                      point(1792, 39, span=1.07)]}
    c = depth.curve(raw, decode_rate)
    included = [p["depth"] for p in c["points"] if p["included"]]
    assert included == [64, 256, 1792]
    [out] = [p for p in c["points"] if not p["included"]]
    assert out["depth"] == 1024 and out["reason"].startswith("repetitive continuation: 12 chunks")
    assert round(c["band_pct"], 1) == round((1 - 1 / 1.07) * 100, 1)
