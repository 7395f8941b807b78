"""The engine's HTTP endpoint: health wait with early-death detection, metric scrapes."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from knee.core.errors import KneeError
from knee.core.records import Section


class EngineDied(KneeError):
    """The engine exited while we waited for it or measured it."""


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def last_lines(path: Path, n: int = 25) -> str:
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-n:])


def wait_healthy(base_url: str, exited: Callable[[], int | None], log: Path,
                 timeout_s: float, interval_s: float = 0.5) -> float:
    """Poll /health until 200: EngineDied at once if the engine exits, KneeError on timeout."""
    start = time.monotonic()
    with httpx.Client(timeout=5.0) as client:
        while True:
            code = exited()
            if code is not None:
                raise EngineDied(
                    f"engine exited with status {code} during boot; last lines of {log}:\n"
                    + last_lines(log)
                )
            try:
                if client.get(f"{base_url}/health").status_code == 200:
                    return time.monotonic() - start
            except httpx.TransportError:
                pass
            if time.monotonic() - start > timeout_s:
                raise KneeError(
                    f"engine not healthy at {base_url}/health after {timeout_s:.0f} s "
                    f"(runtime.boot_timeout_s); last lines of {log}:\n" + last_lines(log)
                )
            time.sleep(interval_s)


def stopped(exit_status: int | None, died_before_stop: bool, killed: bool,
            since: float | None) -> Section:
    """What every runtime's stop() returns (the stop receipt's fields), whichever way it
    went; since is the monotonic time the stop began (None: nothing had started)."""
    return {"exit_status": exit_status, "died_before_stop": died_before_stop, "killed": killed,
            "stop_seconds": 0.0 if since is None else round(time.monotonic() - since, 3)}


class Served:
    """The contract of a runtime's engine. A subclass holds `host`, `port` and `log`, and
    implements start(), exited() (None while it runs, else its exit status) and
    stop(timeout_s) -> stopped(...); this gives it base_url, the health wait and the liveness
    check (process and container runtimes alike)."""

    NOUN = "engine"
    host: str
    port: int
    log: Path

    def start(self) -> None:
        raise NotImplementedError

    def exited(self) -> int | None:
        """None while it runs, else its exit status (each runtime's own)."""
        raise NotImplementedError

    def stop(self, timeout_s: float) -> Section:
        """Stopped, with what the stop receipt records of it (stopped())."""
        raise NotImplementedError

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def metrics_url(self) -> str:
        return f"{self.base_url}/metrics"

    def wait_healthy(self, timeout_s: float) -> float:
        """Seconds until the engine served its health check."""
        return wait_healthy(self.base_url, self.exited, self.log, timeout_s)

    def check_alive(self, what: str) -> None:
        code = self.exited()
        if code is not None:
            raise EngineDied(f"{self.NOUN} exited with status {code} during {what}; "
                             f"last lines of {self.log}:\n{last_lines(self.log)}")


def tokenizer(base_url: str, model: str, check_alive: Callable[[str], None] | None = None
              ) -> Callable[[str], list[int]]:
    """text -> token ids by the served model's own tokenizer (/tokenize, no special tokens).
    On a failed call, check_alive (the engine's) reports an engine that exited, first."""
    http = httpx.Client(timeout=60)

    def tokenize(text: str) -> list[int]:
        try:
            r = http.post(f"{base_url}/tokenize", json={"model": model, "prompt": text,
                                                        "add_special_tokens": False})
            r.raise_for_status()
        except httpx.HTTPError as e:
            if check_alive is not None:  # a dying engine drops connections before its
                for _ in range(10):  # exit is visible
                    check_alive("tokenization of a prompt set")
                    time.sleep(0.3)
            raise EngineDied(f"cannot tokenize at {base_url}/tokenize: {e}") from None
        tokens: list[int] = r.json()["tokens"]
        return tokens

    return tokenize


SCRAPE_BYTES = 64 << 20  # a vLLM /metrics is some 100 kB; a server sending more is refused


def bounded_get(url: str, deadline_s: float, limit: int) -> bytes:
    """GET url whole within deadline_s in all (not per read: a server that trickles a byte at a
    time is cut off) and at most limit bytes; EngineDied otherwise."""
    start, size, chunks = time.monotonic(), 0, []
    try:
        with httpx.stream("GET", url, timeout=min(deadline_s, 10.0)) as r:
            r.raise_for_status()
            for chunk in r.iter_bytes():
                size += len(chunk)
                if size > limit:
                    raise EngineDied(f"{url}: more than {limit} bytes: refused")
                if time.monotonic() - start > deadline_s:
                    raise EngineDied(f"{url}: not answered in full within {deadline_s:.0f} s")
                chunks.append(chunk)
    except httpx.HTTPError as e:
        raise EngineDied(f"cannot read {url}: {e}") from None
    return b"".join(chunks)


def scrape(metrics_url: str, timeout_s: float = 30.0) -> str:
    """The Prometheus text at a server's metrics URL (Served.metrics_url)."""
    return bounded_get(metrics_url, timeout_s, SCRAPE_BYTES).decode(errors="replace")
