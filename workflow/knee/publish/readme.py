"""The results README and comparison.md, rendered from derived files (jinja2)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from knee import instruments
from knee.analyze import inference
from knee.analyze.adjust import covariate, design
from knee.analyze.window import held
from knee.core.records import Plan, Section, StopReceipt
from knee.plan import runtimes, stopping
from knee.plan.arms import NO_VARIABLE, shown_variable, variable_values
from knee.plan.summary import order_name
from knee.publish import firstscreen, mdtext, rulefig, together
from knee.publish.numbers import ci, fmt, level, pctf
from knee.publish.templating import templates


def ms(hist: Section | None) -> str:
    """A server histogram's window mean, in milliseconds."""
    return "–" if not hist or hist.get("mean") is None else f"{hist['mean'] * 1000:.2f}"


def positions(rates: list[float | None], at: str) -> str:
    """Per-position rates, each linked to its place in the file ("n/a" where the drafts that
    proposed a position cannot be told)."""
    return ", ".join("n/a" if r is None else f"[{r:.2f}]({at}/{i})" for i, r in enumerate(rates))


def in_folder(path: str | Path) -> str:
    """A window's file as the README links it: relative to the results folder
    (raw/<session>/<file>), whatever the folder is called or where it lies."""
    return "/".join(Path(path).parts[-3:])


def pair_range(per_pair: Sequence[Mapping[str, Any]]) -> tuple[int | None, int | None]:
    """The places of the lowest and highest per-pair effect (None, None where none is known)."""
    known = [i for i, p in enumerate(per_pair) if p.get("delta_pct") is not None]
    if not known:
        return None, None
    return (min(known, key=lambda i: per_pair[i]["delta_pct"]),
            max(known, key=lambda i: per_pair[i]["delta_pct"]))


def hosts(boots: Sequence[Mapping[str, Any]]) -> list[Section]:
    """Where a folder was measured over several hosts (one GPU lease after another): each
    host's boot id, its GPUs and the sessions it measured; empty where one host measured all
    (or the receipts do not say)."""
    found: dict[str, Section] = {}
    for b in boots:
        hw = b.get("hardware") or {}
        if hw.get("boot_id"):
            host = found.setdefault(hw["boot_id"], {
                "boot_id": hw["boot_id"], "sessions": [],
                "gpus": [g.get("uuid") for g in hw.get("nvml") or []]})
            host["sessions"].append(b["session"])
    return list(found.values()) if len(found) > 1 else []


def rule_caveat(r: Section) -> str | None:
    """A rule that did not pass, in words, with what it would take to resolve it."""
    if r["verdict"] == "PASS":
        return None
    r = {**r, "rule": mdtext.text(r["rule"]),
         "reason": r.get("reason") and mdtext.text(r["reason"])}
    if r["verdict"] == "INVALID":
        return f"{r['rule']}: INVALID ({r.get('reason')})."
    where = f"estimate {pctf(r['estimate'])}, interval {ci(r['interval'])}"
    if r["verdict"] == "FAIL":
        return f"{r['rule']}: FAIL ({where}; {r['test']} is ruled out)."
    need = (f"about {r['pairs_needed']} pairs would resolve it at this estimate and spread"
            if r.get("pairs_needed") else r.get("reason") or "more pairs would not resolve it "
            "at this estimate (it sits on the threshold)")
    return f"{r['rule']}: INCONCLUSIVE ({where}, {r['test']} neither shown nor ruled out; {need})."


EXTERNAL = runtimes.EXTERNAL_CAVEAT
# the README's number formats, handed to an instrument's caveats (knee.instruments.Derived)
WORDS = SimpleNamespace(fmt=fmt, pct=pctf, interval=ci, level=level, text=mdtext.text)


