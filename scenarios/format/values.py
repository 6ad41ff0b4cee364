"""Strict checks of the values in a scenario file: numbers, integers, node ids, sets of ids.

Rules:
1. One place parses numbers and ids: a bool is not a number, NaN and infinities are refused,
   every range is checked; a node id must exist in the cluster at that point of the steps.
2. Every failure is a ``ScenarioError`` naming the file and the place (``where``).
"""

from __future__ import annotations

import math
from typing import Any

from cluster.ground.parse import MAX_NODE_ID, ParseError, parse_int

from .records import ScenarioError, Target

__all__ = ["Checker"]


def _finite(v: float) -> bool:
    """Finite as a float: an int beyond the float range is not (``math.isfinite`` raises)."""
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


class Checker:
    """The value checks for one file; ``source`` (its path or name) starts every message."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, problem: str) -> ScenarioError:
        return ScenarioError(f"{self.source}: {where}: {problem}")

    def number(self, v: Any, where: str, *, low: float = 0.0, high: float | None = None) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float) or not _finite(v):
            raise self.fail(where, f"expected a number, got {v!r}")
        if v < low or (high is not None and v > high):
            rng = f"{low:g}..{high:g}" if high is not None else f">= {low:g}"
            raise self.fail(where, f"{v!r} is out of range ({rng})")
        return float(v)

    def integer(self, v: Any, where: str, *, low: int = 0, high: int | None = None) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(where, f"expected an integer, got {v!r}")
        if v < low or (high is not None and v > high):
            raise self.fail(where, f"{v} is out of range ({low}..{high})")
        return v

    def node(self, v: Any, where: str, count: int, *, allow: tuple[str, ...] = ()) -> Target:
        """A node id below ``count``, or one of the words in ``allow``."""
        if isinstance(v, str) and v in allow:
            return v
        if isinstance(v, bool) or not isinstance(v, int):
            extra = f" or {' / '.join(allow)}" if allow else ""
            raise self.fail(where, f"expected a node id{extra}, got {v!r}")
        if not 0 <= v < count:
            raise self.fail(where, f"node {v} does not exist (nodes 0..{count - 1} at that time)")
        return v

    def id_set(self, v: Any, where: str, count: int) -> tuple[int, ...] | str:
        """``all``, an id, a range ``"3-7"`` (inclusive) or a list of ids and ranges."""
        if v == "all":
            return "all"
        if not isinstance(v, list):
            v = [v]
        if not v:
            raise self.fail(where, "expected 'all' or a list of node ids, got []")
        out: list[int] = []
        for x in v:
            if isinstance(x, str) and "-" in x:
                first, last = self._id_range(x, where)
                out += [int(self.node(i, where, count)) for i in range(first, last + 1)]
            else:
                out.append(int(self.node(x, where, count)))
        return tuple(out)

    def _id_range(self, text: str, where: str) -> tuple[int, int]:
        """``"3-7"``: ASCII digits only (``cluster.ground.parse``), first <= last."""
        lo, _, hi = text.partition("-")
        try:
            first, last = (parse_int(p.strip(), low=0, high=MAX_NODE_ID) for p in (lo, hi))
        except ParseError:
            first, last = 1, 0
        if first > last:
            raise self.fail(where, f"bad range {text!r}: expected like '3-7'")
        return first, last
