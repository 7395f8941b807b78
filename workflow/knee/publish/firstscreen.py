"""The README's first screen: a title that gives the verdict with the rule that decided it (its
estimate and the interval that decided, at the bar's level), and under it at most five lines
that change how to read it: the model and engine, and the caveats (confounds, fragile rules,
pairs split over hosts, random weights, the adjustment, figures withheld)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from knee.core import layout
from knee.core.records import Plan
from knee.plan.adjust import engine_name
from knee.publish import mdtext
from knee.publish.numbers import ci, pctf

BOX_LINES = 5
CONFOUND_WORDS = {"engine change": "changes the engine made on its own",
                  "engine argument": "engine arguments beyond the variable",
                  "output length": "output lengths that differ between the arms",
                  "output tokens": "different tokens for the same requests"}


def deciding(bar: Mapping[str, Any]) -> int | None:
    """The rule that decided the bar's verdict (the rules' own where it is CONFOUNDED): the
    first whose verdict is theirs; None where the bar has no rules."""
    rules = bar.get("rules") or []
    want = bar.get("rules_verdict") or bar["verdict"]
    return next((i for i, r in enumerate(rules) if r["verdict"] == want), 0 if rules else None)


def headline(comparison: Mapping[str, Any], bar: Mapping[str, Any]) -> str:
    """The verdict and the deciding rule's estimate with the interval that decided it."""
    if comparison["verdict"] != "VALID":
        return "comparison INVALID: the arms did not see the same requests"
    verdict = f"bar {bar['verdict']}" + (f" (the rules alone: {bar['rules_verdict']})"
                                         if bar.get("rules_verdict") else "")
    if (i := deciding(bar)) is None:
        return verdict
    r = bar["rules"][i]
    estimate = pctf(r.get("estimate"))
    if r.get("estimate") is not None:
        estimate = f"[{estimate}]({layout.BAR}#/rules/{i}/estimate)"
    out = (f"{verdict}: {mdtext.text(r['rule'])} {estimate}, {100 * r['confidence']:g}% "
           f"interval {ci(r.get('interval'))} (its test: {r['test']})")
    if bar["verdict"] == "INCONCLUSIVE":
        needed = [x.get("pairs_needed") for x in bar["rules"] if x["verdict"] == "INCONCLUSIVE"]
        out += (f"; about {max(needed)} pairs would resolve it" if None not in needed
                else "; more pairs would not resolve every rule at these estimates")
    return out


def engine_words(plan: Plan, boots: Sequence[Mapping[str, Any]], pairs: int) -> str:
    """The model, the engine build and the hardware, as the boot receipts record them."""
    boot = boots[0] if boots else {}
    build = engine_name((boot.get("engine") or {}).get("packages")
                        if isinstance(boot.get("engine"), dict) else None)
    engine = build if build != "unknown" else "the engine of the receipts"
    hw = boot.get("hardware") or {}
    gpus = [g.get("name") for g in hw.get("nvml") or []]
    where = f"{len(gpus)} × {gpus[0]}" if gpus and gpus[0] else (
        f"{hw['cpus']} CPUs ({hw.get('cpu_model') or 'model unknown'})" if hw.get("cpus")
        else "CPUs")
    hosts = {(b.get("hardware") or {}).get("boot_id") for b in boots} - {None}
    model = plan["model"]
    named = (model.get("packaged") or {}).get("package") or model["name"]
    return (f"**Model and engine**: {mdtext.text(named)}"
            + (" (random weights: timing only)" if model.get("generated") else "")
            + f", {mdtext.text(engine)} on {mdtext.text(where)}; {pairs} boot pairs"
            + (f" over {len(hosts)} hosts" if len(hosts) > 1 else ""))


def caveat_lines(comparison: Mapping[str, Any], bar: Mapping[str, Any]) -> list[str]:
    """What changes how to read the verdict, a line each (the Caveats section says more)."""
    out = []
    if found := bar.get("confounds"):
        kinds = list(dict.fromkeys(CONFOUND_WORDS.get(d["kind"], d["kind"]) for d in found))
        out.append(f"**CONFOUNDED**: {' and '.join(kinds)}, which the bar did not expect "
                   f"([bar.json](comparison/bar.json#/confounds))")
    fragile = [(r["rule"], (r.get("robustness") or {}).get("why") or [])
               for r in bar.get("rules", []) if (r.get("robustness") or {}).get("fragile")]
    if fragile:
        out.append("**Fragile**: " + "; ".join(
            f"{mdtext.text(rule)} ({mdtext.text(', '.join(why))})" for rule, why in fragile))
    if (bar.get("hosts") or {}).get("split_pairs"):
        split = [str(s["pair"]) for s in bar["hosts"]["split_pairs"]]
        which = f"pair {split[0]}" if len(split) == 1 else f"pairs {', '.join(split)}"
        out.append(f"**Split pairs**: {which} ran on two hosts; see Caveats for the rules "
                   f"that rest on them")
    adjusted = [r for r in bar.get("rules", []) if r.get("adjustment")]
    if adjusted:
        applied = [r for r in adjusted if r["adjustment"].get("applied")]
        out.append("**Adjusted for the host's speed**: " + (
            ", ".join(mdtext.text(r["rule"]) for r in applied) if applied else
            "no: the adjustment was withheld, each rule judged as measured (see Caveats)"))
    if comparison.get("sampling_withheld"):
        temps = sorted({w["temperature"] for w in comparison["sampling_withheld"]})
        out.append("**Withheld**: figures sampled at temperature "
                   + ", ".join(f"{t:g}" for t in temps) + " (the engine did not sample as asked)")
    return out


def box(plan: Plan, comparison: Mapping[str, Any], bar: Mapping[str, Any],
        boots: Sequence[Mapping[str, Any]]) -> list[str]:
    """At most BOX_LINES lines under the title: the model and engine, then the caveats (what
    does not fit is named in the last line, and every one is under Caveats)."""
    lines = [engine_words(plan, boots, bar.get("pairs") or 0), *caveat_lines(comparison, bar)]
    if len(lines) > BOX_LINES:
        lines = [*lines[:BOX_LINES - 1], "and more under Caveats"]
    return lines