def split_caveats(bar: Mapping[str, Any]) -> list[str]:
    """A rule whose verdict changes without the pairs that ran on two hosts rests on them."""
    hosts = bar.get("hosts")
    if not hosts or not hosts["split_pairs"]:
        return []
    split = [str(s["pair"]) for s in hosts["split_pairs"]]
    pairs, it = (f"pair {split[0]}", "it") if len(split) == 1 else \
        (f"pairs {', '.join(split)}", "them")
    verdict = {r["rule"]: r["verdict"] for r in bar["rules"]}
    out = []
    for i, r in enumerate(hosts["rules"]):
        alone = r["without_split_pairs"]
        if alone["verdict"] != verdict[r["rule"]]:
            out.append(
                f"{mdtext.text(r['rule'])}: its {verdict[r['rule']]} rests on {pairs}, "
                f"whose sessions ran on two hosts; without {it} the rule is {alone['verdict']} "
                f"(estimate {pctf(alone['estimate'])}, interval {ci(alone['interval'])}; "
                f"[bar.json](comparison/bar.json#/hosts/rules/{i}/without_split_pairs)).")
    return out


def caveats(comparison: Mapping[str, Any], bar: Mapping[str, Any],
            acceptance: Mapping[str, Any] | None = None,
            runtime: runtimes.Runtime = runtimes.RUNTIMES["process"]) -> list[str]:
    out = [runtime.caveat] if runtime.caveat else []
    for w in (acceptance or {}).get("windows", []):
        for flag in w["flags"]:
            out.append(f"{w['session']}/{w['instrument']}: {flag} ({in_folder(w['source'])}).")
    if bar.get("bar_changed"):
        out.append("The bar was changed after measurement; the verdict is not pre-registered.")
    if comparison["verdict"] != "VALID":
        out.append("Validation failed; no delta is shown. See comparison.md for what differs.")
    for _, section in instruments.derived():
        if section.caveats:
            out += section.caveats(comparison.get(section.key, []), comparison, WORDS)
    out += [f"{flag}." for flag in comparison.get("host_flags", [])]
    out += [speed_caveat(comparison["host_speed"])] if comparison.get("host_speed") else []
    out += [gpu_caveat(comparison["gpu"])] if comparison.get("gpu") else []
    out += [f"Engine-side difference beyond the variable ({d['kind']}, "
            f"{' and '.join(d['arms'])}): {mdtext.text(d['what'])} "
            "([comparison.json](comparison/comparison.json#/engine_differences))."
            for d in comparison.get("engine_differences", [])]
    out += same_work_lines(comparison.get("same_work", []))
    out += held.caveats(comparison.get("windows_not_held", []))
    out += [f"{w['session']}/{w['instrument']}: the raw records disagree with the server's "
            f"own counters ({mdtext.text(w['why'])}), so the comparison is INVALID "
            "([comparison.json](comparison/comparison.json#/counter_disagreements))."
            for w in comparison.get("counter_disagreements", [])]
    out += sampling_lines(comparison)
    work = [d for d in bar.get("confounds", []) if d["kind"] == "output tokens"]
    if work:
        out.append(f"The verdict is CONFOUNDED (the rules alone: {bar['rules_verdict']}): the "
                   "arms generated different tokens for the same requests, beyond the bar's "
                   "max_divergent_share: " + "; ".join(mdtext.text(d["what"]) for d in work)
                   + " ([bar.json](comparison/bar.json#/confounds)).")
    if len(work) < len(bar.get("confounds", [])):
        out.append(f"The verdict is CONFOUNDED (the rules alone: {bar['rules_verdict']}): the "
                   "engine ran the arms differently beyond the variable, and the bar did not "
                   "expect it (bar.expected_engine_differences): "
                   + "; ".join(mdtext.text(d["what"]) for d in bar["confounds"]
                               if d["kind"] != "output tokens")
                   + " ([bar.json](comparison/bar.json#/confounds)).")
    out += [c for c in map(rule_caveat, bar.get("rules", [])) if c]
    out += split_caveats(bar)
    if comparison.get("simultaneous") and runtime.compile_cache:
        out.append(SHARED_CACHE)
    out += together.turn_caveats(comparison.get("interleaved"))
    return out


