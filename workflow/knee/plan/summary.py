"""A plan in a few lines, as every invocation shows it (dry runs included), and the words for
its pair order."""

from __future__ import annotations

from knee import instruments
from knee.core import rulekinds
from knee.core.records import Plan, PlannedSession
from knee.plan import stopping
from knee.plan.arms import NO_VARIABLE, shown_variable, variable_values


def describe(plan: Plan) -> str:
    """A short human summary of a plan (shown by every invocation, dry runs included)."""
    values = variable_values(plan)
    rules = "; ".join(
        f"{r['name']}: {r['instrument']} {r['metric']} @ {r['point']} "
        + rulekinds.summary_words(r)
        for r in plan["bar"]["rules"])
    change = (f"  variable {shown_variable(plan['variable'])}: control={values['control']!r} "
              f"candidate={values['candidate']!r}" if plan["variable"] != NO_VARIABLE else
              "  variable none: an A/A experiment, both arms identical")
    lo, hi = stopping.bounds(plan["protocol"]["pairs"])
    pairs = f"{hi} pairs" if lo == hi else f"{lo} to {hi} pairs, stopping by precision"
    lines = [
        f"knee plan: experiment {plan['name']} ({plan['runtime']['kind']} runtime, "
        f"model {plan['model']['name']})",
        change,
        f"  sessions ({pairs}, {order_name(plan['protocol']['order'])} order): "
        + session_order(plan["protocol"]["sessions"]),
        "  " + "; ".join(instrument_lines(plan)),
        f"  bar (alpha {plan['bar']['alpha']}, sha256 {plan['bar_sha256'][:12]}): "
        + rules,
    ]
    return "\n".join(lines)


def instrument_lines(plan: Plan) -> list[str]:
    """Each planned instrument's own summary (its Spec's), in the order a session runs them."""
    return [summary(plan["instruments"][name]) for name in instruments.instrument_names(plan)
            if (summary := instruments.get(name).summary) is not None]


def session_order(sessions: list[PlannedSession]) -> str:
    """The boot order; in simultaneous order each pair's two sessions at once, with the CPUs
    and GPUs of each."""
    if not all("together" in s for s in sessions):
        return " -> ".join(s["id"] for s in sessions)
    def where(s: PlannedSession) -> str:
        placed = [f"CPUs {s['cpus']}"] if "cpus" in s else []
        placed += [f"GPUs {s['gpus']}"] if "gpus" in s else []
        return str(s["id"]) + (f" ({', '.join(placed)})" if placed else "")
    pairs = sorted({s["pair"] for s in sessions})
    return " -> ".join(" + ".join(where(s) for s in sessions if s["pair"] == p) for p in pairs)


def order_name(order: str | list[str]) -> str:
    return order if isinstance(order, str) else "fixed " + "-".join(order)
