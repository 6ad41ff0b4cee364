"""The block interface every block-device-like container offers other modules.

``rt_bdev`` devices and ``rt_safe_bdev`` arrays both implement ``BlockStore``, so a placement
module (``rt_cte_core``) can put data on either without knowing which it is. Every method is
async because it runs as a task of the device's pool on the node's workers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from .alloc import Extent
from .erasure import Buffer

if TYPE_CHECKING:
    from .erasure import Bytes as Rows
from .iometer import IoSnapshot

__all__ = ["BlockStore"]


class BlockStore(ABC):
    """Allocate extents of a linear byte space, then read and write inside them."""

    @property
    @abstractmethod
    def capacity(self) -> int:
        """Usable bytes."""

    @property
    @abstractmethod
    def remaining_capacity(self) -> int:
        """Bytes not allocated (possibly fragmented)."""

    @property
    @abstractmethod
    def largest_free(self) -> int:
        """The largest single allocation that can succeed now, in bytes."""

    @abstractmethod
    def io_snapshot(self) -> IoSnapshot:
        """Measured bandwidth, latency and totals of this device."""

    @abstractmethod
    async def allocate(self, size: int) -> Extent:
        """Reserve ``size`` bytes (rounded up to the device's unit); NoSpace (409) when full."""

    @abstractmethod
    async def free(self, extent: Extent) -> None:
        """Give an allocated extent back."""

    @abstractmethod
    async def read(self, offset: int, size: int) -> bytes:
        """``size`` bytes at ``offset``."""

    async def read_into(self, offset: int, out: memoryview) -> None:
        """``len(out)`` bytes at ``offset`` into ``out`` (a writable byte view): no new buffer
        for large reads. By default a ``read`` and a copy."""
        out[:] = await self.read(offset, len(out))

    async def write_rows(self, offset: int, rows: Rows) -> None:
        """The rows of a byte matrix (a strided view is fine) back to back at ``offset``: data
        chunks of an array straight from the caller's buffer. By default one joined write."""
        await self.write(offset, rows.tobytes())

    @abstractmethod
    async def write(self, offset: int, data: Buffer) -> None:
        """Store ``data`` (any bytes-like object) at ``offset``."""
