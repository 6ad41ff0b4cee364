"""A block device in memory whose writes can be held at a gate, and a 2+1 array over three of
them, for tests of ``cluster.storage.array`` without modules or runtimes.

    stores = [Memory(), Memory(), Memory()]
    array = array_of(stores)           # data on stores 0 and 1, parity on store 2
    stores[2].gate = trio.Event()      # the next write to store 2 waits; ``held`` is set
    stores[1].broken = True            # every write to store 1 fails
"""

from __future__ import annotations

from typing import Any

import trio

from cluster.ground.ids import PoolId
from cluster.storage import ArrayMember, BlockStore, Buffer, Extent, IoSnapshot
from cluster.storage.array import RunOp, StripeArray

__all__ = ["CHUNK", "SLOTS", "Memory", "array_of"]

CHUNK, SLOTS = 512, 16  # bytes a chunk, slots an array


class Memory(BlockStore):
    """A device in memory whose writes can be held at a gate."""

    def __init__(self) -> None:
        self.data = bytearray(CHUNK * SLOTS)
        self.gate: trio.Event | None = None
        self.held = trio.Event()
        self.broken = False  # every write fails (OSError), as a device gone bad does

    @property
    def capacity(self) -> int:
        return len(self.data)

    @property
    def remaining_capacity(self) -> int:
        return 0

    @property
    def largest_free(self) -> int:
        return 0

    def io_snapshot(self) -> IoSnapshot:
        return IoSnapshot(0, 0, 0, 0, 0, 0, 0, 0, 0)

    async def allocate(self, size: int) -> Extent:
        raise NotImplementedError

    async def free(self, extent: Extent) -> None:
        raise NotImplementedError

    async def read(self, offset: int, size: int) -> bytes:
        await trio.lowlevel.checkpoint()
        return bytes(self.data[offset : offset + size])

    async def write(self, offset: int, data: Buffer) -> None:
        if self.broken:
            raise OSError("the device is broken")
        if self.gate is not None:
            self.held.set()
            await self.gate.wait()
        self.data[offset : offset + len(data)] = bytes(data)


async def _run_now(_method: str, _kib: float, fn: Any) -> Any:
    return await fn()


def array_of(stores: list[Memory], run_op: RunOp = _run_now, spares: int = 0) -> StripeArray:
    """An array ``a`` of chunk ``CHUNK``: its data on the first two stores, parity on the
    rest but the last ``spares`` (devices it can open, ``m{i}`` of pool id ``900+i``, to
    join it); ``run_op`` runs its tasks (in the caller's task by default)."""
    ids = [PoolId(900 + i, 0) for i in range(len(stores))]
    by_id = dict(zip(ids, stores, strict=True))
    members = [ArrayMember(f"m{i}", pid, 0) for i, pid in enumerate(ids)]
    parity = members[2 : len(members) - spares]
    return StripeArray("a", CHUNK, SLOTS, members[:2], parity, by_id.get, run_op)
