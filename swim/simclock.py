"""The simulated network's node clocks: a node whose clock runs fast or slow, or was set.

A ``NodeClock`` maps the network's true virtual time to the time a node's machine lives by
(its *local* time: what a real node's monotonic clock reads) and back, and holds the node's
wall clock as an offset from its local time (``SwimMachine.set_wall_offset``).

Rules:
1. Local time runs at ``rate`` times true time from the last change (the anchor): it is
   continuous across a change and never goes backwards, as a real monotonic clock; only the
   rate changes its pace, never an offset.
2. The wall clock reads local time + ``wall_offset``. Setting the clock to ``offset`` makes the
   wall clock read true time + ``offset`` at that instant (whatever the local time drifted
   by), and from then it runs at ``rate``.
3. A deadline in local time converts to the first true instant whose local time reaches it,
   so a tick scheduled for a deadline always finds it due.
4. A node without a clock set has none (``SimNode.clock is None``): its local time is true
   time, and the network converts nothing.
"""

from __future__ import annotations

import math

__all__ = ["NodeClock"]


class NodeClock:
    """One node's local and wall clock against the network's true time (module docstring)."""

    __slots__ = ("anchor_local", "anchor_true", "last", "offset", "rate", "wall_offset")

    def __init__(self, now: float) -> None:
        self.anchor_true = now
        self.anchor_local = now
        self.last = now  # the latest local time handed out (rule 1)
        self.offset = 0.0
        self.rate = 1.0
        self.wall_offset = 0.0

    def set(self, now: float, offset: float, rate: float) -> None:
        """Re-anchor at true time ``now``: from here local time runs at ``rate`` (rule 1) and
        the wall clock reads true + ``offset`` (rule 2)."""
        local = self.local(now)
        self.anchor_true, self.anchor_local = now, local
        self.offset, self.rate = float(offset), float(rate)
        self.wall_offset = now + self.offset - local

    def local(self, now: float) -> float:
        """The node's local time at true time ``now`` (never less than the last handed out)."""
        t = self.anchor_local + (now - self.anchor_true) * self.rate
        if t < self.last:
            return self.last
        self.last = t
        return t

    def true(self, local: float) -> float:
        """Rule 3: the first true instant whose local time reaches ``local``."""
        if local == math.inf:
            return local
        t = self.anchor_true + (local - self.anchor_local) / self.rate
        if t < self.anchor_true:
            return self.anchor_true
        while self.anchor_local + (t - self.anchor_true) * self.rate < local:
            t = math.nextafter(t, math.inf)
        return t

    def wall(self, local: float) -> float:
        """The node's wall clock at its local time ``local`` (rule 2)."""
        return local + self.wall_offset
