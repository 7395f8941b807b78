"""A local OpenAI-style completions server that streams tokens as fast as it can.

    python bench/sse_server.py --port 18080

Two ways to stream: `--mode burst` (default) writes each stream's chunks back to back, so a
slow client finds several chunks per read; `--mode step` works like an engine step: one chunk
to every active stream, then the next step, so every client sees about one chunk per read (the
pattern of a real server at high concurrency).

Every chunk carries one token, the server's continuous usage (so clients count exactly) and
`t_server`, the CLOCK_MONOTONIC time it was written, so a client on the same machine can
measure its own timing error. Counts every chunk it sends (GET /stats). Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

STATS = {"chunks": 0, "requests": 0}


def event(payload: dict) -> bytes:
    data = f"data: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def chunk(body: dict, i: int, n: int) -> bytes:
    payload = {"id": "bench", "object": "text_completion", "model": body.get("model"),
               "choices": [{"index": 0, "text": " x",
                            "finish_reason": "length" if i == n else None}],
               "t_server": time.monotonic()}
    if (body.get("stream_options") or {}).get("continuous_usage_stats", False):
        payload["usage"] = {"prompt_tokens": 8, "completion_tokens": i, "total_tokens": 8 + i}
    STATS["chunks"] += 1
    return event(payload)


def tail(body: dict, n: int) -> bytes:
    out = b""
    if (body.get("stream_options") or {}).get("include_usage"):
        out = event({"id": "bench", "choices": [], "usage": {
            "prompt_tokens": 8, "completion_tokens": n, "total_tokens": 8 + n}})
    return out + b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"


HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n")


async def burst(writer: asyncio.StreamWriter, body: dict) -> None:
    n = int(body.get("max_tokens", 16))
    writer.write(HEAD)
    STATS["requests"] += 1
    for i in range(1, n + 1):
        writer.write(chunk(body, i, n))
        await writer.drain()
    writer.write(tail(body, n))
    await writer.drain()


class Steps:
    """Engine-like streaming: each step writes one chunk to every active stream."""

    def __init__(self):
        self.active: list[list] = []  # [writer, body, next token, n, done future]
        self.wake = asyncio.Event()

    async def __call__(self, writer: asyncio.StreamWriter, body: dict) -> None:
        writer.write(HEAD)
        STATS["requests"] += 1
        done = asyncio.get_running_loop().create_future()
        self.active.append([writer, body, 1, int(body.get("max_tokens", 16)), done])
        self.wake.set()
        await done

    async def run(self) -> None:
        while True:
            if not self.active:
                self.wake.clear()
                await self.wake.wait()
            for s in list(self.active):
                writer, body, i, n, done = s
                writer.write(chunk(body, i, n))
                if i == n:
                    writer.write(tail(body, n))
                    self.active.remove(s)
                    done.set_result(None)
                s[2] = i + 1
            for s in self.active:
                if s[0].transport.get_write_buffer_size() > 1 << 16:
                    await s[0].drain()
            await asyncio.sleep(0)


def plain(writer: asyncio.StreamWriter, payload: dict) -> None:
    data = json.dumps(payload).encode()
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 completions) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode().split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            length = next((int(x.split(":", 1)[1]) for x in lines[1:]
                           if x.lower().startswith("content-length:")), 0)
            body = json.loads(await reader.readexactly(length)) if length else {}
            if method == "POST" and path.endswith("/completions"):
                await completions(writer, body)
            elif path == "/stats":
                plain(writer, STATS)
            elif path == "/v1/models":
                plain(writer, {"object": "list", "data": [{"id": "bench", "object": "model"}]})
            else:
                plain(writer, {"ok": True})
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError):
        pass
    finally:
        writer.close()


async def serve(host: str, port: int, mode: str) -> None:
    completions = burst
    if mode == "step":
        completions = Steps()
        asyncio.get_running_loop().create_task(completions.run())
    server = await asyncio.start_server(lambda r, w: handle(r, w, completions), host, port,
                                        backlog=1024)
    async with server:
        await server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=18080)
    ap.add_argument("--mode", choices=["burst", "step"], default="burst")
    a = ap.parse_args()
    asyncio.run(serve(a.host, a.port, a.mode))


if __name__ == "__main__":
    main()
