"""The simulated network's link model: partitions, per-node faults, loss, duplication, delay.

Rules:
1. Every draw comes from the network's one seeded ``random.Random``, in the order the
   scheduler asks, so a run stays a pure function of its arguments (``simnet`` rule 1).
2. Traffic flows only inside a partition's group (an unlisted node is a group of its own),
   and only when neither end's faults (``swim.faults``: block, loss) cut the other off. A
   one-way cut drops what its node sends (``Faults.outbound``); a TCP push/pull needs both
   directions, so a cut either way fails it (``faults`` rule 4).
3. A packet's delay is uniform in ``delay`` (seconds), plus both ends' injected delays; loss
   and duplication (percent) are drawn per packet, only when set.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from .faults import Faults

__all__ = ["Links"]


class Links:
    """The links between simulated nodes (see the module docstring)."""

    __slots__ = ("delay", "dup", "groups", "loss", "rng")

    def __init__(
        self, rng: random.Random, loss: float, dup: float, delay: tuple[float, float]
    ) -> None:
        self.rng = rng
        self.loss, self.dup = float(loss), float(dup)
        self.delay = (float(delay[0]), float(max(delay)))
        self.groups: dict[int, int] | None = None

    def partition(self, groups: Iterable[Iterable[int]]) -> None:
        self.groups = {i: g for g, members in enumerate(groups) for i in members}

    def heal(self) -> None:
        self.groups = None

    def cut(self, i: int, a: Faults, j: int, b: Faults, tcp: bool = False) -> bool:
        """Rule 2: is traffic from node i (faults ``a``) to node j (``b``) dropped?"""
        g = self.groups
        if g is not None and g.get(i, -1 - i) != g.get(j, -1 - j):
            return True
        if tcp and b.is_cut(i):
            return True
        return a.outbound(j, self.rng) is not None or b.verdict(i, self.rng) is not None

    def lost(self) -> bool:
        return bool(self.loss) and self.rng.random() * 100.0 < self.loss

    def duplicated(self) -> bool:
        return bool(self.dup) and self.rng.random() * 100.0 < self.dup

    def latency(self, ends: tuple[int, Faults, int, Faults] | None = None) -> float:
        """Rule 3: one delay (s); ``ends`` ``(i, a, j, b)`` add both ends' injected delays."""
        lo, hi = self.delay
        t = lo if hi <= lo else lo + (hi - lo) * self.rng.random()  # rng.uniform, unwrapped
        if ends is not None:
            i, a, j, b = ends
            t += a.delay(j) + b.delay(i)
        return t
