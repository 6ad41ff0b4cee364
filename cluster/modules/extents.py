"""The block-store half that every extent-allocating device shares: allocation, free space and
measured I/O, each allocation or free run as a task of the device's pool.

A device sets ``allocator`` and ``meter`` in ``__post_init__`` and implements ``capacity``,
``read`` and ``write``, each checking its range first (``check_range``); ``rt_bdev`` devices
and ``rt_safe_bdev`` arrays both do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from cluster.ground.errors import BadRequest
from cluster.runtime import Container
from cluster.storage import Allocator, BlockStore, Buffer, Extent, IoMeter, IoSnapshot

__all__ = ["ExtentDevice"]


class ExtentDevice(Container, BlockStore):
    allocator: Allocator
    meter: IoMeter
    device_noun: ClassVar[str] = "block device"  # how a range error names the device
    instance: str = ""  # set at start by a device that lends itself to peers (``remote``)
    made_for: str = ""  # the writer of the peer's array it was made for (``remote`` rule 6)
    fences: dict[str, int]  # writer -> the highest epoch seen (``remote`` rule 2)

    def check_range(self, offset: int, size: int) -> None:
        """BadRequest unless ``size`` bytes at ``offset`` lie inside the device."""
        if offset < 0 or size < 0 or offset + size > self.capacity:
            raise BadRequest(
                f"{size} bytes at offset {offset} are outside {self.device_noun} "
                f"{self.info.pool_id} (capacity {self.capacity})"
            )

    @property
    def remaining_capacity(self) -> int:
        return self.allocator.remaining

    @property
    def largest_free(self) -> int:
        return self.allocator.largest_free

    @property
    def unused(self) -> bool:
        """Nothing is allocated on this device."""
        return self.allocator.remaining == self.allocator.capacity

    def io_snapshot(self) -> IoSnapshot:
        return self.meter.snapshot()

    async def allocate(self, size: int) -> Extent:
        def task() -> Extent:
            self.ensure_open()
            return self.allocator.allocate(size)

        return await self.runtime.workers.run(self.info.pool_id, "allocate", size / 1024, task)

    async def free(self, extent: Extent) -> None:
        def task() -> None:
            self.ensure_open()
            self.allocator.free(extent)

        await self.runtime.workers.run(self.info.pool_id, "free", extent.size / 1024, task)

    async def write_admitted(self, offset: int, data: Buffer, admit: Callable[[], None]) -> None:
        """``write``, once ``admit()`` has not raised: a device that delays its writes (a disk
        fault) calls it after the delay, so a fence is judged when the bytes land
        (``remote`` rule 2)."""
        admit()
        await self.write(offset, data)
