"""Extent allocation over a linear byte space: first fit, freed extents coalesce.

Rules:
1. Offsets and sizes are bytes; every extent is a multiple of ``unit`` bytes, aligned to it.
2. Sync and checkpoint-free: callers run it inside one worker task, so no lock is needed.
3. Running out of space is ``NoSpace`` (a ``Conflict``, HTTP 409): the request is fine, the
   device is full.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass

from cluster.ground.errors import Conflict

__all__ = ["Allocator", "Extent", "NoSpace"]


class NoSpace(Conflict):
    """No free run large enough for an allocation."""


@dataclass(frozen=True, slots=True, order=True)
class Extent:
    offset: int  # bytes from the start of the device
    size: int  # bytes, a multiple of the allocator's unit

    @property
    def end(self) -> int:
        return self.offset + self.size


class Allocator:
    """Free runs of ``[0, capacity)`` kept sorted by offset."""

    def __init__(self, capacity: int, unit: int = 4096) -> None:
        self.unit = unit
        self.capacity = capacity - capacity % unit
        self._free: list[Extent] = [Extent(0, self.capacity)] if self.capacity else []

    def round_up(self, size: int) -> int:
        return max(self.unit, -(-size // self.unit) * self.unit)

    @property
    def remaining(self) -> int:
        """Free bytes in total (possibly fragmented)."""
        return sum(e.size for e in self._free)

    @property
    def largest_free(self) -> int:
        return max((e.size for e in self._free), default=0)

    def allocate(self, size: int) -> Extent:
        """The first free run that holds ``size`` bytes (rounded up to the unit)."""
        need = self.round_up(size)
        for i, run in enumerate(self._free):
            if run.size >= need:
                if run.size == need:
                    del self._free[i]
                else:
                    self._free[i] = Extent(run.offset + need, run.size - need)
                return Extent(run.offset, need)
        raise NoSpace(
            f"no space for {need} bytes: {self.remaining} of {self.capacity} bytes free, "
            f"largest free run {self.largest_free}"
        )

    def free(self, extent: Extent) -> None:
        """Give ``extent`` back; neighbours merge. Freeing free space is a ValueError."""
        i = bisect.bisect_left(self._free, extent)
        before = self._free[i - 1] if i > 0 else None
        after = self._free[i] if i < len(self._free) else None
        if (before and before.end > extent.offset) or (after and extent.end > after.offset):
            raise ValueError(f"double free of {extent}")
        start, end = extent.offset, extent.end
        if after and after.offset == end:
            end = after.end
            del self._free[i]
        if before and before.end == start:
            start = before.offset
            i -= 1
            del self._free[i]
        self._free.insert(i, Extent(start, end - start))

    def free_runs(self) -> list[tuple[int, int]]:
        """The free list as ``(offset, size)`` pairs, for export."""
        return [(e.offset, e.size) for e in self._free]

    def load_free_runs(self, runs: Iterable[tuple[int, int]]) -> None:
        """Replace the free list (the counterpart of ``free_runs``). Runs that are not
        aligned, lie outside ``[0, capacity)`` or overlap are a ValueError; nothing changes."""
        loaded = sorted(Extent(int(o), int(s)) for o, s in runs)
        end = 0
        for run in loaded:
            if run.size <= 0 or run.offset % self.unit or run.size % self.unit:
                raise ValueError(f"free run {run} is empty or not aligned to {self.unit}")
            if run.offset < end or run.end > self.capacity:
                raise ValueError(f"free run {run} overlaps another or ends past {self.capacity}")
            end = run.end
        self._free = loaded

    def grow(self, capacity: int) -> None:
        """Extend the space to ``capacity`` bytes (the new tail is free)."""
        capacity -= capacity % self.unit
        if capacity > self.capacity:
            self.free(Extent(self.capacity, capacity - self.capacity))
            self.capacity = capacity
