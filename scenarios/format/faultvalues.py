"""The values of the cut, clock and disk faults, checked in one place.

Rules:
1. Each check raises ``ValueError`` with one line naming the bad value and its range; the
   Python API (``play.chaos``) and the scenario steps (``steps``) give the same words.
2. Numbers are finite; the ranges are swim's (``swim.MAX_CLOCK_OFFSET_S``, the clock rates)
   and the node's (a disk's latency up to ``MAX_DISK_LATENCY_MS``, errors a percentage, a
   pool a short name).
"""

from __future__ import annotations

import math
import re

from swim import MAX_CLOCK_OFFSET_S, MAX_CLOCK_RATE, MIN_CLOCK_RATE

__all__ = ["MAX_DISK_LATENCY_MS", "POOL_NAME", "check_clock", "check_disk"]

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
