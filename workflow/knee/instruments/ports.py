"""What an instrument is handed, as types: the served engine it measures (`Target`), the raw
windows a derived section reads (`Windows`), the derived files a figure draws from (`View`) and
the README's number formats its caveats are written with (`Words`).

Each is a Protocol that the stage handing it over satisfies (knee.measure.runtime.target.Target,
knee.analyze.compare.Windows, knee.publish.figures.View, knee.publish.readme.WORDS), so that
this package imports none of those stages, nor matplotlib (`Axes` is its type only where a type
checker reads it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from knee.core.records import Plan, Point, RawFile, RawWindow

if TYPE_CHECKING:
    from matplotlib.axes import Axes
else:
    Axes = Any

Tokenize = Callable[[str], list[int]]  # text -> token ids, by the served model's tokenizer


class Target(Protocol):
    seed: int

    def sampling_params(self, output_tokens: int) -> dict[str, Any]: ...

    def send(self, prompt_set: Sequence[Any], sampling: Mapping[str, Any], concurrency: int = 1,
             warmup: bool = False, hold: tuple[float, int] | None = None) -> dict[str, Any]: ...

    def tokenizer(self) -> Tokenize: ...

    def scrape(self) -> str: ...

    def counters(self, *names: str) -> tuple[float, ...]: ...

    def check_alive(self, where: str) -> None: ...

    def record(self, result: dict[str, Any], *, point: Point, instrument: str,
               prompt_set: Sequence[Any], sampling: Mapping[str, Any],
               **fields: Any) -> RawWindow: ...


class Windows(Protocol):
    @property
    def sessions(self) -> Mapping[tuple[int, str], RawFile]: ...

    @property
    def pairs(self) -> Sequence[tuple[RawFile, RawFile]]: ...

    @staticmethod
    def figures(raw: Mapping[str, Any],
                withheld: Mapping[float, str] | None = None) -> dict[Any, dict[str, Any]]: ...

    @staticmethod
    def delta_pct(control: float | None, candidate: float | None) -> float | None: ...

    @staticmethod
    def decode_rate(point: Mapping[str, Any]) -> float | None: ...


class View(Protocol):
    @property
    def plan(self) -> Plan: ...

    @property
    def comparison(self) -> Mapping[str, Any]: ...

    @property
    def table(self) -> Sequence[Mapping[str, Any]]: ...

    @property
    def colors(self) -> Mapping[str, str]: ...

    @property
    def threshold(self) -> float: ...

    def session_k(self, arm: str, points: list[int]) -> list[int]: ...

    @staticmethod
    def effect_label(row: Mapping[str, Any] | None) -> str: ...

    @staticmethod
    def mean(values: Sequence[float]) -> float: ...


class Words(Protocol):
    @staticmethod
    def fmt(x: float | None) -> str: ...

    @staticmethod
    def pct(x: float | None) -> str: ...

    @staticmethod
    def interval(interval: Sequence[float] | None) -> str: ...

    @staticmethod
    def level(row: Mapping[str, Any]) -> str: ...

    @staticmethod
    def text(s: str) -> str: ...


__all__ = ["Axes", "Target", "Tokenize", "View", "Windows", "Words"]
