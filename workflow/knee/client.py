"""Closed-loop streaming client for the OpenAI-compatible completions and chat endpoints.

Token counts come from the server's own per-chunk usage (stream_options with
include_usage and continuous_usage_stats), never from re-tokenised text. The client speaks
HTTP/1.1 itself on asyncio protocols (uvloop when installed) with one keep-alive connection
per stream: every read is stamped once, on arrival, before any parsing, and the hot path is a
few byte searches and one orjson parse per event.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import orjson

try:
    import uvloop
except ImportError:  # pragma: no cover - uvloop is a dependency; plain asyncio still works
    uvloop = None

ENDPOINTS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}


@dataclass
class Record:
    index: int
    warmup: bool
    t_send: float
    t_first: float | None = None
    t_last: float | None = None
    t_done: float | None = None
    chunk_times: list[float] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    prompt_tokens: int | None = None
    output_tokens: int = 0
    finish_reason: str | None = None
    error: str | None = None
    server_stamps: list[float] | None = None  # only from a server that stamps its chunks


class StreamError(ValueError):
    """The server reported an error inside the event stream, or broke its usage contract."""


def _apply_chunk(rec: Record, data: dict, now: float) -> None:
    if "error" in data:  # vLLM reports a failure after the 200 as an error event
        raise StreamError(f"error event: {orjson.dumps(data['error']).decode()[:500]}")
    usage = data.get("usage")
    choices = data.get("choices")
    if usage and rec.prompt_tokens is None:
        rec.prompt_tokens = usage.get("prompt_tokens")
    if not choices:  # the final usage-only chunk
        if usage:
            rec.output_tokens = usage.get("completion_tokens", rec.output_tokens)
        return
    if not usage or "completion_tokens" not in usage:
        raise StreamError("chunk without usage: the server ignored continuous_usage_stats")
    total = usage["completion_tokens"]
    if choices[0].get("finish_reason"):
        rec.finish_reason = choices[0]["finish_reason"]
    tokens = total - rec.output_tokens
    rec.output_tokens = total
    if tokens <= 0:
        return
    rec.chunk_times.append(now)
    rec.chunk_tokens.append(tokens)
    if rec.t_first is None:
        rec.t_first = now
    rec.t_last = now
    if "t_server" in data:
        if rec.server_stamps is None:
            rec.server_stamps = []
        rec.server_stamps.append(data["t_server"])


class HTTPError(Exception):
    """The server answered, but not with a 200 event stream, or broke the framing."""


class _Stream(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection; one response at a time, parsed as it arrives."""

    def __init__(self, t0: float):
        self.t0 = t0
        self.transport: asyncio.Transport | None = None
        self.rec: Record | None = None
        self.done: asyncio.Future | None = None
        self.lost = False

    def connection_made(self, transport) -> None:
        self.transport = transport

    def connection_lost(self, exc) -> None:
        self.lost = True
        self._finish(ConnectionError(f"connection closed: {exc or 'by the server'}"))

    def send(self, request: bytes, rec: Record, done: asyncio.Future) -> None:
        self.rec, self.done = rec, done
        self.head, self.status, self.chunked, self.length = b"", None, False, None
        self.raw, self.body, self.need = b"", b"", None  # need: bytes left in this HTTP chunk
        self.keep = True
        self.transport.write(request)

    def _finish(self, error: BaseException | None = None) -> None:
        done, self.done = self.done, None
        if done is not None and not done.done():
            if error is None:
                done.set_result(None)
            else:
                done.set_exception(error)

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter() - self.t0  # every event in this read arrived now
        if self.done is None:
            return
        try:
            if self.status is None:
                self.head += data
                end = self.head.find(b"\r\n\r\n")
                if end < 0:
                    return
                self._headers(self.head[:end].decode("latin-1"))
                data = self.head[end + 4:]
            if self.chunked:
                self._dechunk(data, now)
            else:
                self.body += data
                if self.length is not None and len(self.body) >= self.length:
                    self._answered()
        except (HTTPError, ValueError) as e:
            self.keep = False
            self._finish(e)

    def _headers(self, head: str) -> None:
        lines = head.split("\r\n")
        self.status = int(lines[0].split(" ", 2)[1])
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == "transfer-encoding":
                self.chunked = "chunked" in value
            elif name == "content-length":
                self.length = int(value)
            elif name == "connection" and value == "close":
                self.keep = False

    def _dechunk(self, data: bytes, now: float) -> None:
        raw = self.raw + data if self.raw else data
        pos, end_all = 0, len(raw)
        while pos < end_all:
            if self.need is None:  # at a chunk-size line
                eol = raw.find(b"\r\n", pos)
                if eol < 0:
                    break
                size = int(raw[pos:eol].split(b";", 1)[0], 16)
                pos = eol + 2
                if size == 0:
                    self.raw = b""
                    self._answered()
                    return
                if pos + size + 2 <= end_all and not self.body:  # a whole chunk: no copy
                    end = pos + size
                    if raw.startswith(b"data: {", pos) and raw.endswith(b"\n\n", pos, end):
                        try:  # the common case: one event in one chunk
                            _apply_chunk(self.rec, orjson.loads(raw[pos + 6:end - 2]), now)
                        except orjson.JSONDecodeError:  # not one event after all
                            self._events(raw[pos:end], now)
                    else:
                        self._events(raw[pos:end], now)
                    pos += size + 2
                    continue
                self.need = size + 2  # the payload and its CRLF
            take = min(self.need, end_all - pos)
            self.body += raw[pos:pos + take]
            pos += take
            self.need -= take
            if self.need:
                break
            self.need = None
            body, self.body = self.body[:-2], b""
            self._events(body, now)
        self.raw = raw[pos:]

    def _events(self, payload: bytes, now: float) -> None:
        """Server-sent events; an event cut by the chunk framing waits in self.body."""
        if self.status != 200:
            self.body += payload
            return
        if self.body:
            payload, self.body = self.body + payload, b""
        *complete, self.body = payload.split(b"\n\n")
        for ev in complete:
            if ev.startswith(b"data: ") and ev[6:] != b"[DONE]":
                _apply_chunk(self.rec, orjson.loads(ev[6:]), now)

    def _answered(self) -> None:
        if self.status != 200:
            text = self.body.decode(errors="replace")[:500]
            self._finish(HTTPError(f"HTTP {self.status}: {text}"))
        else:
            self._finish()


