"""Closed-loop streaming client for the OpenAI-compatible completions and chat endpoints.

It speaks HTTP/1.1 itself on non-blocking sockets watched by the event loop (uvloop when
installed), one keep-alive connection per stream (knee.measure.stream, which reads the events
and stamps every chunk), and keeps a window's concurrency, its hold and its turns.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import socket
import time
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from knee.analyze.stats import held_share
from knee.core.prompts import ENDPOINTS
from knee.core.records import Section
from knee.measure.stream import HTTPError, Record, Stream, request_bytes

try:
    import uvloop
except ImportError:  # pragma: no cover - uvloop is a dependency; plain asyncio still works
    uvloop = None  # type: ignore[assignment]


def request_body(api: str, model: str, prompt: str | list[int], sampling: Section,
                 index: int = 0) -> Section:
    """One request's JSON body. A sampling seed is the window's seed plus the request's index:
    every request samples its own stream, and the same request samples it again in every
    session."""
    if "seed" in sampling:
        sampling = {**sampling, "seed": sampling["seed"] + index}
    stream = {"stream": True, "stream_options": {"include_usage": True,
                                                 "continuous_usage_stats": True},
              "return_token_ids": True}
    if api == "chat":
        return {"model": model, "messages": [{"role": "user", "content": prompt}],
                **stream, **sampling}
    return {"model": model, "prompt": prompt, **stream, **sampling}


def output_digest(rec: Record) -> str | None:
    """The sha256 of the output token ids (decimal, comma-separated), once the server gave
    them; an error where they do not count the tokens its usage counted."""
    ids = rec.output_token_ids
    if ids is None:
        return None
    if len(ids) != rec.output_tokens:
        rec.error = (f"TokenIdError: {len(ids)} token ids for {rec.output_tokens} output tokens "
                     "counted by the server's usage")
        return None
    rec.output_sha256 = hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()
    return rec.output_sha256


def length_error(rec: Record, sampling: Section) -> str | None:
    """An answer longer than max_tokens, or under ignore_eos not exactly max_tokens long, is
    not the request that was sent: the record is an error, not a measurement."""
    cap, n = sampling.get("max_tokens"), rec.output_tokens
    if cap is None:
        return None
    if n > cap:
        return f"LengthError: {n} output tokens, more than max_tokens {cap}"
    if sampling.get("ignore_eos") and n != cap:
        return f"LengthError: {n} output tokens under ignore_eos, not max_tokens {cap}"
    return None


class Turn(Protocol):
    """Taking turns with another load generator (knee.measure.together.Turns)."""

    def take(self, label: str) -> float: ...

    def release(self) -> None: ...


@dataclass(frozen=True)
class Hold:
    """A window held for a time: keep `concurrency` requests in flight, taking the prompts in
    order, until `min_s` have passed and at least `floor` were sent; then let the requests in
    flight finish. The prompts not sent are never sent."""

    min_s: float
    floor: int


class Link:
    """One stream's connection: kept alive between its requests, made again where the last
    was lost, closed or broken."""

    def __init__(self, loop: asyncio.AbstractEventLoop, addr: tuple[Any, ...] | None) -> None:
        self.loop, self.addr = loop, addr
        self.conn: Stream | None = None

    async def send(self, request: bytes, rec: Record, t0: float, timeout_s: float,
                   sampling: Section) -> None:
        """One request, its answer read into rec (rec.error where it is not a measurement)."""
        try:
            if self.conn is None or self.conn.lost or not self.conn.keep:
                self.close()
                self.conn = await Stream.connect(self.loop, self.addr, t0)
            self.conn.t0 = t0  # a loop that takes turns moves its clock's origin on
            await asyncio.wait_for(self.conn.exchange(request, rec), timeout_s)
        except (OSError, HTTPError, ValueError, TimeoutError) as e:
            rec.error = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            if self.conn is not None:
                self.conn.keep = False
        else:
            rec.error = length_error(rec, sampling)
            if rec.error is None:
                output_digest(rec)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


async def closed_loop(base_url: str, model: str, prompts: list[Any], sampling: Section,
                      concurrency: int, timeout_s: float, warmup: bool = False,
                      api: str = "completions", done: list[Any] | None = None,
                      hold: Hold | None = None, turn: Turn | None = None) -> Section:
    """Send every prompt (or, held, as many as `hold` says) with `concurrency` requests in
    flight; return records and wall time. Each finished request's record is appended to `done`
    (a list the caller may watch). `turn` (one request in flight only): each request waits for
    its turn and ends it once done; the clock stands still while the loop waits, so its
    times and wall time are this loop's own (the seconds waited: turn_wait_s)."""
    if turn is not None and concurrency != 1:
        raise ValueError("a loop takes turns request by request only with one in flight")
    target = urlsplit(base_url + ENDPOINTS[api])
    requests = [request_bytes(target, request_body(api, model, p, sampling, i))
                for i, p in enumerate(prompts)]
    loop = asyncio.get_running_loop()
    addr = (await loop.getaddrinfo(target.hostname, target.port or 80,
                                   type=socket.SOCK_STREAM))[0] if prompts else None
    queue = list(range(len(prompts)))[::-1]
    records: list[Record] = [] if done is None else done
    t0 = time.perf_counter()
    waited = 0.0

    def more() -> bool:
        if not queue:
            return False
        sent = len(prompts) - len(queue)
        return hold is None or sent < hold.floor or time.perf_counter() - t0 < hold.min_s

    async def worker() -> None:
        nonlocal t0, waited
        link = Link(loop, addr)
        try:
            while more():
                i = queue.pop()
                if turn is not None:  # the clock's origin moves on by the seconds waited
                    # waited for on the loop's own thread: one request in flight, nothing else
                    # to run meanwhile, and a signal interrupts the wait (a worker thread's
                    # wait would hold the loop's shutdown, and the engine's stop, until it ends)
                    w = turn.take(f"request {i}")
                    t0, waited = t0 + w, waited + w
                rec = Record(index=i, warmup=warmup, t_send=time.perf_counter() - t0)
                try:
                    await link.send(requests[i], rec, t0, timeout_s, sampling)
                finally:
                    rec.t_done = time.perf_counter() - t0
                    if turn is not None:
                        turn.release()
                records.append(rec)
        finally:  # also when cancelled: no socket or reader is left behind
            link.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return window(records, time.perf_counter() - t0, concurrency, len(prompts), hold,
                  waited if turn is not None else None)


