"""The paired figure: where both arms send the same requests, the geometric mean over requests
of the decode rate makes a pair's log ratio the mean of each request's own log ratio, however
far the requests' levels differ."""

import math
import random

from knee.analyze import armfigures, inference


def test_the_paired_figure_is_the_mean_of_each_requests_own_log_ratio():
    rng = random.Random(3)
    rates = [rng.uniform(20, 200) for _ in range(16)]  # four classes' spread of levels
    change = [rng.gauss(-0.015, 0.01) for _ in rates]

    def raw(rs):
        return {"instrument": "fixture", "points": [
            {"point": "code", "run": 1, "wall_s": 1.0, "records": [
                {"warmup": False, "t_send": 0.0, "t_first": 0.1, "t_last": 0.1 + 63 / r,
                 "t_done": 0.1 + 63 / r, "output_tokens": 64, "chunks": 64} for r in rs]}]}

    a = armfigures.arm_figures(raw(rates))
    b = armfigures.arm_figures(raw([r * math.exp(c) for r, c in zip(rates, change, strict=True)]))
    paired = inference.log_ratio(a["all"]["decode_rate_gmean"], b["all"]["decode_rate_gmean"])
    assert math.isclose(paired, sum(change) / len(change), rel_tol=1e-9)
    assert a["code"]["decode_rate_gmean"] == a["all"]["decode_rate_gmean"]
