"""The recovery of an array's ``recovering`` members (``StripeArray.recover``).

Rules:
1. A run rebuilds every written slot onto its targets (a new member), or, for a resync, only
   the slots they missed while away (``array`` rule 5; a target that joined empty takes every
   slot, ``layout`` rule 3); then it catches up the slots they missed while it ran, and only
   then marks them active. A run that a newer member change overtook
   (``RecoveryProgress.generation``) leaves its targets to the next run. A slot that cannot be
   rebuilt because fewer than ``k`` members hold it is lost (``array`` rule 8), not retried.
2. Paced (``pace_s`` > 0): the slots are walked in order in at most ``WALK_STEPS`` steps, each
   at least ``pace_s`` seconds, so a person can watch it; unpaced, runs of written slots are
   rebuilt ``PARALLEL_RUNS`` at a time. Progress counts slots either way.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

import trio

from .roster import ArrayMember, DeviceState, RecoveryProgress
from .slots import slot_runs

__all__ = ["CATCH_UP_ROUNDS", "PARALLEL_RUNS", "WALK_STEPS", "Recoverable", "Recovery"]

log = logging.getLogger("cluster.storage.array")
PARALLEL_RUNS = 2  # runs rebuilt at once: one is read or written while the other is coded
CATCH_UP_ROUNDS = 8  # rounds a run rebuilds slots missed while it ran (rule 1)
WALK_STEPS = 100  # a paced run walks the slots in at most this many steps


class Recoverable(Protocol):
    """What a recovery run reads and changes of its array (``array.StripeArray`` satisfies
    it): the members' states, the slots written and missed, and one rebuild of a run."""

    name: str
    slots: int
    written: set[int]
    lost: set[int]
    dirty: set[int]
    missed: dict[int, set[int]]
    fresh: dict[int, set[int]]
    recovery: RecoveryProgress

    @property
    def run_slots(self) -> int: ...
    def positions(self) -> range: ...
    def member(self, position: int) -> ArrayMember: ...
    def set_state(self, position: int, state: DeviceState) -> None: ...
    def out_of_service(self) -> int: ...
    def missed_by(self, positions: Sequence[int]) -> set[int]: ...
    async def rebuild_run(self, first: int, n: int, targets: Sequence[int]) -> None: ...


class Recovery:
    """One recovery run of array ``a``."""

    def __init__(self, a: Recoverable) -> None:
        self.a = a

    async def run(self, pace_s: float = 0.0, resync: bool = False) -> None:
        """Rebuild the ``recovering`` members, then mark them active (rule 1): a written slot
        is rebuilt onto them, an unwritten one holds nothing yet (``array`` rule 3); with
        ``resync`` only the slots they missed. Progress counts slots (``recovery.total`` is
        every slot); ``pace_s``: rule 2."""
        a = self.a
        rec = a.recovery
        generation = rec.generation
        targets = [p for p in a.positions() if a.member(p).state == DeviceState.RECOVERING]
        if not targets:
            return
        resync = resync and a.fresh.keys().isdisjoint(targets)  # an empty member takes every slot
        wanted = a.written & a.missed_by(targets) if resync else a.written
        slots = sorted(wanted)
        rec.active, rec.total, rec.in_flight, rec.rebuilt = True, a.slots, 0, len(slots)
        rec.completed = 0 if pace_s > 0 else a.slots - len(slots)
        limiter = trio.CapacityLimiter(PARALLEL_RUNS)

        async def one(first: int, n: int) -> None:
            async with limiter:
                rec.in_flight += n
                try:
                    await a.rebuild_run(first, n, targets)
                finally:
                    rec.in_flight -= n
                rec.completed += n

        try:
            if pace_s > 0:
                await self._walk(targets, pace_s, wanted)
            else:
                async with trio.open_nursery() as nursery:
                    for first, n in slot_runs(slots, a.run_slots):
                        nursery.start_soon(one, first, n)
        finally:
            rec.active = False
        if rec.generation != generation:
            return  # another member started recovering meanwhile: the next run covers it
        if not await self._catch_up(targets, generation):
            return  # still writes in flight that skip them: the next run tries again
        for p in targets:
            if a.member(p).state == DeviceState.RECOVERING:
                a.set_state(p, DeviceState.ACTIVE)
                a.missed.pop(p, None)
                a.fresh.pop(p, None)
        if a.out_of_service() == 0:
            a.dirty.clear()
        log.info("array %s: recovery of %d written slots done", a.name, len(slots))

    async def _catch_up(self, targets: Sequence[int], generation: int) -> bool:
        """Rule 1: rebuild onto ``targets`` the slots they missed while the run went on (a
        write already under way when they came back skips them); True once none is left,
        False to leave the rest to the next run."""
        a = self.a
        for _ in range(CATCH_UP_ROUNDS):
            missed = self._behind(targets)
            if not missed:
                return True
            late = sorted(missed & a.written)  # a first write under way: the next round
            if not late:
                await trio.sleep(0.01)
                continue
            for first, n in slot_runs(late, a.run_slots):
                await a.rebuild_run(first, n, targets)
            if a.recovery.generation != generation:
                return False
        return not self._behind(targets)

    def _behind(self, targets: Sequence[int]) -> set[int]:
        """The slots ``targets`` do not hold yet: those they missed, and for one that joined
        empty every written slot not written or rebuilt onto it since (a write under way when
        it joined skipped the member it replaced), the lost ones aside (``array`` rule 8)."""
        a = self.a
        behind = a.missed_by(targets)
        for p in targets:
            if p in a.fresh:
                behind |= a.written - a.fresh[p] - a.lost
        return behind

    async def _walk(self, targets: Sequence[int], pace_s: float, wanted: set[int]) -> None:
        """Every slot in order, in steps of ``ceil(slots / WALK_STEPS)`` slots, at least
        ``pace_s`` seconds each; the slots written by then are rebuilt (a slot written later
        went to the targets already)."""
        a = self.a
        rec = a.recovery
        step = -(-a.slots // WALK_STEPS)
        for first in range(0, a.slots, step):
            count = min(step, a.slots - first)
            written = [s for s in range(first, first + count) if s in wanted and s in a.written]
            rec.in_flight = count
            try:
                for start, n in slot_runs(written, a.run_slots):
                    await a.rebuild_run(start, n, targets)
                await trio.sleep(pace_s)
            finally:
                rec.in_flight = 0
            rec.completed += count
