"""A fault injected into one block device of this node (``rt_cluster disk``, the node RPC's
``disk`` action): how long each of its operations waits, what share of its reads and writes
fail, whether it is full.

Rules:
1. A ``DiskFault`` is checked when it is made: ``latency_ms`` a finite number in
   0..``MAX_LATENCY_MS``, ``errors`` a percentage in 0..100, ``full`` a bool; anything else
   is a ``ParseError`` naming the field (the node RPC answers it 400). Its numbers are floats.
2. ``NO_DISK_FAULT`` is a healthy device: setting it clears the fault.
3. Only ``rt_bdev`` devices take one (``Container.set_disk_fault``); what it does to the
   device is ``cluster.modules.diskfaults``'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cluster.ground.parse import ParseError, float_value

__all__ = ["MAX_LATENCY_MS", "NO_DISK_FAULT", "DiskFault"]

MAX_LATENCY_MS = 600_000.0  # ten minutes: as long as a network delay may be


@dataclass(frozen=True, slots=True)
class DiskFault:
    """One device's fault (rule 1)."""

    latency_ms: float = 0.0  # each read, write, allocation and free waits this long
    errors: float = 0.0  # percent of reads and writes that fail with an I/O error
    full: bool = False  # no allocation, no write past the device's present use

    def __post_init__(self) -> None:
        latency = float_value(self.latency_ms, low=0, high=MAX_LATENCY_MS, what="latency_ms")
        errors = float_value(self.errors, low=0, high=100, what="errors percent")
        if not isinstance(self.full, bool):
            raise ParseError(f"full: expected true or false, got {type(self.full).__name__}")
        object.__setattr__(self, "latency_ms", latency)
        object.__setattr__(self, "errors", errors)

    @property
    def active(self) -> bool:
        """Is anything set (rule 2)?"""
        return bool(self.latency_ms or self.errors or self.full)

    def as_dict(self) -> dict[str, Any]:
        """The faults answer's entry for the device: ``latency_ms``, ``errors``, ``full``."""
        return {"latency_ms": self.latency_ms, "errors": self.errors, "full": self.full}


NO_DISK_FAULT = DiskFault()
