"""A real member's own clock: trio's clock running at a rate, and a wall clock that may read off
true (``rt_cluster clock``, the node's ``--clock-offset`` and ``--clock-rate``).

Rules:
1. ``ProcessClock`` is the ``trio.abc.Clock`` a node process runs under (``trio.run(...,
   clock=ProcessClock(offset, rate))``): its time runs at ``rate`` times the host's
   ``time.monotonic()``, so every trio deadline of the process (probe period, suspicion
   timeouts, RPC timeouts) does. A change of rate re-anchors it where it stands: the time is
   continuous and never goes back, as a real monotonic clock whose pace changed.
2. Its wall clock (``wall()``) reads the host's ``time.time()`` plus ``offset`` at the moment
   the clock is set (a jump, either way) and runs at the same rate from there. Between two
   changes ``wall() - current_time()`` stays the same: the machine's wall offset
   (``SwimMachine.set_wall_offset``).
3. ``host_offset()`` is what moves a reading of this clock onto the host's
   ``time.monotonic()`` now; events keep their ``mono`` on the host's clock with it, so the
   traces of processes on one host still line up.
4. ``wall_time()`` and ``process_clock()`` read the clock of the running trio: a ``ProcessClock``,
   or trio's own (then the wall clock is the host's). The driver reads the wall clock only
   through them.
5. Offsets and rates are ranged as ``swim.Faults.set_clock`` ranges them (ValueError).
"""

from __future__ import annotations

import time

import trio

from .faults import checked_clock

__all__ = ["ProcessClock", "process_clock", "wall_time"]


class ProcessClock(trio.abc.Clock):
    """Rules 1-3: trio time at ``rate`` times real speed, a wall clock ``offset`` s off."""

    def __init__(self, offset: float = 0.0, rate: float = 1.0) -> None:
        self._real0 = time.monotonic()  # the host's time at the last change
        self._time0 = self._real0  # this clock's time then
        self._wall0 = time.time()  # its wall clock's reading then
        self.offset = 0.0
        self.rate = 1.0
        self.set(offset, rate)

    def set(self, offset: float, rate: float) -> None:
        """Rules 1, 2 and 5: re-anchor where the clock stands, then run at ``rate`` with a
        wall clock reading true + ``offset`` from now."""
        offset, rate = checked_clock(offset, rate)  # the one range check (ValueError)
        real = time.monotonic()
        self._time0 += (real - self._real0) * self.rate
        self._real0 = real
        self._wall0 = time.time() + offset
        self.offset, self.rate = offset, rate

    def start_clock(self) -> None:
        pass

    def current_time(self) -> float:
        return self._time0 + (time.monotonic() - self._real0) * self.rate

    def deadline_to_sleep_time(self, deadline: float) -> float:
        return (deadline - self.current_time()) / self.rate

    def wall(self) -> float:
        """Rule 2: the wall clock (epoch seconds) this node reads."""
        return self._wall0 + (time.monotonic() - self._real0) * self.rate

    def host_offset(self) -> float:
        """Rule 3: seconds from this clock's time to the host's ``time.monotonic()``, now."""
        real = time.monotonic()
        return real - (self._time0 + (real - self._real0) * self.rate)


def process_clock() -> ProcessClock | None:
    """Rule 4: the running trio's ``ProcessClock``, or None under another clock."""
    clock = trio.lowlevel.current_clock()
    return clock if isinstance(clock, ProcessClock) else None


def wall_time() -> float:
    """Rule 4: the wall clock (epoch seconds) of the running trio's member."""
    clock = process_clock()
    return time.time() if clock is None else clock.wall()
