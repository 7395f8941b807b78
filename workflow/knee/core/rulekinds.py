"""The kinds of bar rule, each declared once: the config key that makes a rule that kind, its
margins as % changes, and its words in the bar's table and the plan's summary. A rule's kind is
read from the keys a config has always written (within_pct, min_gain_pct), so every registered
bar hashes as it did; the decision over an interval (knee.analyze.inference) and the bar's
figure (knee.publish.rulefig) read the margins from here."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from knee.core.errors import KneeError


@dataclass(frozen=True)
class RuleKind:
    name: str
    key: str  # the config key that makes a rule this kind, and holds its margin
    # (low, high) % changes the whole interval must lie within, or the % change its lower
    # bound must reach
    margins: Callable[[float], tuple[float, float] | float]
    test: Callable[[float], str]  # what the interval must do, in the bar's table
    summary: Callable[[float], str]  # the rule's margin in the plan's one-line summary

    def value(self, rule: Mapping[str, Any]) -> float:
        out: float = rule[self.key]
        return out


PARITY = RuleKind(
    "parity", "within_pct",
    # a margin of 100 % or more has no lower end: a change cannot fall by all of it
    lambda m: (-m if m < 100 else -math.inf, m),
    lambda m: f"interval inside ±{m}%", lambda m: f"within ±{m}%")
GAIN = RuleKind(
    "gain", "min_gain_pct", lambda g: g,
    lambda g: f"interval above {g:+}%", lambda g: f">= +{g}%")
KINDS = (PARITY, GAIN)


def kind(rule: Mapping[str, Any]) -> RuleKind:
    """The rule's kind, from the key it holds (the config schema admits exactly one)."""
    found = [k for k in KINDS if k.key in rule]
    if len(found) != 1:
        raise KneeError(f"bar rule {rule.get('name')!r} holds "
                        f"{' and '.join(k.key for k in found) or 'none'} of "
                        f"{', '.join(k.key for k in KINDS)}: a rule is of one kind")
    return found[0]


def test_words(rule: Mapping[str, Any]) -> str:
    k = kind(rule)
    return k.test(k.value(rule))


def summary_words(rule: Mapping[str, Any]) -> str:
    k = kind(rule)
    return k.summary(k.value(rule))
