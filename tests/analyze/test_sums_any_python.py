"""A published folder's analysis is the same to the last bit on every Python: its sums of
floats are exactly rounded (math.fsum), never the builtin sum(), which adds in order on Python
3.11 and compensates (Neumaier) from 3.12 on. A folder rendered on a GPU host's Python 3.12
differed from its re-render here in the last digits of its noise, its estimates and its MDEs
until it was so. The analysis runs twice here, once under each sum(), and must not tell them
apart."""

import builtins
import json
import math
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from knee.analyze import compare
from knee.analyze.bar import judge_plan
from knee.analyze.folder import load_sessions, realized_sessions
from knee.core import jsonio, layout
from knee.publish.recommend import outputs
from tests.helpers import ROOT

BUILTIN_SUM = builtins.sum


def numbers(items: list[object], start: object) -> bool:
    return all(isinstance(x, int | float) and not isinstance(x, bool) for x in [*items, start])


def in_order(iterable: Iterable[object], /, start: object = 0) -> object:
    """Python 3.11's sum(): each float added to the total as it comes."""
    items = list(iterable)
    if not numbers(items, start) or not any(isinstance(x, float) for x in items):
        return BUILTIN_SUM(items, start)  # type: ignore[arg-type]
    total = float(start)  # type: ignore[arg-type]
    for x in items:
        total += x  # type: ignore[operator]
    return total


def compensated(iterable: Iterable[object], /, start: object = 0) -> object:
    """Python 3.12's sum(): Neumaier's compensated summation of floats."""
    items = list(iterable)
    if not numbers(items, start) or not any(isinstance(x, float) for x in items):
        return BUILTIN_SUM(items, start)  # type: ignore[arg-type]
    total, lost = float(start), 0.0  # type: ignore[arg-type]
    for x in map(float, items):  # type: ignore[arg-type]
        t = total + x
        lost += (total - t) + x if abs(total) >= abs(x) else (x - t) + total
        total = t
    return total + lost if lost and math.isfinite(lost) else total


def analysis(root: Path) -> str:
    plan = jsonio.read(root / layout.PLAN, "plan")
    loaded = load_sessions(plan, root)
    boots = [loaded[(s["pair"], s["arm"])]["boot"] for s in realized_sessions(plan, root)]
    comparison = compare.compare(plan, loaded, None)
    made = {"comparison": comparison, "bar": judge_plan(plan, comparison, boots)}
    if outputs.folder(root).is_dir():
        made["recommendation"] = outputs.make(plan, root)
    return json.dumps(made, sort_keys=True)


def under(monkeypatch: pytest.MonkeyPatch, sum_: Callable[..., object], root: Path) -> str:
    with monkeypatch.context() as m:
        m.setattr(builtins, "sum", sum_)
        return analysis(root)


def test_the_two_sums_differ_on_the_values_a_folder_holds():
    # the test can fail: on these per-pair spreads the two sum()s give other last digits
    values = [232.1038060907259, 246.23500707445072, 198.39553305582186, 191.14901706359706]
    assert in_order(values) != compensated(values)
    assert math.fsum(values) == pytest.approx(in_order(values), rel=1e-15)


@pytest.mark.parametrize("name", ["qwen-draft-h100", "ksched-h200-35b-adj", "ksched-cpu"])
def test_a_folder_analyses_to_the_same_bits_under_either_sum(monkeypatch, name):
    root = ROOT / "results" / name
    assert under(monkeypatch, in_order, root) == under(monkeypatch, compensated, root)
