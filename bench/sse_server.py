"""A local OpenAI-style completions server that streams tokens as fast as it can.

    python bench/sse_server.py --port 18080

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


async def completions(writer: asyncio.StreamWriter, body: dict) -> None:
    n = int(body.get("max_tokens", 16))
    usage_each = (body.get("stream_options") or {}).get("continuous_usage_stats", False)
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n")
    STATS["requests"] += 1
    for i in range(1, n + 1):
        chunk = {"id": "bench", "object": "text_completion", "model": body.get("model"),
                 "choices": [{"index": 0, "text": " x",
                              "finish_reason": "length" if i == n else None}],
                 "t_server": time.monotonic()}
        if usage_each:
            chunk["usage"] = {"prompt_tokens": 8, "completion_tokens": i,
                              "total_tokens": 8 + i}
        writer.write(event(chunk))
        STATS["chunks"] += 1
        await writer.drain()
    if (body.get("stream_options") or {}).get("include_usage"):
        writer.write(event({"id": "bench", "choices": [], "usage": {
            "prompt_tokens": 8, "completion_tokens": n, "total_tokens": 8 + n}}))
    writer.write(b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")
    await writer.drain()


def plain(writer: asyncio.StreamWriter, payload: dict) -> None:
    data = json.dumps(payload).encode()
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
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


async def serve(host: str, port: int) -> None:
    server = await asyncio.start_server(handle, host, port, backlog=1024)
    async with server:
        await server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=18080)
    a = ap.parse_args()
    asyncio.run(serve(a.host, a.port))


if __name__ == "__main__":
    main()
