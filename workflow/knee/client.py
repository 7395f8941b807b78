"""Closed-loop streaming client for the OpenAI-compatible /v1/completions endpoint (aiohttp).

Token counts come from the server's own per-chunk usage (stream_options with
include_usage and continuous_usage_stats), never from re-tokenised text.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, dataclass, field

import aiohttp


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


def _apply_chunk(rec: Record, data: dict, now: float) -> None:
    usage = data.get("usage") or {}
    if "prompt_tokens" in usage:
        rec.prompt_tokens = usage["prompt_tokens"]
    choices = data.get("choices") or []
    if not choices:  # the final usage-only chunk
        rec.output_tokens = usage.get("completion_tokens", rec.output_tokens)
        return
    total = usage.get("completion_tokens")
    if total is None:
        raise ValueError("chunk without usage: the server ignored continuous_usage_stats")
    tokens = total - rec.output_tokens
    rec.output_tokens = total
    if choices[0].get("finish_reason"):
        rec.finish_reason = choices[0]["finish_reason"]
    if tokens <= 0:
        return
    rec.chunk_times.append(now)
    rec.chunk_tokens.append(tokens)
    if "t_server" in data:
        rec.server_stamps = (rec.server_stamps or []) + [data["t_server"]]
    if rec.t_first is None:
        rec.t_first = now
    rec.t_last = now


async def one_request(session: aiohttp.ClientSession, url: str, body: dict, index: int,
                      warmup: bool, t0: float) -> Record:
    rec = Record(index=index, warmup=warmup, t_send=time.perf_counter() - t0)
    try:
        async with session.post(url, json=body) as resp:
            if resp.status != 200:
                text = (await resp.read()).decode(errors="replace")[:500]
                rec.error = f"HTTP {resp.status}: {text}"
                return rec
            buffer = b""
            async for data in resp.content.iter_any():
                now = time.perf_counter() - t0  # every event in this read arrived now
                buffer += data
                *events, buffer = buffer.split(b"\n\n")
                for ev in events:
                    if not ev.startswith(b"data: "):
                        continue
                    if ev[6:] == b"[DONE]":
                        return rec
                    _apply_chunk(rec, json.loads(ev[6:]), now)
    except (aiohttp.ClientError, TimeoutError, ValueError) as e:
        rec.error = f"{type(e).__name__}: {e}"
    finally:
        rec.t_done = time.perf_counter() - t0
    return rec


async def closed_loop(base_url: str, model: str, prompts: list[str], sampling: dict,
                      concurrency: int, timeout_s: float, warmup: bool = False) -> dict:
    """Send every prompt with `concurrency` requests in flight; return records and wall time."""
    url = f"{base_url}/v1/completions"
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(len(prompts)):
        queue.put_nowait(i)
    records: list[Record] = []
    connector = aiohttp.TCPConnector(limit=concurrency + 2)
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    t0 = time.perf_counter()

    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as client:
        async def worker() -> None:
            while not queue.empty():
                i = queue.get_nowait()
                body = {"model": model, "prompt": prompts[i], "stream": True,
                        "stream_options": {"include_usage": True,
                                           "continuous_usage_stats": True}, **sampling}
                records.append(await one_request(client, url, body, i, warmup, t0))

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - t0
    records.sort(key=lambda r: r.index)
    return {"wall_s": wall, "records": [asdict(r) for r in records]}


def run(base_url: str, model: str, prompts: list[str], sampling: dict, concurrency: int,
        timeout_s: float, warmup: bool = False) -> dict:
    return asyncio.run(closed_loop(base_url, model, prompts, sampling, concurrency,
                                   timeout_s, warmup))
