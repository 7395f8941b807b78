"""The bar's figure: a row per rule with its pairs' effects, the interval that decided, the
margin or threshold, and the verdict, as the verdict used them."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.collections import LineCollection, PolyCollection

from knee.publish import rulefig


def judged(name: str, verdict: str, deltas: list[float], interval: list[float]) -> dict:
    pairs = [{"pair": i + 1, "control": 100.0, "candidate": 100.0 * (1 + d / 100),
              "delta_pct": d} for i, d in enumerate(deltas)]
    return {"rule": name, "verdict": verdict, "estimate": sum(interval) / 2,
            "interval": interval, "confidence": 0.9, "per_pair": pairs}


def drawn(bar: dict):
    plan = {"bar": {"rules": [{"name": "parity", "within_pct": 1.5},
                              {"name": "gain", "min_gain_pct": 5}]}}
    fig, ax = plt.subplots()
    rulefig.draw(ax, plan, {"rows": []}, bar)
    return fig, ax


def test_each_rule_shows_its_pairs_interval_threshold_and_verdict():
    bar = {"rules": [judged("parity", "PASS", [-0.5, 0.2, 0.4], [-0.6, 0.7]),
                     judged("gain", "FAIL", [-3.0, -1.0, -2.0, -2.5], [-3.2, -0.9])]}
    fig, ax = drawn(bar)
    points = [c.get_offsets() for c in ax.collections if c.get_offsets().shape[0] > 1]
    xs = sorted(round(float(x), 6) for pts in points for x, _ in pts)
    assert xs == sorted(round(d, 6) for r in bar["rules"] for d in
                        (p["delta_pct"] for p in r["per_pair"]))
    # the first rule on top, each pair near its rule's row
    ys = {round(float(x), 6): float(y) for pts in points for x, y in pts}
    assert all(abs(ys[round(d, 6)] - 1) <= 0.25 for d in (-0.5, 0.2, 0.4))
    assert all(abs(ys[round(d, 6)]) <= 0.25 for d in (-3.0, -1.0, -2.0, -2.5))
    assert [t.get_text() for t in ax.get_yticklabels()] == ["gain", "parity"]
    assert [t.get_text() for t in ax.texts] == ["PASS", "FAIL"]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["a pair", "estimate and interval", "parity margin", "gain threshold"]
    # the parity rule's margin shaded on its row, the gain rule's threshold dashed on its own
    shaded = [c.get_paths()[0].get_extents() for c in ax.collections
              if isinstance(c, PolyCollection)]
    assert [(b.x0, b.x1, b.y0, b.y1) for b in shaded] == [(-1.5, 1.5, 0.6, 1.4)]
    dashed = [c.get_segments() for c in ax.collections if isinstance(c, LineCollection)
              and c.get_linestyle()[0][1] is not None]
    assert [[tuple(map(float, xy)) for xy in seg] for segs in dashed for seg in segs] == [
        [(5.0, -0.4), (5.0, 0.4)]]
    plt.close(fig)


def test_a_bar_that_judged_no_rule_says_so():
    fig, ax = drawn({"rules": [{"rule": "parity", "verdict": "INVALID"}]})
    assert [t.get_text() for t in ax.texts] == ["no rule was judged"]
    plt.close(fig)


def test_one_pair_has_its_point_and_estimate_without_an_interval():
    one = judged("parity", "INCONCLUSIVE", [0.8], [0.0, 0.0])
    one["interval"], one["estimate"] = None, 0.8
    fig, ax = drawn({"rules": [one]})
    assert [t.get_text() for t in ax.texts] == ["INCONCLUSIVE"]
    assert not [c for c in ax.collections if isinstance(c, LineCollection)
                and c.get_linestyle()[0][1] is None]  # no interval drawn
    plt.close(fig)
