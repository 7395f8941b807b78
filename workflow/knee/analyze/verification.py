"""A verification run's prediction against what it measured (comparison.json's prediction): its
sweep throughput per arm and concurrency against the registered recommendation's prediction at
the arm's k there, the candidate's change against the control predicted and measured, and the
errors' medians, so that `knee trace` reaches every number the README gives of them."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from knee.analyze.recommend import parts
from knee.core.records import Plan, Recommendation, Section


def section(plan: Plan, comparison: Mapping[str, Any], rec: Recommendation,
            here: float | None) -> Section:
    """comparison.json's prediction: rows (per arm and concurrency: predicted, its interval,
    measured, error_pct), changes (per concurrency: predicted_pct and its interval,
    measured_pct and its interval, difference_pct), the median and largest absolute error,
    the median absolute change difference, and the engine CPU's speed in both runs (here:
    this run's, over its load windows)."""
    rows = parts.predicted_vs_measured(rec, plan, comparison)
    errors = [abs(r["error_pct"]) for r in rows]
    changes = parts.predicted_changes(rec, plan, comparison)
    then = rec.get("sweep_cpu_speed")
    return {"rows": rows, "changes": changes,
            "change_median_abs": statistics.median(abs(c["difference_pct"]) for c in changes)
            if changes else None,
            "median_abs": statistics.median(errors) if errors else None,
            "max_abs": max(errors) if errors else None,
            "speed": {"measured_run": then, "this_run": here,
                      "difference_pct": 100 * (here - then) / then} if here and then else None}
