"""What `knee recommend` writes under results/X/recommend/: recommendation.json, README.md,
verify.yaml (the paired run that checks the prediction: an experiment whose `prediction:` names
the recommendation) and recommend.png/.svg."""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from knee.analyze.folder import Named
from knee.analyze.recommend import advice, parts
from knee.core import jsonio, layout
from knee.core.errors import KneeError
from knee.core.records import Config, Plan, Recommendation, Section
from knee.plan import configfile

SCHEDULE_KEY = "speculative_config.num_speculative_tokens_per_batch_size"
NAME_LIMIT = jsonio.schema_file("config")["properties"]["name"]["maxLength"]
K_KEY = "speculative_config.num_speculative_tokens"
PARITY_PCT = 5.0


def folder(root: Path) -> Path:
    return Path(root) / layout.RECOMMEND


def config_of(root: Path) -> list[Path]:
    """The experiment's config: the copy the crate keeps, else the file(s) the plan names."""
    copy_ = Path(root) / layout.CONFIG_COPY
    if copy_.is_file():
        return [copy_]
    return [Path(p) for p in jsonio.read(Path(root) / layout.PLAN)["config_file"].split(" + ")]


def make(plan: Plan, root: Path, named: Named | None = None) -> Recommendation:
    """The recommendation, or the refusal with its reason."""
    try:
        return advice.build(plan, root, named)
    except advice.Refused as e:
        return parts.refused(plan, str(e))


def spec_base(plan: Plan, horizon: int) -> Section:
    """The speculative_config of the arm that drafts at the horizon, without a schedule."""
    for arm in plan["arms"]:
        if advice.fixed_at(plan, arm, horizon):
            spec: Section = copy.deepcopy(plan["arms"][arm]["speculative_config"])
            spec.pop("num_speculative_tokens_per_batch_size", None)
            return spec
    raise KneeError("no arm drafts at the horizon at every batch size")


def verify_arms(rec: Mapping[str, Any], plan: Plan) -> tuple[Section, Section, str | list[str]]:
    """server.speculative_config, the arms and the variable of the verification run: control
    the best fixed k, candidate the recommended schedule."""
    fixed, bands = rec["best_fixed_k"], rec["schedule"]
    spec = spec_base(plan, rec["acceptance"]["horizon"])
    top = max(b[2] for b in bands)
    if len(bands) == 1 and bands[0][2] == fixed:
        return {**spec, "num_speculative_tokens": fixed}, {"control": {}, "candidate": {}}, "none"
    sched = {"num_speculative_tokens_per_batch_size": bands}
    if fixed == 0:  # speculation off is the best fixed setting: the schedule against off
        return ({**spec, "num_speculative_tokens": top, **sched},
                {"control": {"speculative_config": None}, "candidate": {}}, "speculative_config")
    arms = {"control": {}, "candidate": {"speculative_config": dict(sched)}}
    variable: str | list[str] = SCHEDULE_KEY
    if top != fixed:
        arms["candidate"]["speculative_config"]["num_speculative_tokens"] = top
        variable = [K_KEY, SCHEDULE_KEY]
    return {**spec, "num_speculative_tokens": fixed}, arms, variable


def verify_bar(rec: Mapping[str, Any], alpha: float) -> Section:
    """Pre-registered from the prediction: where the schedule's k differs from the fixed k, its
    throughput gain is at least the low end of the predicted gain's interval; where it is the
    same k, parity within PARITY_PCT (what running a schedule costs by itself)."""
    rules, load = [], parts.load()
    for v in rec["verify"]:
        c = v["concurrency"]
        if v["k"] == v["control_k"]:
            rules.append({"name": f"C{c} parity (k={v['k']} in both)", "instrument": load,
                          "metric": "throughput", "point": c, "within_pct": PARITY_PCT})
        else:
            low = math.floor(10 * (v["interval"] or [v["gain_pct"]])[0]) / 10
            rules.append({"name": f"C{c} as predicted (k={v['k']} against {v['control_k']})",
                          "instrument": load, "metric": "throughput", "point": c,
                          "min_gain_pct": max(low, -100.0)})
    return {"alpha": alpha, "rules": rules}


def verify_name(name: str) -> str:
    """The verification experiment's name: the measured one and -verify, within the 100
    characters a name may have (a long name is shortened before the suffix)."""
    suffix = "-verify"
    return name[:NAME_LIMIT - len(suffix)] + suffix


def verify_config(rec: Mapping[str, Any], plan: Plan, config: Config, rec_path: Path) -> Section:
    """The verification experiment: the measured config with the k settings replaced."""
    spec, arms, variable = verify_arms(rec, plan)
    out = {k: copy.deepcopy(v) for k, v in config.items()
           if k not in ("name", "question", "variable", "arms", "bar")}
    out["server"]["speculative_config"] = spec
    sched = rec["schedule"]
    head = {"name": verify_name(plan["name"]),
            "question": (f"Does the schedule {sched} recommended from {plan['name']} deliver "
                         f"the predicted throughput at each concurrency against fixed "
                         f"k={rec['best_fixed_k']}?"),
            "prediction": str(rec_path)}
    return {**head, **out, "variable": variable, "arms": arms,
            "bar": verify_bar(rec, plan["bar"].get("alpha", 0.05))}


def verify_text(rec: Mapping[str, Any], plan: Plan, config_paths: list[Path]) -> str:
    if rec["status"] != "recommended":
        return f"# no verification run: the recommendation was refused ({rec['reason']})\n"
    # paths as the workflow writes them, from the checkout's top: the same text wherever the
    # results folder is read from
    home = Path("results") / plan["name"] / layout.RECOMMEND
    cfg = verify_config(rec, plan, configfile.load_all(config_paths), home / "recommendation.json")
    dumped: str = yaml.safe_dump(cfg, sort_keys=False, width=100)
    return ("# The paired run that checks the recommendation (knee recommend). Run it with\n"
            f"#   snakemake --config experiment={home}/verify.yaml\n" + dumped)


def write(root: Path, config_paths: list[Path], plan: Plan,
          named: Named | None = None) -> Section:
    """Every file of results/X/recommend/, each written atomically (from the folder's files;
    with `named`, knee.analyze.folder.Named, only from those)."""
    from knee.publish.recommend import report

    rec = make(plan, root, named)
    out = folder(root)
    data = jsonio.write(out / "recommendation.json", "recommendation", rec)
    jsonio.atomic_write_text(out / "verify.yaml", verify_text(rec, plan, config_paths))
    jsonio.atomic_write_text(out / "README.md", report.readme(data, plan))
    report.figure(data, out / "recommend")
    return data
