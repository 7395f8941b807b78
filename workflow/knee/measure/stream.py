"""One keep-alive HTTP/1.1 connection to an OpenAI-compatible server, read as a stream of
server-sent events, and the record of one request it fills (knee.measure.client sends them).

Token counts come from the server's own per-chunk usage (stream_options with
include_usage and continuous_usage_stats), never from re-tokenised text; the hot path is a
few byte searches and one orjson parse per event.

Every chunk is stamped with the time its bytes reached the socket: on Linux the kernel's
receive timestamp of the read that carried it (SO_TIMESTAMPNS), so the time the client spends
on other streams, and the order it serves them in, never enters a gap. Elsewhere, or if the
kernel gives none, the read is stamped when it returns. `CHUNK_CLOCK` names the clock in use.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import SplitResult

import orjson

from knee.core.records import Section

READ_SIZE = 1 << 16
SO_TIMESTAMPNS = 35  # Linux: the receive time of the data, as a CLOCK_REALTIME timespec
TIMESPEC = struct.Struct("@ll")
ANC_SIZE = socket.CMSG_SPACE(TIMESPEC.size) if sys.platform == "linux" else 0
CHUNK_CLOCK = ("kernel receive timestamp (SO_TIMESTAMPNS)" if ANC_SIZE
               else "read time (perf_counter)")


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
    # the generated token ids (the server's token_ids, asked for with return_token_ids) and
    # their sha256: whether both arms generated the same tokens (knee.analyze.samework)
    output_token_ids: list[int] | None = None
    output_sha256: str | None = None


class StreamError(ValueError):
    """The server reported an error inside the event stream, or broke its usage contract."""


def _apply_chunk(rec: Record, data: Section, now: float) -> None:
    usage = data.get("usage")
    choices = data.get("choices")
    if not choices or not usage or "completion_tokens" not in usage or "error" in data:
        _other_chunk(rec, data, usage, choices)
        return
    total = usage["completion_tokens"]
    if rec.prompt_tokens is None:
        rec.prompt_tokens = usage.get("prompt_tokens")
    finish = choices[0].get("finish_reason")
    if finish:
        rec.finish_reason = finish
    if (ids := choices[0].get("token_ids")) is not None:
        if rec.output_token_ids is None:
            rec.output_token_ids = []
        rec.output_token_ids += ids
    tokens = total - rec.output_tokens
    rec.output_tokens = total
    if tokens <= 0:
        return
    if rec.t_first is None:
        rec.t_first = now
    rec.t_last = now
    rec.chunk_times.append(now)
    rec.chunk_tokens.append(tokens)
    if "t_server" in data:
        if rec.server_stamps is None:
            rec.server_stamps = []
        rec.server_stamps.append(data["t_server"])


def _other_chunk(rec: Record, data: Section, usage: Section | None,
                 choices: list[Any] | None) -> None:
    """An event that is not one more token chunk: an error, a broken contract, or the end."""
    if "error" in data:  # vLLM reports a failure after the 200 as an error event
        raise StreamError(f"error event: {orjson.dumps(data['error']).decode()[:500]}")
    if choices:
        raise StreamError("chunk without usage: the server ignored continuous_usage_stats")
    if usage:  # the final usage-only chunk
        if rec.prompt_tokens is None:
            rec.prompt_tokens = usage.get("prompt_tokens")
        rec.output_tokens = usage.get("completion_tokens", rec.output_tokens)


class HTTPError(Exception):
    """The server answered, but not with a 200 event stream, or broke the framing."""


class Stream:
    """One keep-alive HTTP/1.1 connection; one response at a time, parsed as it arrives."""

    # the response being read (set by start): its head, status, framing, and what is buffered
    head: bytes
    status: int | None
    chunked: bool
    length: int | None
    raw: bytes
    body: bytes
    need: int | None  # bytes left in this HTTP chunk

    def __init__(self, t0: float, sock: socket.socket | None = None,
                 loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.t0, self.sock, self.loop = t0, sock, loop
        self.rec: Record | None = None
        self.done: asyncio.Future[None] | None = None
        self.lost, self.keep, self.floor = False, True, 0.0

    @classmethod
    async def connect(cls, loop: Any, addr: tuple[Any, ...] | None, t0: float) -> Stream:
        assert addr is not None  # resolved wherever there is a prompt to send
        family, kind, proto, _, address = addr
        sock = socket.socket(family, kind, proto)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if ANC_SIZE:
                sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            await loop.sock_connect(sock, address)
        except BaseException:
            sock.close()
            raise
        conn = cls(t0, sock, loop)
        loop.add_reader(sock.fileno(), conn.readable)
        return conn

    def close(self) -> None:
        self.lost = True
        if self.sock is not None:
            assert self.loop is not None  # a connected stream reads on its loop
            self.loop.remove_reader(self.sock.fileno())
            self.sock.close()
            self.sock = None

    async def exchange(self, request: bytes, rec: Record) -> None:
        """Send one request and wait for its whole response."""
        assert self.loop is not None and self.sock is not None  # connected
        done = self.loop.create_future()
        self.start(rec, done)
        await self.loop.sock_sendall(self.sock, request)
        await done

    def start(self, rec: Record, done: asyncio.Future[None]) -> None:
        self.rec, self.done, self.floor = rec, done, rec.t_send
        self.head, self.status, self.chunked, self.length = b"", None, False, None
        self.raw, self.body, self.need = b"", b"", None  # need: bytes left in this HTTP chunk
        self.keep = True

    def _finish(self, error: BaseException | None = None) -> None:
        done, self.done = self.done, None
        if done is not None and not done.done():
            if error is None:
                done.set_result(None)
            else:
                done.set_exception(error)

    def readable(self) -> None:
        try:
            assert self.sock is not None  # a stream reads only once connected
            data, anc, _, _ = self.sock.recvmsg(READ_SIZE, ANC_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._closed(e)
            return
        if not data:
            self._closed("by the server")
            return
        read_ns = time.perf_counter_ns()
        now = read_ns / 1e9 - self.t0
        if anc:  # the kernel's receive time, moved onto perf_counter's clock
            sec, nsec = TIMESPEC.unpack(anc[0][2][:TIMESPEC.size])
            arrived = (sec * 1_000_000_000 + nsec - time.time_ns() + read_ns) / 1e9 - self.t0
            # a realtime clock step between the two stamps cannot leave the read's bounds
            now = self.floor = min(now, max(arrived, self.floor))
        self.data_received(data, now)

    def _closed(self, reason: str | OSError) -> None:
        self.close()
        if self.done is not None and self.status is not None and not self.chunked \
                and self.length is None:  # a body delimited by the close
            self._answered()
        self._finish(ConnectionError(f"connection closed: {reason}"))

    def data_received(self, data: bytes, now: float) -> None:
        """Parse one read whose bytes all arrived at `now`."""
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
        rec, loads, find = self.rec, orjson.loads, raw.find
        assert rec is not None  # data arrives only for a request started
        while pos < end_all:
            if self.need is None:  # at a chunk-size line
                eol = find(b"\r\n", pos)
                if eol < 0:
                    break
                try:
                    size = int(raw[pos:eol], 16)
                except ValueError:  # with a chunk extension
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
                            _apply_chunk(rec, loads(raw[pos + 6:end - 2]), now)
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
        assert self.rec is not None  # data arrives only for a request started
        for ev in complete:
            if ev.startswith(b"data: ") and ev[6:] != b"[DONE]":
                _apply_chunk(self.rec, orjson.loads(ev[6:]), now)

    def _answered(self) -> None:
        if self.status != 200:
            text = self.body.decode(errors="replace")[:500]
            self._finish(HTTPError(f"HTTP {self.status}: {text}"))
        else:
            self._finish()


def request_bytes(target: SplitResult, body: Section) -> bytes:
    """The POST request of one body to a urlsplit() target (built before the clock starts)."""
    payload = orjson.dumps(body)
    head = (f"POST {target.path} HTTP/1.1\r\nHost: {target.netloc}\r\n"
            f"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n").encode()
    return head + payload