def sampling_lines(comparison: Mapping[str, Any]) -> list[str]:
    """What the sampling checks withheld, could not decide, and judged otherwise than the
    receipts recorded."""
    link = "([comparison.json](comparison/comparison.json#/{}))."
    out = [f"Nothing sampled at temperature {w['temperature']:g} is reported (acceptance or "
           f"decode) for sessions {', '.join(w['sessions'])}: {mdtext.text(w['why'])} "
           + link.format("sampling_withheld") for w in comparison.get("sampling_withheld", [])]
    out += [f"The engine's sampling at temperature {w['temperature']:g} is unchecked in sessions "
            f"{', '.join(w['sessions'])}: {mdtext.text(w['why'])}; nothing is withheld for it "
            + link.format("sampling_undecided") for w in comparison.get("sampling_undecided", [])]
    changed: dict[tuple[float, bool | None, bool | None], list[str]] = {}
    for r in comparison.get("sampling_rejudged", []):
        changed.setdefault((r["temperature"], r["recorded"], r["rejudged"]), []).append(
            r["session"])
    word = {True: "passed", False: "failed", None: "undecided"}
    out += [f"The boot receipts of sessions {', '.join(ids)} record the sampling check at "
            f"temperature {t:g} as {word[a]}, judged as the check stood when they were "
            f"measured; their records, judged again by the check as it stands, give "
            f"{word[b]}, and the re-judgment decides " + link.format("sampling_rejudged")
            for (t, a, b), ids in changed.items()]
    return out


