"""The one-way cut, the clock and the disk faults of a ``Cluster`` (``chaos``), and their
arguments checked in one place.

Rules:
1. Each call checks its arguments before anything is recorded or done. Each check raises
   ``ValueError`` with one line naming the bad value and its range; the Python API (``chaos``)
   and the scenario steps (``format``) give the same words.
2. Numbers are finite; the ranges are swim's (``swim.MAX_CLOCK_OFFSET_S``, the clock rates)
   and the node's (a disk's latency up to ``MAX_DISK_LATENCY_MS``, errors a percentage).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from swim import MAX_CLOCK_OFFSET_S, MAX_CLOCK_RATE, MIN_CLOCK_RATE

from ..judge.trace import Action
from .backend import Backend

__all__ = [
    "MAX_DISK_LATENCY_MS",
    "POOL_NAME",
    "FaultCalls",
    "check_clock",
    "check_disk",
    "ids_of",
]

MAX_DISK_LATENCY_MS = 600_000.0
POOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def _number(what: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what} must be a number, not {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{what} must be a finite number, not {value!r}")
    return x


def check_clock(offset: object, rate: object) -> tuple[float, float]:
    """Rule 2: ``offset`` within a year either way, ``rate`` in 0.5..2.0."""
    s, r = _number("clock offset", offset), _number("clock rate", rate)
    if abs(s) > MAX_CLOCK_OFFSET_S:
        raise ValueError(
            f"clock offset is at most {MAX_CLOCK_OFFSET_S:.0f} s (a year) either way, not {s:g}"
        )
    if not MIN_CLOCK_RATE <= r <= MAX_CLOCK_RATE:
        raise ValueError(f"clock rate is {MIN_CLOCK_RATE}..{MAX_CLOCK_RATE}, not {r:g}")
    return s, r


def check_disk(pool: object, latency_ms: object, errors: object) -> tuple[str, float, float]:
    """Rule 2: a pool name, a latency of 0..600000 ms, errors a percentage."""
    if not isinstance(pool, str) or not POOL_NAME.fullmatch(pool):
        raise ValueError(f"a disk pool is a name of 1..64 letters, digits, _.-, not {pool!r}")
    ms, pct = _number("disk latency_ms", latency_ms), _number("disk errors", errors)
    if not 0.0 <= ms <= MAX_DISK_LATENCY_MS:
        raise ValueError(f"disk latency_ms is 0..{MAX_DISK_LATENCY_MS:.0f}, not {ms:g}")
    if not 0.0 <= pct <= 100.0:
        raise ValueError(f"disk errors is a percentage (0..100), not {pct:g}")
    return pool, ms, pct


def ids_of(nodes: int | Iterable[int]) -> list[int]:
    """One node id or several, sorted without repeats."""
    if isinstance(nodes, int):
        return [nodes]
    return sorted({int(i) for i in nodes})


class FaultCalls:
    """``Cluster.cut``, ``clock`` and ``disk`` (``chaos``, which supplies what is declared)."""

    backend: Backend

    if TYPE_CHECKING:  # supplied by ``Cluster``

        def _known(self, *ids: int) -> None: ...

        def _record(
            self, kind: str, nodes: Iterable[int] = (), name: str | None = None, **kw: Any
        ) -> Action: ...

    async def cut(
        self, src: int | Iterable[int], dst: int | Iterable[int], *, name: str | None = None
    ) -> None:
        """Drop everything a node of ``src`` sends to a node of ``dst`` (one way: what ``dst``
        sends still arrives; push/pulls between them fail either way). Cuts add up; ``heal``
        removes them."""
        froms, tos = ids_of(src), ids_of(dst)
        self._known(*froms, *tos)
        if not froms or not tos:
            raise ValueError("a cut needs nodes on both sides")
        if both := sorted(set(froms) & set(tos)):
            raise ValueError(f"a cut from a node to itself: node {both[0]} is on both sides")
        self._record("cut", froms, name, groups=(tuple(froms), tuple(tos)))
        await self.backend.cut(froms, tos)

    async def clock(
        self, i: int, offset: float = 0.0, rate: float = 1.0, *, name: str | None = None
    ) -> None:
        """Node ``i``'s wall clock reads true + ``offset`` seconds (a jump, either way, up to
        a year) and its clock runs at ``rate`` (0.5..2.0) times real speed; ``heal`` resets
        it. A restart keeps it."""
        self._known(i)
        check_clock(offset, rate)
        self._record("clock", (i,), name, value=float(offset), rate=float(rate))
        await self.backend.clock(i, float(offset), float(rate))

    async def disk(
        self,
        i: int,
        pool: str,
        latency_ms: float = 0.0,
        errors: float = 0.0,
        full: bool = False,
        *,
        name: str | None = None,
    ) -> None:
        """Node ``i``'s device ``pool`` delays each operation by ``latency_ms``, fails
        ``errors`` percent of reads and writes, and with ``full`` refuses growth; real node
        processes only (the simulator refuses it: ``ClusterError``)."""
        self._known(i)
        check_disk(pool, latency_ms, errors)
        kw: dict[str, Any] = {"pool": pool, "errors": float(errors), "full": bool(full)}
        self._record("disk", (i,), name, value=float(latency_ms), **kw)
        await self.backend.disk(i, pool, float(latency_ms), float(errors), bool(full))
