"""The system-stats ring: one psutil sample a second, the newest 1024 kept, with event ids.

Event ids count from 0 since the node started; ``since(min_event_id)`` is inclusive, so a page
asks for ``last + 1``. Sampling (``sample``) is sync and cheap; the node's nursery calls it once a
second from ``serve_sampling``.

Rules:
1. Sampling never raises into the node: a sample that fails (an ``OSError`` such as EMFILE
   when the process is out of file descriptors, or a psutil error) is counted in ``errors``,
   logged once as a warning (then at debug level), and the last sample stays the newest.
2. ``serve_sampling`` survives anything ``sample`` did not foresee the same way: counted,
   logged with its traceback the first time, and the next sample is taken on time.
"""

from __future__ import annotations

import collections
import logging
import socket
import time
from collections.abc import Callable
from typing import Any

import psutil
import trio

__all__ = ["StatsRing"]

log = logging.getLogger(__name__)
RING_SIZE = 1024


class StatsRing:
    def __init__(self, identity: Callable[[], dict[str, Any]], size: int = RING_SIZE) -> None:
        self._identity = identity
        self._ring: collections.deque[dict[str, Any]] = collections.deque(maxlen=size)
        self._next_id = 0
        self._hostname = socket.gethostname()
        self.errors = 0  # samples that failed (see rule 1)
        try:
            psutil.cpu_percent(None)  # prime: the first call always answers 0.0
        except (OSError, psutil.Error) as exc:
            self._failed(exc)

    @property
    def next_event_id(self) -> int:
        return self._next_id

    def sample(self) -> dict[str, Any] | None:
        """Take one sample and keep it; the newest sample (None before any) if it failed."""
        try:
            entry = self._read()
        except (OSError, psutil.Error) as exc:
            self._failed(exc)
            return self.latest()
        self._ring.append(entry)
        self._next_id += 1
        return entry

    def _failed(self, exc: BaseException) -> None:
        self.errors += 1
        level = logging.WARNING if self.errors == 1 else logging.DEBUG
        log.log(
            level,
            "system stats: a sample failed (%s: %s); keeping the last one",
            type(exc).__name__,
            exc,
        )

    def _read(self) -> dict[str, Any]:
        vm = psutil.virtual_memory()
        ident = self._identity()
        return {
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

    def since(self, min_event_id: int = 0) -> list[dict[str, Any]]:
        """Entries with ``event_id >= min_event_id``, oldest first."""
        if min_event_id <= 0:
            return list(self._ring)
        return [e for e in self._ring if e["event_id"] >= min_event_id]

    def latest(self) -> dict[str, Any] | None:
        return self._ring[-1] if self._ring else None

    async def serve_sampling(self, interval: float = 1.0) -> None:
        """Take a sample every ``interval`` seconds, forever; never raises (rule 2)."""
        while True:
            try:
                self.sample()
            except Exception:
                self.errors += 1
                if self.errors == 1:
                    log.exception("system stats: sampling failed; keeping the last sample")
            await trio.sleep(interval)
