"""A server knee did not boot (runtime.kind: external): the same contract as the process and
container runtimes, with nothing to start or stop. It is alive while its /health answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from knee.core.errors import KneeError
from knee.core.records import Section
from knee.measure.runtime.endpoint import EngineDied, Served, bounded_get, stopped


class External(Served):
    NOUN = "server"

    def __init__(self, url: str, metrics_url: str | None, log: Path):
        self.url = url.rstrip("/")
        self.log = log  # base_url is the server's URL: no host or port of its own
        self._metrics_url = metrics_url
        self.lost: str | None = None

    @property
    def base_url(self) -> str:
        return self.url

    @property
    def metrics_url(self) -> str:
        return self._metrics_url or super().metrics_url

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.log.write_text(
            f"knee did not boot this server and keeps no log of it: {self.url}\n", encoding="utf-8")

    def exited(self) -> int | None:
        """None while /health answers 200; else -1 (a server knee did not start has no exit
        status of its own to report)."""
        try:
            ok = httpx.get(f"{self.url}/health", timeout=10).status_code == 200
        except httpx.HTTPError as e:
            ok, self.lost = False, str(e)
        return None if ok else -1

    def check_alive(self, what: str) -> None:
        if self.exited() is not None:
            raise EngineDied(f"the external server at {self.url} stopped answering /health "
                             f"during {what}" + (f": {self.lost}" if self.lost else ""))

    def stop(self, timeout_s: float) -> Section:
        """Nothing to stop: knee leaves a server it did not boot running."""
        return {**stopped(None, self.exited() is not None, False, None), "stopped_by_knee": False}

    def facts(self) -> Section:
        """What the server says of itself: its version and the models it serves."""
        try:
            version = json.loads(bounded_get(f"{self.url}/version", 10, 1 << 20)).get("version")
            models = [m["id"] for m in json.loads(bounded_get(
                f"{self.url}/v1/models", 10, 1 << 20)).get("data", [])]
        except (EngineDied, ValueError, KeyError, TypeError, AttributeError) as e:
            raise KneeError(f"the external server at {self.url} does not answer /version and "
                            f"/v1/models as vLLM does: {e}") from None
        return {"url": self.url, "metrics_url": self.metrics_url, "booted_by_knee": False,
                "version": version, "models": models}


def launch(s: Any, model: Section, engine_facts: Section, python: str,
           engine_cpus: list[int] | None) -> tuple[External, Section]:
    """A session's server (s: knee.measure.session.Session), one an operator runs: knee
    reaches it and starts nothing."""
    server = s.runtime["servers"][s.info["arm"]]
    engine = External(server["url"], server.get("metrics_url"), s.log)
    return engine, {"argv": [], "env": {}, "external": engine.facts()}
