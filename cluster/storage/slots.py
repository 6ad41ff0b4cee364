"""Slots of an array: one lock per slot, and sorted slots grouped into runs for batched I/O.

Rules:
1. A slot is in the table while a task holds it, and is dropped after, so the table stays as
   small as the work in flight; a waiter waits for its holder's event, then looks again.
2. Several slots are always locked in increasing order, so two tasks never deadlock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import trio

__all__ = ["SlotLocks", "slot_runs"]


class SlotLocks:
    """Per-slot locks: one task at a time changes a slot. A held slot maps to the event its
    holder sets when it lets go; a waiter waits for that event, then looks again."""

    def __init__(self) -> None:
        self._held: dict[int, trio.Event] = {}  # slot -> set when its holder lets go

    @asynccontextmanager
    async def hold(self, slot: int) -> AsyncIterator[None]:
        async with self.hold_run(slot, 1):
            yield

    @asynccontextmanager
    async def hold_run(self, first: int, n: int) -> AsyncIterator[None]:
        """Hold the locks of ``n`` consecutive slots from ``first`` (taken in order); a run of
        free slots costs one checkpoint and a dict entry per slot."""
        mine, taken = trio.Event(), []
        try:
            for slot in range(first, first + n):
                while (other := self._held.get(slot)) is not None:
                    await other.wait()
                self._held[slot] = mine
                taken.append(slot)
            await trio.lowlevel.checkpoint()
            yield
        finally:
            for slot in taken:
                del self._held[slot]
            mine.set()


def slot_runs(slots: Sequence[int], limit: int = 32) -> list[tuple[int, int]]:
    """Sorted slots as ``(first, count)`` runs of consecutive slots, at most ``limit`` long."""
    runs: list[tuple[int, int]] = []
    for slot in sorted(slots):
        if runs and runs[-1][0] + runs[-1][1] == slot and runs[-1][1] < limit:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((slot, 1))
    return runs