def request_bytes(url: str, body: dict) -> tuple[str, int, bytes]:
    """host, port and the POST request for one body (built once, before the clock starts)."""
    parts = urlsplit(url)
    payload = orjson.dumps(body)
    head = (f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            f"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n").encode()
    return parts.hostname, parts.port or 80, head + payload


def request_body(api: str, model: str, prompt, sampling: dict) -> dict:
    stream = {"stream": True, "stream_options": {"include_usage": True,
                                                 "continuous_usage_stats": True}}
    if api == "chat":
        return {"model": model, "messages": [{"role": "user", "content": prompt}],
                **stream, **sampling}
    return {"model": model, "prompt": prompt, **stream, **sampling}


async def closed_loop(base_url: str, model: str, prompts: list, sampling: dict,
                      concurrency: int, timeout_s: float, warmup: bool = False,
                      api: str = "completions") -> dict:
    """Send every prompt with `concurrency` requests in flight; return records and wall time."""
    url = base_url + ENDPOINTS[api]
    requests = [request_bytes(url, request_body(api, model, p, sampling)) for p in prompts]
    loop = asyncio.get_running_loop()
    queue = list(range(len(prompts)))[::-1]
    records: list[Record] = []
    t0 = time.perf_counter()

    async def worker() -> None:
        conn: _Stream | None = None
        while queue:
            i = queue.pop()
            host, port, request = requests[i]
            rec = Record(index=i, warmup=warmup, t_send=time.perf_counter() - t0)
            try:
                if conn is None or conn.lost or not conn.keep:
                    if conn is not None:
                        conn.transport.close()
                    _, conn = await loop.create_connection(lambda: _Stream(t0), host, port)
                done = loop.create_future()
                conn.send(request, rec, done)
                await asyncio.wait_for(done, timeout_s)
            except (OSError, HTTPError, ValueError, TimeoutError) as e:
                rec.error = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
                if conn is not None:
                    conn.keep = False
            finally:
                rec.t_done = time.perf_counter() - t0
            records.append(rec)
        if conn is not None:
            conn.transport.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - t0
    records.sort(key=lambda r: r.index)
    return {"wall_s": wall, "records": [dict(vars(r)) for r in records]}


def run(base_url: str, model: str, prompts: list, sampling: dict, concurrency: int,
        timeout_s: float, warmup: bool = False, api: str = "completions") -> dict:
    coro = closed_loop(base_url, model, prompts, sampling, concurrency, timeout_s, warmup, api)
    return uvloop.run(coro) if uvloop is not None else asyncio.run(coro)
