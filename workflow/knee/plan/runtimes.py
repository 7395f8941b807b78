"""What each runtime kind is, declared once: the rules, the plan's checks, the session, the
README and the audit ask these facts, never the kind's name. How a runtime boots and stops its
engine is its measurement module's (knee.measure.runtime.<kind>, picked by
knee.measure.session.LAUNCH); everything else the workflow needs to know of it is here, in the
plan layer, so that the rules and the publishing code read it without importing measurement.

A new runtime: a `Runtime` here, its module under knee/measure/runtime/ with a launch function
in knee.measure.session.LAUNCH, and its config section in workflow/schemas/config.schema.yaml.

One name each, everywhere: `rt` is a plan's (or config's) runtime section, the dict under
`runtime:`; `runtime` is the `Runtime` it names (`of(plan)`, `of_section(rt)`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Runtime:
    kind: str
    boots: bool  # knee starts and stops the server (else it measures one an operator runs)
    compile_cache: bool  # knee sees the engine's compile cache: a cache receipt per session
    child_process: bool  # the engine is knee's child: its peak memory, its listening sockets
    image: bool  # boots a pinned container image (runtime.image, rule image)
    engine_env: bool  # may name an engine environment (runtime.engine)
    gpu_ids: bool  # runtime.gpus is a list of device ids: CUDA_VISIBLE_DEVICES, read by NVML
    facts_receipt: str | None  # receipts/<this> describes the engine before any session
    # (None: the engine environment's own facts file, knee-engine.json)
    model_check: str | None  # model.path: "model" (config.json and tokenizer here), "dir"
    # (a folder mounted into the container), None (the operator's server has its own)
    cleanup_flags: str = ""  # what `knee cleanup` needs to stop what an interrupted run left
    caveat: str | None = None  # the README's first caveat


EXTERNAL_CAVEAT = (
    "knee did not boot these servers (runtime.kind external): it cannot show that they "
    "ran the config's arms, that nothing else used them while they were measured, in "
    "what order they booted or what their compile caches held; each pair is a pair of "
    "windows on the same two running servers, so an interval over pairs is over windows, "
    "not boots, and says nothing of boot-to-boot noise.")

RUNTIMES = {
    "process": Runtime("process", boots=True, compile_cache=True, child_process=True,
                       image=False, engine_env=True, gpu_ids=True, facts_receipt=None,
                       model_check="model"),
    "docker": Runtime("docker", boots=True, compile_cache=True, child_process=False,
                      image=True, engine_env=False, gpu_ids=False, facts_receipt="image.json",
                      model_check="dir", cleanup_flags="--docker"),
    "external": Runtime("external", boots=False, compile_cache=False, child_process=False,
                        image=False, engine_env=False, gpu_ids=False,
                        facts_receipt="servers.json",
                        model_check=None, caveat=EXTERNAL_CAVEAT),
}


def of(plan_or_config: Mapping[str, Any]) -> Runtime:
    """The runtime a plan (or a validated config) runs on."""
    return of_section(plan_or_config["runtime"])


def of_section(rt: Mapping[str, Any]) -> Runtime:
    """The runtime a config's runtime section names."""
    return RUNTIMES[rt["kind"]]
