"""The member's timer: one task that ticks the machine when something is due, a deadline that
packets move, the node's periodic jobs riding on its ticks, and the loop-lag samples.

Rules:
1. At rest the member wakes only when its machine has something due (``next_deadline``, at
   least once every ``BACKSTOP`` seconds) or a packet arrives: no task polls.
2. The loop waits in a cancel scope whose deadline a packet moves (``move``) to the machine's
   next deadline, earlier (the first rumor to gossip, a new suspicion) or later (the ack that
   ends a probe takes back the wake-up at the probe's timeout: at rest a member then wakes
   once a probe, not twice); only a change is written. The tick's own output does not move
   it (the loop would spin).
3. The loop lag is how late past its deadline the loop runs (a starved loop runs late).
   A sample is taken at each tick, against the deadline as last moved; ``lag()`` gives the
   last and the largest of the last ``LAG_WINDOW`` seconds. ``late(lag)`` hears once a wait
   how late the loop ran: at the tick, or earlier, should a packet be handled first and move
   a deadline already past (it would otherwise hide the lateness by moving the deadline).
4. The node's own periodic jobs may ride on the timer (``sleep_near``): a job due within its
   slack of a tick runs with that tick, in the same wake-up of the process, and only a job no
   tick comes near wakes the process itself (at rest a probe tick comes once a second, as
   the node's stats sample is due).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import trio

__all__ = ["BACKSTOP", "LAG_SAMPLES", "LAG_WINDOW", "MemberTimer"]

BACKSTOP = 1.0  # seconds the loop waits at most, whatever the machine's deadline (rule 1)
LAG_WINDOW = 60.0  # seconds of loop-lag samples behind ``lag()``'s largest (rule 3)
LAG_SAMPLES = 512  # at most this many kept (a member at rest takes one to ten a second)


class MemberTimer:
    """Rules 1-4 for one member: ``next_deadline()`` is when its machine wants a tick (trio
    time), ``tick(now)`` carries one out, ``late(lag)`` hears of each lag seen (rule 3)."""

    def __init__(
        self,
        next_deadline: Callable[[], float],
        tick: Callable[[float], None],
        late: Callable[[float], None] = lambda lag: None,
    ) -> None:
        self._next_deadline = next_deadline
        self._tick = tick
        self._late = late
        self._sleep: trio.CancelScope | None = None  # the loop's wait, while it waits
        self._seen_late = False  # ``late`` has heard of this wait's lag (rule 3)
        self._riders: list[tuple[float, trio.Event]] = []  # rule 4: (earliest, released)
        self._lags: deque[tuple[float, float]] = deque(maxlen=LAG_SAMPLES)  # (when, lag) s

    def move(self) -> None:
        """Rule 2: the machine's next deadline may have changed (a packet was handled)."""
        if self._sleep is not None:
            now = trio.current_time()
            if now > self._sleep.deadline and not self._seen_late:  # rule 3
                self._seen_late = True
                self._late(now - self._sleep.deadline)
            deadline = max(now, min(self._next_deadline(), now + BACKSTOP))
            if deadline != self._sleep.deadline:  # most packets change nothing due
                self._sleep.deadline = deadline

    def lag(self) -> tuple[float, float]:
        """Rule 3: (the last lag, the largest of the last ``LAG_WINDOW`` seconds), seconds."""
        since = trio.current_time() - LAG_WINDOW
        lags = [lag for when, lag in self._lags if when >= since]
        return (lags[-1], max(lags)) if lags else (0.0, 0.0)

    async def sleep_near(self, deadline: float, slack: float) -> None:
        """Sleep until ``deadline`` (trio time), or return with the first tick from ``slack``
        seconds before it (rule 4)."""
        ride = (deadline - slack, trio.Event())
        self._riders.append(ride)
        try:
            with trio.move_on_at(deadline):
                await ride[1].wait()
        finally:
            self._riders.remove(ride)

    async def serve(self) -> None:
        """The loop (never returns)."""
        while True:
            # Capped: a backstop should a change ever fail to move this loop's deadline.
            now = trio.current_time()
            deadline = min(self._next_deadline(), now + BACKSTOP)
            self._seen_late = False
            with trio.CancelScope(deadline=deadline) as self._sleep:  # moved by packets
                await trio.sleep_forever()
            deadline, self._sleep = self._sleep.deadline, None  # ticking now (rule 2)
            now = trio.current_time()
            lag = max(0.0, now - deadline)
            self._lags.append((now, lag))
            if not self._seen_late:
                self._late(lag)
            self._tick(now)
            for earliest, released in self._riders:  # rule 4
                if now >= earliest:
                    released.set()
