"""What a process costs at rest: CPU over a window and memory from ``smaps_rollup``.

Rules:
1. CPU is the time the process's threads ran (``/proc/<pid>/task/*/schedstat``, nanoseconds;
   a Go program like Serf runs several; a thread that ends within the window takes its time
   with it) or, where there is no schedstat, ``psutil`` user + system time in clock ticks
   (10 ms: coarse against a few milliseconds a second), over one window
   shared by every process measured, in percent of one core: processes measured side by side
   see the same machine, so their ratio holds on a busy one.
2. Memory is read from ``/proc/<pid>/smaps_rollup``, in MiB: PSS (shared pages divided among
   the processes that map them: what N processes cost together is N times it), USS (private
   pages, clean and dirty: what ending the process would free) and RSS (every page mapped,
   shared ones counted in full: it over-counts forked processes).
3. A process gone before or during the window is left out (None), never an error.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil
import trio

__all__ = ["Memory", "cpu_percent", "mean", "memory", "summed"]

_KIB = 1024


@dataclass(frozen=True, slots=True)
class Memory:
    """One process's memory, MiB (rule 2)."""

    pss: float
    uss: float
    rss: float
    private_dirty: float

    def __add__(self, other: Memory) -> Memory:
        return Memory(
            self.pss + other.pss,
            self.uss + other.uss,
            self.rss + other.rss,
            self.private_dirty + other.private_dirty,
        )


def memory(pid: int, proc: Path = Path("/proc")) -> Memory | None:
    """The memory of ``pid`` from its ``smaps_rollup``; None when it is gone (rule 3)."""
    try:
        text = (proc / str(pid) / "smaps_rollup").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    kib: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields = value.split()
        if len(fields) == 2 and fields[1] == "kB":
            kib[key] = int(fields[0])
    return Memory(
        pss=kib.get("Pss", 0) / _KIB,
        uss=(kib.get("Private_Clean", 0) + kib.get("Private_Dirty", 0)) / _KIB,
        rss=kib.get("Rss", 0) / _KIB,
        private_dirty=kib.get("Private_Dirty", 0) / _KIB,
    )


def _run_ns(task: Path) -> int:
    try:
        return int((task / "schedstat").read_text().split()[0])
    except (FileNotFoundError, ProcessLookupError):  # the thread ended just now
        return 0


def _cpu_seconds(pid: int, proc: Path) -> float | None:
    try:
        return sum(_run_ns(t) for t in (proc / str(pid) / "task").iterdir()) / 1e9
    except (FileNotFoundError, ProcessLookupError):
        return None
    except (OSError, ValueError, IndexError):  # no schedstat here: clock ticks will do
        pass
    try:
        t = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return None
    return float(t.user + t.system)


async def cpu_percent(
    pids: Sequence[int], window: float, proc: Path = Path("/proc")
) -> dict[int, float | None]:
    """Each process's CPU over the same ``window`` seconds, percent of one core (rule 1)."""
    before = {pid: _cpu_seconds(pid, proc) for pid in pids}
    t0 = trio.current_time()
    await trio.sleep(window)
    elapsed = trio.current_time() - t0
    out: dict[int, float | None] = {}
    for pid, start in before.items():
        end = _cpu_seconds(pid, proc)
        out[pid] = None if start is None or end is None else (end - start) / elapsed * 100
    return out


def mean(values: Iterable[float | None]) -> float | None:
    """The mean of the values known; None when none is."""
    known = [v for v in values if v is not None]
    return statistics.fmean(known) if known else None


def summed(pairs: Iterable[tuple[Memory | None, Memory | None]]) -> list[Memory]:
    """Each pair added (a node and its watcher), pairs with a side gone left out."""
    return [a + b for a, b in pairs if a is not None and b is not None]
