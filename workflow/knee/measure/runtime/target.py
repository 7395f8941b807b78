"""What an instrument may do with the served engine, and nothing more (knee.instruments.spec).

The session makes one Target per window; the instrument sends its requests, tokenizes its
prompts, scrapes the metrics and records its points through it, so an instrument module never
imports the client or a runtime, and a new instrument is one module.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from knee.analyze.window import prom
from knee.core import prompts
from knee.core.records import Point, RawWindow, Section
from knee.instruments.ports import Tokenize
from knee.measure import client, progress, stream
from knee.measure.runtime import endpoint
from knee.measure.runtime.endpoint import Served


@dataclass
class Target:
    engine: Served
    model: Section  # the plan's model with its hashes (session.model_facts)
    seed: int  # instruments.seed: every prompt set is drawn from it
    timeout_s: float  # instruments.request_timeout_s
    api: str  # the OpenAI endpoint of this window
    sid: str = ""  # the session, named in the progress lines
    sampling: Section | None = None  # instruments.sampling (absent: greedy)
    stop_at_eos: bool = False  # instruments.stop_at_eos
    # each recorded point with the monotonic span of the closed loop it recorded (the session
    # adds the host's speed over that span to the point)
    spans: list[Any] = field(default_factory=list)
    # interleaved order: this window's turns with the partner session (knee.measure.together)
    turns: client.Turn | None = None
    _last: tuple[float, float] | None = None

    def sampling_params(self, output_tokens: int) -> Section:
        """The sampling of every request this window sends (knee.core.prompts.sampling_params)."""
        return prompts.sampling_params(output_tokens, self.sampling, self.seed,
                                       self.stop_at_eos)

    def send(self, prompt_set: list[Any], sampling: Section, concurrency: int = 1,
             warmup: bool = False, hold: tuple[float, int] | None = None) -> Section:
        """One closed loop of these prompts at this concurrency (knee.measure.client.run), with a
        progress bar on an interactive terminal; `hold` (seconds, fewest requests): keep the
        concurrency that long, from the prompts in order (client.Hold)."""
        done: list[Any] = []
        label = f"{self.sid} {'warm-up' if warmup else f'c={concurrency}'}".strip()
        # interleaved: a request a turn in a loop of one stream, else the whole loop a turn
        by_request = self.turns is not None and concurrency == 1 and hold is None
        whole = None if self.turns is None or by_request else self.turns
        if whole:
            whole.take(f"{'warm-up' if warmup else 'loop'} c={concurrency} n={len(prompt_set)}")
        started = time.monotonic()
        try:
            with progress.Bar(label, len(prompt_set), done):
                result = client.run(self.engine.base_url, self.model["name"], prompt_set,
                                    sampling, concurrency, self.timeout_s, warmup=warmup,
                                    api=self.api, done=done,
                                    hold=client.Hold(*hold) if hold else None,
                                    turn=self.turns if by_request else None)
        finally:
            if whole:
                whole.release()
        self._last = (started, time.monotonic())
        return result

    def tokenizer(self) -> Tokenize:
        """text -> token ids by the served model's own tokenizer."""
        return endpoint.tokenizer(self.engine.base_url, self.model["name"],
                                  self.engine.check_alive)

    def scrape(self) -> str:
        """The engine's /metrics text now."""
        return endpoint.scrape(self.engine.metrics_url)

    def counters(self, *names: str) -> tuple[float, ...]:
        """Each named counter's total over its labels in the engine's /metrics now (0 if the
        engine has no such series)."""
        samples = prom.parse(self.scrape(), "counter scrape")
        return tuple(prom.total(samples, name) or 0.0 for name in names)

    def check_alive(self, where: str) -> None:
        self.engine.check_alive(where)

    def record(self, result: Section, *, point: Point, instrument: str, prompt_set: list[Any],
               sampling: Section, **fields: Any) -> RawWindow:
        """One point of the raw file: its request profile (with this client's facts), what
        the client measured, and the window's extra facts (`extra=`)."""
        record = prompts.point_record(
            result, point=point, instrument=instrument, prompts=prompt_set, sampling=sampling,
            model=self.model, seed=self.seed, api=self.api, chunk_clock=stream.CHUNK_CLOCK,
            **fields)
        progress.say(progress.point_line(self.sid, record))
        if self._last:
            self.spans.append((record, self._last))
        return record
