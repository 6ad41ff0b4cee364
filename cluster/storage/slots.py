"""Slots of an array: one lock per slot, and sorted slots grouped into runs for batched I/O.

Rules:
1. A slot's lock exists while a task holds or waits for it, and is dropped after, so the table
   stays as small as the work in flight.
2. Several slots are always locked in increasing order, so two tasks never deadlock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager

import trio

__all__ = ["SlotLocks", "slot_runs"]


class SlotLocks:
    """Per-slot locks: one task at a time changes a slot."""

    def __init__(self) -> None:
        self._locks: dict[int, tuple[trio.Lock, list[int]]] = {}  # slot -> (lock, [users])

    @asynccontextmanager
    async def hold(self, slot: int) -> AsyncIterator[None]:
        lock, users = self._locks.setdefault(slot, (trio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if users[0] == 0:
                del self._locks[slot]

    @asynccontextmanager
    async def hold_run(self, first: int, n: int) -> AsyncIterator[None]:
        """Hold the locks of ``n`` consecutive slots from ``first`` (taken in order)."""
        async with AsyncExitStack() as stack:
            for slot in range(first, first + n):
                await stack.enter_async_context(self.hold(slot))
            yield


def slot_runs(slots: Sequence[int], limit: int = 32) -> list[tuple[int, int]]:
    """Sorted slots as ``(first, count)`` runs of consecutive slots, at most ``limit`` long."""
    runs: list[tuple[int, int]] = []
    for slot in sorted(slots):
        if runs and runs[-1][0] + runs[-1][1] == slot and runs[-1][1] < limit:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((slot, 1))
    return runs
