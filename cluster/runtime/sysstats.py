"""The system-stats ring: one psutil sample a second, the newest 1024 kept, with event ids.

Event ids count from 0 since the node started; ``since(min_event_id)`` is inclusive, so a page
asks for ``last + 1``. Sampling (``sample``) is sync and cheap; the node's nursery calls it once a
second from ``serve_sampling``.
"""

from __future__ import annotations

import collections
import socket
import time
from collections.abc import Callable
from typing import Any

import psutil
import trio

__all__ = ["StatsRing"]

RING_SIZE = 1024


class StatsRing:
    def __init__(self, identity: Callable[[], dict[str, Any]], size: int = RING_SIZE) -> None:
        self._identity = identity
        self._ring: collections.deque[dict[str, Any]] = collections.deque(maxlen=size)
        self._next_id = 0
        self._hostname = socket.gethostname()
        psutil.cpu_percent(None)  # prime: the first call always answers 0.0

    @property
    def next_event_id(self) -> int:
        return self._next_id

    def sample(self) -> dict[str, Any]:
        vm = psutil.virtual_memory()
        ident = self._identity()
        entry = {
            "event_id": self._next_id,
            "timestamp_ns": time.monotonic_ns(),
            "wall_time_ns": time.time_ns(),
            "ram_total_bytes": vm.total,
            "ram_available_bytes": vm.available,
            "ram_usage_pct": vm.percent,
            "cpu_usage_pct": psutil.cpu_percent(None),
            "gpu_count": 0,
            "gpu_usage_pct": 0.0,
            "hbm_usage_pct": 0.0,
            "hbm_used_bytes": 0,
            "hbm_total_bytes": 0,
            "hostname": self._hostname,
            "ip_address": ident.get("ip_address", ""),
            "node_id": ident.get("node_id", 0),
            "is_leader": ident.get("is_leader", False),
        }
        self._ring.append(entry)
        self._next_id += 1
        return entry

    def since(self, min_event_id: int = 0) -> list[dict[str, Any]]:
        """Entries with ``event_id >= min_event_id``, oldest first."""
        if min_event_id <= 0:
            return list(self._ring)
        return [e for e in self._ring if e["event_id"] >= min_event_id]

    def latest(self) -> dict[str, Any] | None:
        return self._ring[-1] if self._ring else None

    async def serve_sampling(self, interval: float = 1.0) -> None:
        """Take a sample every ``interval`` seconds, forever."""
        while True:
            self.sample()
            await trio.sleep(interval)
