"""What a disk fault (``cluster.runtime.DiskFault``) does to an ``rt_bdev`` device.

Rules:
1. Every read, write, allocation and free of the device first waits ``latency_ms``, on the
   node's own clock (``trio.sleep``: a node whose clock runs fast or slow waits its own
   milliseconds). The rest of the fault is judged after the wait, as it stands then.
2. ``errors`` percent of reads and writes then fail as a failed I/O of the device does: a
   ``Conflict`` (409) ``read of block device 901.0 failed: Input/output error``, before any
   byte moves. The draws come from the device's own ``random.Random``, seeded from its pool
   id, so a test's draws repeat.
3. ``full``: the device takes no allocation (``NoSpace``, 409, as a device without space
   answers) and no write past its present use, the blocks written since it started
   (``storage.Footprint``): a rewrite of blocks it holds goes on, a write that needs new
   ones is refused (``NoSpace``).
4. Clearing the fault restores the device at once; an operation already waiting ends its
   wait first. A healthy device pays one attribute test per operation (``on``).
"""

from __future__ import annotations

import errno
import os
import random

import trio

from cluster.ground.errors import Conflict
from cluster.runtime import NO_DISK_FAULT, DiskFault
from cluster.storage import Footprint, NoSpace

__all__ = ["DeviceFaults"]

EIO_TEXT = os.strerror(errno.EIO)


class DeviceFaults:
    """The fault of one device, its draws and its present use; ``what`` names the device in
    a refusal (``block device 901.0``)."""

    def __init__(self, what: str, seed: str, unit: int) -> None:
        self.what = what
        self.fault = NO_DISK_FAULT
        self.on = False  # rule 4: is any fault set?
        self.rng = random.Random(seed)
        self.footprint = Footprint(unit)

    def set(self, fault: DiskFault) -> None:
        """Rule 4: ``fault`` from now on (``NO_DISK_FAULT`` clears it)."""
        self.fault, self.on = fault, fault.active

    async def wait(self) -> None:
        """Rule 1: the fault's latency, if any."""
        if self.fault.latency_ms:
            await trio.sleep(self.fault.latency_ms / 1000.0)

    def judge(self, op: str, offset: int, size: int) -> None:
        """Rules 2 and 3: refuse ``op`` of ``size`` bytes at ``offset`` as the fault says."""
        fault = self.fault
        if op in ("read", "write") and fault.errors and self.rng.random() * 100 < fault.errors:
            raise Conflict(f"{op} of {self.what} failed: {EIO_TEXT}")
        if not fault.full:
            return
        if op == "allocate":
            raise NoSpace(f"no space for {size} bytes: {self.what} is full")
        if op == "write" and (past := self.footprint.missing(offset, size)):
            raise NoSpace(
                f"write of {self.what} failed: the device is full ({past} of {size} bytes at "
                f"{offset} past its present use)"
            )

    async def admit(self, op: str, offset: int, size: int) -> None:
        """``wait``, then ``judge``."""
        await self.wait()
        self.judge(op, offset, size)
