"""The present use of a device: the runs of its byte space that were ever written.

Rules:
1. Runs are whole units (a write of part of a unit uses all of it, as a file system's block
   does), disjoint and sorted, and touching runs merge: a device written front to back is one
   run however many writes it took.
2. Use only grows: nothing written is given back (a freed extent keeps its blocks, as a disk
   without TRIM does). A device made again starts empty.
3. Sync and checkpoint-free, like the allocator: the device updates it in the write's task.
"""

from __future__ import annotations

import bisect

__all__ = ["Footprint"]


class Footprint:
    """The written runs of ``[0, capacity)`` in units of ``unit`` bytes."""

    def __init__(self, unit: int = 4096) -> None:
        self.unit = unit
        self._starts: list[int] = []  # sorted, disjoint, not touching (rule 1)
        self._ends: list[int] = []

    def _span(self, offset: int, size: int) -> tuple[int, int]:
        start = offset - offset % self.unit
        end = -(-(offset + size) // self.unit) * self.unit
        return start, end

    @property
    def used(self) -> int:
        """Bytes written, in whole units."""
        return sum(e - s for s, e in zip(self._starts, self._ends, strict=True))

    @property
    def runs(self) -> list[tuple[int, int]]:
        """The written runs as ``(offset, size)`` pairs."""
        return [(s, e - s) for s, e in zip(self._starts, self._ends, strict=True)]

    def add(self, offset: int, size: int) -> None:
        """``size`` bytes at ``offset`` were written."""
        if size <= 0:
            return
        start, end = self._span(offset, size)
        i = bisect.bisect_right(self._starts, start) - 1
        if i >= 0 and self._ends[i] >= end:
            return  # a rewrite inside a run: the common case, no change
        lo = bisect.bisect_left(self._ends, start)  # the first run that ends at start or after
        hi = bisect.bisect_right(self._starts, end)  # past the last run that starts by end
        if lo < hi:
            start, end = min(start, self._starts[lo]), max(end, self._ends[hi - 1])
        self._starts[lo:hi] = [start]
        self._ends[lo:hi] = [end]

    def missing(self, offset: int, size: int) -> int:
        """Bytes of ``size`` at ``offset`` (in whole units) never written: past present use."""
        if size <= 0:
            return 0
        start, end = self._span(offset, size)
        covered = 0
        i = bisect.bisect_right(self._ends, start)  # the first run that ends past start
        while i < len(self._starts) and self._starts[i] < end:
            covered += min(end, self._ends[i]) - max(start, self._starts[i])
            i += 1
        return end - start - covered
