"""Virtual time and a repeatable order of tasks for the whole-node simulator.

Rules:
1. ``VirtualClock`` is the ``trio.abc.Clock`` of a simulator run: its time moves only when no
   task can run, and then straight to the next deadline (trio asks for a sleep time only with
   nothing runnable), so a run takes as long as its work, not its virtual seconds. It is a
   ``swim.clock.ProcessClock`` so the members read their wall clock from it: ``WALL_BASE`` plus
   virtual time, the same in every run; events' ``mono`` is virtual time.
2. One clock runs every node: a clock fault (another rate or offset for one node) is refused.
3. ``repeatable(seed)``: while a run lasts, trio's scheduler puts each batch of runnable
   tasks in creation order and shuffles it with a generator seeded by ``seed`` (trio's own
   switch for Hypothesis), and the draws the node makes for names and instances
   (``secrets.token_hex``, ``token_bytes``) come from the same seed, and what the node's code
   measures of its own run time (``cluster.ground.elapsed``) steps the same in every run: with
   the virtual clock and a network that draws from its own seeded generator, the same seed
   gives the same run.
   Both are put back when the run ends.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

from cluster.ground.elapsed import stand_in
from swim.clock import ProcessClock

__all__ = ["WALL_BASE", "VirtualClock", "repeatable"]

WALL_BASE = 1_767_225_600.0  # 2026-01-01T00:00:00Z: what a node's wall clock reads at time 0


class VirtualClock(ProcessClock):
    """Rules 1 and 2."""

    def __init__(self) -> None:
        self.offset = 0.0
        self.rate = 1.0
        self._now = 0.0

    def set(self, offset: float, rate: float) -> None:
        if (offset, rate) != (0.0, 1.0):
            raise ValueError("the whole-node simulator runs every node on one clock")

    def start_clock(self) -> None:
        pass

    def current_time(self) -> float:
        return self._now

    def deadline_to_sleep_time(self, deadline: float) -> float:
        if deadline > self._now and deadline != float("inf"):
            self._now = deadline  # nothing can run: time moves to the next deadline
        return 0.0 if deadline != float("inf") else 86400.0

    def wall(self) -> float:
        return WALL_BASE + self._now

    def host_offset(self) -> float:
        return 0.0


MEASURE_STEP_NS = 1000  # what each reading of a node's elapsed-time measure moves on (rule 3)


@contextmanager
def repeatable(seed: int, clock: VirtualClock) -> Iterator[random.Random]:
    """Rule 3: trio's task order and the node's token draws seeded by ``seed``, and what the
    node's code measures (``cluster.ground.elapsed``) stepped, its wall stamps ``clock``'s;
    yields the generator the tokens come from."""
    from trio._core import _run  # trio's deterministic-scheduling switch (rule 3)

    draws = random.Random(seed)
    saved = (_run._ALLOW_DETERMINISTIC_SCHEDULING, _run._r.getstate())
    token_hex, token_bytes = secrets.token_hex, secrets.token_bytes
    _run._ALLOW_DETERMINISTIC_SCHEDULING = True  # type: ignore[misc]
    _run._r.seed(seed)
    secrets.token_hex = lambda nbytes=None: draws.randbytes(nbytes or 32).hex()
    secrets.token_bytes = lambda nbytes=None: draws.randbytes(nbytes or 32)
    try:
        with stand_in(MEASURE_STEP_NS, clock.wall):
            yield draws
    finally:
        _run._ALLOW_DETERMINISTIC_SCHEDULING = saved[0]  # type: ignore[misc]
        _run._r.setstate(saved[1])
        secrets.token_hex, secrets.token_bytes = token_hex, token_bytes  # type: ignore[assignment]