def same_work_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Whether the arms generated the same tokens for the same requests: one line where every
    paired request did, else one per point where some did not."""
    if not rows:
        return []
    link = "([comparison.json](comparison/comparison.json#/same_work))"
    eos = [f"{r['instrument']} {mdtext.text(str(r['point']))} "
           f"{100 * r['ended_at_eos']['control']:.0f} % / "
           f"{100 * r['ended_at_eos']['candidate']:.0f} %"
           for r in rows if any((r.get("ended_at_eos") or {}).values())]
    ended = [f"Requests that ended at end-of-sequence, not at max_tokens (control / candidate): "
             f"{'; '.join(eos)} {link}."] if eos else []
    apart = [r for r in rows if r["identical"] < r["paired"]]
    if not apart:
        return [f"Both arms generated identical tokens for every one of the "
                f"{sum(r['paired'] for r in rows)} paired requests, over {len(rows)} points "
                f"{link}.", *ended]
    return ended + [f"{r['instrument']} point {mdtext.text(str(r['point']))}: {r['identical']} of "
            f"{r['paired']} paired requests generated identical tokens in both arms "
            f"({100 * r['identical_share']:.1f} %)"
            + (f"; the others first differ at token {r['first_difference_median']:g} (median)"
               if r["first_difference_median"] is not None else "") + f" {link}."
            for r in apart]


SHARED_CACHE = ("The two sessions of each pair booted at once over one compile cache "
                "(runtime.cache_dir): what a cache receipt says its boot wrote may include its "
                "partner's writes.")


def workload_caveats(plan: Plan, names: list[str] | None = None) -> list[str]:
    """What the acceptance figures were measured on, where that is not a trained model's drafts
    on its own answers to real prompts: random weights, random-word prompts (of `names`, the
    instruments the figures come from; every one of the plan's by default), forced length."""
    out = []
    if plan["model"].get("generated"):
        out.append("The model has random weights (model.generate): acceptance, per position and "
                   "per class, and any k chosen from it describe no trained model's drafts.")
    names = instruments.instrument_names(plan) if names is None else names
    if random := [n for n in names if instruments.get(n).random_prompts
                  and not (plan["instruments"].get(n) or {}).get("dataset")]:
        named = " and ".join([", ".join(random[:-1]), random[-1]] if len(random) > 1 else random)
        out.append(f"The prompts of the {named} are random words (exact-length "
                   "prompts from knee's word list): acceptance measured on them is the model's "
                   "on text no user sends (the fixture's classes are prompts of their kind).")
    if not plan["instruments"].get("stop_at_eos"):
        out.append("Every request generates exactly its max_tokens, past its end-of-sequence "
                   "token (ignore_eos): acceptance is measured on forced text as well as on the "
                   "model's own answers (instruments.stop_at_eos lets requests end there).")
    return out


def speed_caveat(speed: Section) -> str:
    lo, hi = speed["range"]
    follows = ", ".join(f"{r['rule']} {r['correlation']:+.2f}" for r in speed["rules"])
    return (f"The engine's CPU ran at {lo:.1f}–{hi:.1f} M additions/s during the windows "
            f"(spread {speed['spread_pct']:.0f} %; a fixed piece of work timed while each window "
            "ran, [comparison.json](comparison/comparison.json#/host_speed))"
            + (f"; correlation over the boots between that speed and each bar figure: {follows}"
               " (near +1: the figure moves with the host's speed, not the server's)"
               if follows else "") + ".")


def gpu_caveat(clocks: Section) -> str:
    lo, hi = clocks["range"]
    follows = ", ".join(f"{r['rule']} {r['correlation']:+.2f}" for r in clocks["rules"])
    seen = ", ".join(clocks["reasons_seen"]) or "none"
    return (f"The GPUs' SM clock was {lo:.0f}–{hi:.0f} MHz during the windows (median of "
            f"each window's samples, spread {clocks['spread_pct']:.1f} %; clock-event reasons "
            f"seen: {seen}; [comparison.json](comparison/comparison.json#/gpu))"
            + (f"; correlation over the boots between that clock and each bar figure: {follows}"
               if follows else "") + ".")


def protocol_words(plan: Plan, bar: Mapping[str, Any]) -> str:
    lo, hi = stopping.bounds(plan["protocol"]["pairs"])
    if lo == hi:
        return f"{hi} pairs"
    return (f"{lo} to {hi} pairs, stopping by precision ({stopping.RULE}): "
            f"{bar.get('pairs')} pairs ran, every look in [protocol/realized.json]"
            "(protocol/realized.json)")


def sampling_words(plan: Plan) -> str:
    """How every request of every window sampled (knee.core.prompts.sampling_params)."""
    sampling = plan["instruments"].get("sampling")
    if not sampling:
        return "temperature 0"
    shown = ", ".join(f"{k} {sampling[k]}" for k in ("temperature", "top_p", "top_k")
                      if k in sampling)
    return (f"sampled ({shown}), request i of a window seeded with instruments.seed + i, "
            "the same in every session")


def shared_key(caches: Mapping[str, Section]) -> str | None:
    """Whether the arms compiled under the same cache key (the seed: the schedule did not
    change the hash), in words; None without cache receipts."""
    keys: dict[str, set[str]] = {}
    for c in caches.values():
        keys.setdefault(c["arm"], set()).update(c["keys"])
    if set(keys) != {"control", "candidate"}:
        return None
    if keys["control"] == keys["candidate"]:
        return (f"both arms compiled under the same cache key "
                f"(`{', '.join(k[:12] for k in sorted(keys['control']))}`)")
    return (f"the arms compiled under different cache keys (control "
            f"`{', '.join(k[:12] for k in sorted(keys['control']))}`, candidate "
            f"`{', '.join(k[:12] for k in sorted(keys['candidate']))}`)")


def predicted(plan: Plan, comparison: Mapping[str, Any]) -> Section | None:
    """A verification run's predicted against measured (comparison.json's prediction), with
    the registered recommendation's file and its link."""
    if "prediction" not in comparison:
        return None
    file = plan["prediction"]["file"]
    # linked as the published folders lie side by side (results/NAME), wherever this one is
    return {**comparison["prediction"], "file": file,
            "link": os.path.relpath(file, f"results/{plan['name']}")}


def conditional(rates: list[float | None] | None) -> str:
    """Per draft position, the chance it is accepted given the one before it was: a_i / a_i-1
    (the first position's is its own rate; none where the one before was never accepted; n/a
    where either rate cannot be told)."""
    rates = rates or []

    def one(i: int, r: float | None) -> str:
        before = rates[i - 1] if i else 1.0
        if r is None or before is None:
            return "n/a"
        return "none" if not before else f"{r / before:.2f}"
    return ", ".join(one(i, r) for i, r in enumerate(rates))


def figure_key(r: Mapping[str, Any]) -> tuple[str, str, str]:
    return r["instrument"], str(r["point"]), r["metric"]


def decided_by(bar: Mapping[str, Any]) -> dict[tuple[str, str, str], int]:
    """The bar rule (its index; the first, where two judge one figure) that decides each figure
    over the pairs: the README shows that effect once, as the rule decided it, at the bar's
    level."""
    out: dict[tuple[str, str, str], int] = {}
    for i, r in enumerate(bar.get("rules") or []):
        if r.get("estimate") is not None and r.get("interval"):
            out.setdefault(figure_key(r), i)
    return out


def render(plan: Plan, comparison: Mapping[str, Any], bar: Mapping[str, Any],
           boots: Sequence[Mapping[str, Any]], acceptance: Mapping[str, Any],
           caches: Mapping[str, Section] | None = None,
           stops: Mapping[str, StopReceipt] | None = None,
           recommendation: Mapping[str, Any] | None = None) -> str:
    """The results README."""
    env = templates(html=False)
    tables = []
    decided = decided_by(bar)
    for inst, spec in instruments.REGISTRY.items():
        rows = [{**r, "index": i, "rule": decided.get(figure_key(r)) if r["pair"] == "all"
                 else None} for i, r in enumerate(comparison["rows"]) if r["instrument"] == inst]
        if rows:
            tables.append({"title": spec.title, "rows": rows})
    order = (f"{order_name(plan['protocol']['order'])}: "
             + ", ".join(s["id"] for s in plan["protocol"]["sessions"]))
    return mdtext.fold(env.get_template("README.md.j2").render(
        plan=plan, comparison=comparison, bar=bar, boots=boots, tables=tables, order=order,
        acceptance=acceptance["windows"], variable_values=variable_values(plan),
        variable=shown_variable(plan["variable"]),
        rel=in_folder,
        caveats=(caveats(comparison, bar, acceptance, runtimes.of(plan))
                 + workload_caveats(plan)),
        fmt=fmt, pctf=pctf, ci=ci, ms=ms, pair_range=pair_range,
        positions=positions,
        probes=[w for w in acceptance["windows"]
                if w.get("temperatures") and instruments.get(w["instrument"]).temperatures],
        by_point=[w for w in acceptance["windows"]
                  if w.get("temperatures") and not instruments.get(w["instrument"]).temperatures],
        conditional=conditional,
        over_boots=acceptance.get("over_boots", []),
        headline=firstscreen.headline(comparison, bar), caches=caches or {},
        box=firstscreen.box(plan, comparison, bar, boots),
        used={sid: s["resources"] for sid, s in (stops or {}).items() if "resources" in s},
        calibration=(inference.false_positives(comparison["rows"])
                     if plan["variable"] == NO_VARIABLE else None),
        protocol_words=protocol_words(plan, bar), sampling_words=sampling_words(plan),
        figures=[f for f in instruments.figures(plan) if f.listed],
        rules_figure={"name": rulefig.NAME, "alt": rulefig.ALT}, level=level,
        shared_key=shared_key(caches or {}), recommendation=recommendation,
        predicted=predicted(plan, comparison),
        adjusted=design.realized(plan, bar),
        speed_method=covariate.METHODS[covariate.name_of(comparison)],
        hosts=hosts(boots), pair_sets=together.pair_sets(plan, comparison)))
