"""Benchmark: where a host's noise lives, within one boot or between boots, from published raw
files (boots nothing).

    python bench/noise_split.py results/noise-h200 [results/aa-h200 ...]

For every sweep point, each run inside a boot is one window: its throughput (output tokens /
wall time) and its per-request decode rate p50. Within-boot noise is the coefficient of
variation over a boot's runs, averaged over the boots; between-boot noise is the coefficient of
variation of the boots' means. The fixture's single-stream decode rate p50 has one window per
boot, so only its between-boot figure is printed. Every boot of an A/A folder counts (its arms
are one config); of any other folder, the control arm's.
"""

import argparse
import statistics
import sys
from pathlib import Path

from knee.analyze import armfigures
from knee.analyze.folder import load_sessions
from knee.analyze.stats import point_summary
from knee.core import jsonio

ROOT = Path(__file__).resolve().parents[1]


def cv_pct(values: list[float]) -> float | None:
    values = [v for v in values if v]
    if len(values) < 2:
        return None
    return statistics.stdev(values) / statistics.mean(values) * 100


def shown(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} %"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", type=Path)
    a = ap.parse_args()
    runs: dict[object, list[list[dict]]] = {}  # point -> boots -> runs' figures
    fixture = []
    for root in a.results:
        plan = jsonio.read(root / "plan.json", "plan")
        for (_, arm), s in sorted(load_sessions(plan, root).items()):
            if arm != "control" and plan["variable"] != "none":
                continue
            by_point: dict[object, list[dict]] = {}
            for p in s["raw"]["sweep"]["points"]:
                by_point.setdefault(p["point"], []).append(point_summary(p))
            for point, got in by_point.items():
                runs.setdefault(point, []).append(got)
            if "fixture" in s["raw"]:
                fixture.append(armfigures.arm_figures(s["raw"]["fixture"])["all"]["decode_rate_p50"])
    print(f"{sum(len(b) for b in runs.values()) // max(len(runs), 1)} boots from "
          f"{', '.join(str(r) for r in a.results)}")
    print("point | runs per boot | metric | within-boot CV | between-boot CV")
    for point, boots in sorted(runs.items(), key=lambda kv: str(kv[0])):
        for metric in ("throughput", "decode_rate_p50"):
            within = [cv_pct([r[metric] for r in b]) for b in boots]
            within = [w for w in within if w is not None]
            means = [statistics.mean([r[metric] for r in b]) for b in boots]
            print(f"c={point} | {min(len(b) for b in boots)} | {metric} | "
                  f"{shown(statistics.mean(within) if within else None)} | "
                  f"{shown(cv_pct(means))}")
    print(f"fixture | 1 | decode_rate_p50 (single stream) | n/a | {shown(cv_pct(fixture))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
