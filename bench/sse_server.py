"""A local OpenAI-style completions server that streams tokens as fast as it can.

    python bench/sse_server.py --port 18080 [--mode burst|step]

It runs on uvloop with bare protocols and fills a byte template per chunk, so that on one core
it can outpace the client it feeds. Two ways to stream:

- `burst` (default): each stream's chunks back to back. A chunk is made and stamped only when
  the connection's write buffer is empty, so every chunk goes to the kernel when it is stamped,
  and a stream that fills its socket waits for the client while the others go on.
- `step`: like an engine step: one chunk to every active stream, then the next step, so a
  client sees its streams advance together (the pattern of a real server at high concurrency).
  `--step-ms` paces the steps as an engine's step time does; by default they follow each other
  as fast as the server can write them.

Every chunk carries one token, the server's continuous usage when asked for (so clients count
exactly) and `t_server`, the CLOCK_MONOTONIC time it was written, so a client on the same
machine can measure its own timing error. Counts every chunk it sends (GET /stats).
Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import uvloop

STATS = {"chunks": 0, "requests": 0}
HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n")
EVENT = (b'data: {"id":"bench","object":"text_completion","model":"bench","choices":'
         b'[{"index":0,"text":" x","finish_reason":%s}],"t_server":%.9f%s}\n\n')
USAGE = b',"usage":{"prompt_tokens":8,"completion_tokens":%d,"total_tokens":%d}'
DONE = b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"


def framed(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class Stream:
    """One response: n chunks of one token each, then the usage chunk and [DONE]."""

    def __init__(self, body: dict):
        self.n = int(body.get("max_tokens", 16))
        options = body.get("stream_options") or {}
        self.usage = bool(options.get("continuous_usage_stats"))
        self.final = bool(options.get("include_usage"))
        self.i = 0

    def next(self) -> bytes:
        self.i = i = self.i + 1
        last = i == self.n
        usage = USAGE % (i, 8 + i) if self.usage else b""
        STATS["chunks"] += 1
        out = framed(EVENT % (b'"length"' if last else b"null", time.monotonic(), usage))
        if last:
            if self.final:
                out += framed(b'data: {"id":"bench","choices":[],"usage":{"prompt_tokens":8,'
                              b'"completion_tokens":%d,"total_tokens":%d}}\n\n'
                              % (self.n, 8 + self.n))
            out += DONE
        return out


class Connection(asyncio.Protocol):
    def __init__(self, server: Server):
        self.server, self.buf, self.stream, self.paused = server, b"", None, False

    def connection_made(self, transport) -> None:
        self.transport = transport
        transport.set_write_buffer_limits(*self.server.buffer_limits)

    def connection_lost(self, exc) -> None:
        self.stream = None
        self.server.active.discard(self)

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        if self.server.mode == "burst":
            self.burst()

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while self.stream is None:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            lines = self.buf[:end].decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            length = next((int(x.split(":", 1)[1]) for x in lines[1:]
                           if x.lower().startswith("content-length:")), 0)
            if len(self.buf) < end + 4 + length:
                return
            body = json.loads(self.buf[end + 4:end + 4 + length] or b"{}")
            self.buf = self.buf[end + 4 + length:]
            if method == "POST" and path.endswith("/completions"):
                STATS["requests"] += 1
                self.stream = Stream(body)
                self.transport.write(HEAD)
                self.server.start(self)
            else:
                self.plain(STATS if path == "/stats" else {"ok": True})

    def plain(self, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(data), data))

    def step(self) -> None:
        """Write this stream's next chunk; the response is over after its last one."""
        stream = self.stream
        self.transport.write(stream.next())
        if stream.i == stream.n:
            self.stream = None
            self.server.active.discard(self)
            if self.buf:
                self.data_received(b"")

    def burst(self) -> None:
        while self.stream is not None and not self.paused:
            self.step()


class Server:
    def __init__(self, mode: str, step_s: float = 0.0):
        self.mode, self.active, self.step_s = mode, set(), step_s
        # burst: pause as soon as anything is left unsent, so each stamp is a send time;
        # step: a step writes to every stream and only a client far behind stalls the steps
        self.buffer_limits = (0, 0) if mode == "burst" else (1 << 16, 1 << 14)
        self.wake = asyncio.Event()

    def start(self, conn: Connection) -> None:
        if self.mode == "burst":
            conn.burst()
        else:
            self.active.add(conn)
            self.wake.set()

    async def steps(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if not self.active:
                self.wake.clear()
                await self.wake.wait()
            start = loop.time()
            for conn in list(self.active):
                if conn.stream is not None and not conn.paused:
                    conn.step()
            await asyncio.sleep(max(0.0, start + self.step_s - loop.time()))


async def serve(host: str, port: int, mode: str, step_ms: float) -> None:
    server = Server(mode, step_ms / 1e3)
    if mode == "step":
        asyncio.get_running_loop().create_task(server.steps())
    listener = await asyncio.get_running_loop().create_server(
        lambda: Connection(server), host, port, backlog=1024)
    async with listener:
        await listener.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=18080)
    ap.add_argument("--mode", choices=["burst", "step"], default="burst")
    ap.add_argument("--step-ms", type=float, default=0.0,
                    help="step mode: start a step at most this often (0: as fast as it can)")
    a = ap.parse_args()
    uvloop.run(serve(a.host, a.port, a.mode, a.step_ms))


if __name__ == "__main__":
    main()
