"""How long code ran and what the wall clock reads, as the node's code measures it: the host's
clocks, or in the whole-node simulator a stand-in that every run of a seed reads the same.

Rules:
1. ``perf_ns()`` (a monotonic count of nanoseconds), ``cpu_ns()`` (this thread's CPU time) and
   ``wall_ns()`` (epoch nanoseconds) read the host's ``time.perf_counter_ns``,
   ``time.thread_time_ns`` and ``time.time_ns`` unless a stand-in is in force.
2. ``stand_in(step_ns, wall)`` (the simulator, for one run): each reading of ``perf_ns`` and
   ``cpu_ns`` moves ``step_ns`` on from the last, so code that yields or picks by what it
   measured does the same in every run; ``wall_ns`` reads ``wall()`` (the virtual clock's
   wall clock). It is put back when the block ends.
3. Only what measures or stamps goes through here: deadlines are trio's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["cpu_ns", "perf_ns", "stand_in", "wall_ns"]

_perf: Callable[[], int] = time.perf_counter_ns
_cpu: Callable[[], int] = time.thread_time_ns
_wall: Callable[[], int] = time.time_ns


def perf_ns() -> int:
    return _perf()


def cpu_ns() -> int:
    return _cpu()


def wall_ns() -> int:
    return _wall()


@contextmanager
def stand_in(step_ns: int, wall: Callable[[], float]) -> Iterator[None]:
    """Rule 2."""
    global _perf, _cpu, _wall
    saved = (_perf, _cpu, _wall)
    count = [0]

    def stepped() -> int:
        count[0] += step_ns
        return count[0]

    _perf, _cpu, _wall = stepped, stepped, lambda: int(wall() * 1e9)
    try:
        yield
    finally:
        _perf, _cpu, _wall = saved
