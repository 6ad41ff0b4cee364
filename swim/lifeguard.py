"""Lifeguard's two timers: local health (awareness) and the dogpile suspicion timeout.

Rules:
1. Pure arithmetic on values passed in; the machine owns the clock.
2. Awareness is a score in [0, awareness_max): +1 for a failed probe or each missing nack or a
   refutation, -1 for a successful probe. Intervals and timeouts are scaled by (score + 1), so
   a starved member slows its own accusations instead of accusing healthy peers.
3. A suspicion starts at Max and shrinks toward Min with each independent confirmation:
   ``timeout = max(Min, Max - (Max - Min) * log(C + 1) / log(K + 1))``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["Awareness", "Suspicion", "suspicion_bounds"]


@dataclass(slots=True)
class Awareness:
    """Local health score; ``scale(t)`` stretches a duration by (score + 1)."""

    max_multiplier: int
    score: int = 0

    def apply(self, delta: int) -> int:
        """Add ``delta`` clamped to [0, max_multiplier - 1]; returns the new score."""
        self.score = min(max(self.score + delta, 0), self.max_multiplier - 1)
        return self.score

    def scale(self, duration: float) -> float:
        return duration * (self.score + 1)


def suspicion_bounds(
    suspicion_mult: int, max_timeout_mult: int, n_members: int, probe_interval: float
) -> tuple[float, float]:
    """(Min, Max) suspicion timeouts in seconds for a cluster of ``n_members``.

    Min = suspicion_mult * max(1, log10 N) * T and Max = max_timeout_mult * Min.
    """
    scale = max(1.0, math.log10(max(1, n_members)))
    lo = suspicion_mult * scale * probe_interval
    return lo, max_timeout_mult * lo


@dataclass(slots=True)
class Suspicion:
    """A running suspicion of one member at one incarnation.

    ``k`` is the number of independent confirmations that bring the timeout down to ``lo``;
    ``confirmers`` holds who has confirmed (the first accuser is not a confirmation).
    """

    incarnation: int
    start: float
    lo: float
    hi: float
    k: int
    accuser: int
    confirmers: set[int] = field(default_factory=set)
    _deadline: float = field(default=0.0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._deadline = self.start + self.timeout()

    def confirm(self, src: int) -> bool:
        """Count a suspect message from ``src``; True if it was a new, independent one."""
        if self.k < 1 or src == self.accuser or src in self.confirmers:
            return False
        if len(self.confirmers) >= self.k:
            return False
        self.confirmers.add(src)
        self._deadline = self.start + self.timeout()
        return True

    def timeout(self) -> float:
        """Current timeout in seconds after the confirmations so far."""
        if self.k < 1:
            return self.lo
        c = len(self.confirmers)
        frac = math.log(c + 1) / math.log(self.k + 1)
        return max(self.lo, self.hi - (self.hi - self.lo) * frac)

    def deadline(self) -> float:
        """When the suspicion times out (seconds; kept up to date by ``confirm``)."""
        return self._deadline
