"""The system-stats ring: one psutil sample a second, the newest 1024 kept, with event ids.

Event ids count from 0 since the node started; ``since(min_event_id)`` is inclusive, so a page
asks for ``last + 1``. Sampling (``sample``) is sync and cheap; the node's nursery calls it about
once a second from ``serve_sampling``.

Rules:
1. Sampling never raises into the node: a sample that fails (an ``OSError`` such as EMFILE
   when the process is out of file descriptors, or a psutil error) is counted in ``errors``,
   logged once as a warning (then at debug level), and the last sample stays the newest.
2. ``serve_sampling`` survives anything ``sample`` did not foresee the same way: counted,
   logged with its traceback the first time, and the next sample is taken on time.
3. The ring is kept in columns (arrays of numbers, 50 bytes a sample, about 50 KiB for the
   whole ring, where 1024 dicts took a megabyte): an entry's dict is built when it is read,
   the newest one once. Ids are consecutive, so entry ``i`` sits at ``i % size``.
4. In a node the samples ride on the membership's timer (``serve_sampling``'s ``wait``):
   each comes with the first SWIM tick from 0.7 to 1.3 intervals after the last, and wakes
   the process itself only when no tick comes in that time. At rest a probe tick comes
   once a second, so sampling costs a node no wake-up of its own (it was one in four).
"""

from __future__ import annotations

import logging
import socket
import time
from array import array
from collections.abc import Awaitable, Callable
from typing import Any

import psutil
import trio

__all__ = ["StatsRing"]

log = logging.getLogger(__name__)
RING_SIZE = 1024
SLACK = 0.3  # of an interval, either way: how far a sample may move to ride on a tick (rule 4)
Wait = Callable[[float, float], Awaitable[None]]  # wait(deadline, slack), rule 4

_INTS = ("timestamp_ns", "wall_time_ns", "ram_total_bytes", "ram_available_bytes", "node_id")
_FLOATS = ("ram_usage_pct", "cpu_usage_pct")


class StatsRing:
    def __init__(self, identity: Callable[[], dict[str, Any]], size: int = RING_SIZE) -> None:
        self._identity = identity
        self._size = size
        self._ints = {k: array("q", bytes(8 * size)) for k in _INTS}
        self._floats = {k: array("d", bytes(8 * size)) for k in _FLOATS}
        self._leader = bytearray(size)
        self._ip: list[str] = [""] * size
        self._next_id = 0
        self._newest: dict[str, Any] | None = None
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
            self._read()
        except (OSError, psutil.Error) as exc:
            self._failed(exc)
            return self.latest()
        self._next_id += 1
        self._newest = self._entry(self._next_id - 1)
        return self._newest

    def _failed(self, exc: BaseException) -> None:
        self.errors += 1
        level = logging.WARNING if self.errors == 1 else logging.DEBUG
        log.log(
            level,
            "system stats: a sample failed (%s: %s); keeping the last one",
            type(exc).__name__,
            exc,
        )

    def _read(self) -> None:
        """Read one sample into the slot of the next id, which is the oldest entry's once the
        ring is full: everything is read first, so a failed read leaves that entry whole."""
        vm = psutil.virtual_memory()
        cpu = float(psutil.cpu_percent(None))
        ident = self._identity()
        node_id, ip = int(ident.get("node_id", 0)), str(ident.get("ip_address", ""))
        leader = bool(ident.get("is_leader", False))
        at = self._next_id % self._size
        ints, floats = self._ints, self._floats
        ints["timestamp_ns"][at] = time.monotonic_ns()
        ints["wall_time_ns"][at] = time.time_ns()
        ints["ram_total_bytes"][at] = vm.total
        ints["ram_available_bytes"][at] = vm.available
        ints["node_id"][at] = node_id
        floats["ram_usage_pct"][at] = vm.percent
        floats["cpu_usage_pct"][at] = cpu
        self._leader[at] = leader
        self._ip[at] = ip

    def _entry(self, event_id: int) -> dict[str, Any]:
        at = event_id % self._size
        ints, floats = self._ints, self._floats
        return {
            "event_id": event_id,
            "timestamp_ns": ints["timestamp_ns"][at],
            "wall_time_ns": ints["wall_time_ns"][at],
            "ram_total_bytes": ints["ram_total_bytes"][at],
            "ram_available_bytes": ints["ram_available_bytes"][at],
            "ram_usage_pct": floats["ram_usage_pct"][at],
            "cpu_usage_pct": floats["cpu_usage_pct"][at],
            "gpu_count": 0,
            "gpu_usage_pct": 0.0,
            "hbm_usage_pct": 0.0,
            "hbm_used_bytes": 0,
            "hbm_total_bytes": 0,
            "hostname": self._hostname,
            "ip_address": self._ip[at],
            "node_id": ints["node_id"][at],
            "is_leader": bool(self._leader[at]),
        }

    def since(self, min_event_id: int = 0) -> list[dict[str, Any]]:
        """Entries with ``event_id >= min_event_id``, oldest first."""
        first = max(min_event_id, self._next_id - self._size, 0)
        return [self._entry(i) for i in range(first, self._next_id)]

    def latest(self) -> dict[str, Any] | None:
        return self._newest

    async def serve_sampling(self, interval: float = 1.0, wait: Wait | None = None) -> None:
        """Take a sample every ``interval`` seconds, forever; never raises (rule 2). With
        ``wait`` (``wait(deadline, slack)``, as ``SwimHandle.sleep_near``), each sample may
        come up to ``SLACK`` of an interval early or late, with another timer of the node
        (rule 4)."""
        slack = SLACK * interval
        while True:
            try:
                self.sample()
            except Exception:
                self.errors += 1
                if self.errors == 1:
                    log.exception("system stats: sampling failed; keeping the last sample")
            if wait is None:
                await trio.sleep(interval)
            else:
                await wait(trio.current_time() + interval + slack, 2 * slack)
