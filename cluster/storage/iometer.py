"""Measured I/O figures of a device: bandwidth, latency, IOPS and totals.

Bandwidth and latency come from the last ``SAMPLES`` operations of each kind (bytes moved over
the time those operations took, so an idle device keeps its last measured speed); IOPS counts
the operations finished in the last ``window_s`` seconds of the injected clock.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["IoMeter", "IoSnapshot"]

SAMPLES = 256


@dataclass(frozen=True, slots=True)
class IoSnapshot:
    read_bandwidth_mbps: float  # MB/s (10^6 bytes) over the recent reads' own time
    write_bandwidth_mbps: float
    read_latency_us: float  # mean µs of the recent reads
    write_latency_us: float
    iops: float  # operations per second over the last window
    total_reads: int
    total_writes: int
    total_bytes_read: int
    total_bytes_written: int

    def to_json(self) -> dict[str, float | int]:
        return {
            "read_bandwidth_mbps": round(self.read_bandwidth_mbps, 3),
            "write_bandwidth_mbps": round(self.write_bandwidth_mbps, 3),
            "read_latency_us": round(self.read_latency_us, 3),
            "write_latency_us": round(self.write_latency_us, 3),
            "iops": round(self.iops, 3),
            "total_reads": self.total_reads,
            "total_writes": self.total_writes,
            "total_bytes_read": self.total_bytes_read,
            "total_bytes_written": self.total_bytes_written,
        }


class _Kind:
    __slots__ = ("bytes", "ops", "samples")

    def __init__(self) -> None:
        self.ops = 0
        self.bytes = 0
        self.samples: deque[tuple[int, float]] = deque(maxlen=SAMPLES)

    def record(self, nbytes: int, seconds: float) -> None:
        self.ops += 1
        self.bytes += nbytes
        self.samples.append((nbytes, seconds))

    def bandwidth_mbps(self) -> float:
        busy = sum(s for _, s in self.samples)
        return sum(n for n, _ in self.samples) / busy / 1e6 if busy > 0 else 0.0

    def latency_us(self) -> float:
        n = len(self.samples)
        return sum(s for _, s in self.samples) / n * 1e6 if n else 0.0


class IoMeter:
    """Counts reads and writes; ``snapshot()`` is cheap enough for every dashboard poll."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, window_s: float = 5.0) -> None:
        self._clock = clock
        self.window_s = window_s
        self._read = _Kind()
        self._write = _Kind()
        self._done: deque[float] = deque(maxlen=8192)

    def record(self, kind: str, nbytes: int, seconds: float) -> None:
        """One finished operation (``read`` or ``write``) of ``nbytes`` taking ``seconds``."""
        (self._read if kind == "read" else self._write).record(nbytes, seconds)
        self._done.append(self._clock())

    def iops(self) -> float:
        horizon = self._clock() - self.window_s
        while self._done and self._done[0] < horizon:
            self._done.popleft()
        return len(self._done) / self.window_s

    def snapshot(self) -> IoSnapshot:
        return IoSnapshot(
            self._read.bandwidth_mbps(),
            self._write.bandwidth_mbps(),
            self._read.latency_us(),
            self._write.latency_us(),
            self.iops(),
            self._read.ops,
            self._write.ops,
            self._read.bytes,
            self._write.bytes,
        )