def window(records: list[Record], wall: float, concurrency: int, planned: int,
           hold: Hold | None, waited: float | None) -> Section:
    """A closed loop's window: its records in the order of the prompts, its wall time, the
    share of it (first send to last done) at its concurrency (the ramp and the drain ran a
    smaller batch), and where it took turns or was held, the seconds waited and the hold."""
    records.sort(key=lambda r: r.index)
    out: dict[str, Any] = {"wall_s": wall, "records": [dict(vars(r)) for r in records]}
    out["concurrency_held_share"] = held_share(out["records"], concurrency)
    if waited is not None:
        out["turn_wait_s"] = round(waited, 6)
    if hold is not None:
        out["hold"] = {"min_s": hold.min_s, "floor": hold.floor, "planned": planned,
                       "sent": len(records), "reached": wall >= hold.min_s}
    return out


def run(base_url: str, model: str, prompts: list[Any], sampling: Section, concurrency: int,
        timeout_s: float, warmup: bool = False, api: str = "completions",
        done: list[Any] | None = None, hold: Hold | None = None,
        turn: Turn | None = None) -> Section:
    """One closed loop, with the cyclic garbage collector off while it runs: a collection
    of the whole heap stalls the loop for milliseconds, and every stream then reads several
    chunks at once. What it would have collected waits for the next collection after the run."""
    coro = closed_loop(base_url, model, prompts, sampling, concurrency, timeout_s, warmup, api,
                       done, hold, turn)
    collecting = gc.isenabled()
    gc.disable()
    try:
        return uvloop.run(coro) if uvloop is not None else asyncio.run(coro)
    finally:
        if collecting:
            gc.enable()
