"""Planted storage bugs for ``bench.explore``: the three data-loss bugs that arrays across the
cluster once had, each put back for the ``with`` block exactly as it was before its fix
(forked search workers inherit it). Every one loses an acknowledged write: the property that
catches the first two is ``no_lost_writes`` (``scenarios.judge.durability``); the third leaves
a stale block that loses a record at the next loss of a member, which ``array_recovers``
catches (the owner's ``verify``), or ``no_lost_writes`` when the block held data. They are searched
once the whole-node simulator runs arrays (issue 47); until then the tests replay each one's
situation in one process (``tests/bench/test_storage_plants.py``).

- ``write_races_return``: a member coming back while a write is in flight. A write that
  skipped an away member ends after the member came back ``recovering``; the array no longer
  looks degraded at its end, so the slot is not marked, the resync (which rebuilds the slots
  dirty when it starts) skips it, and the member serves stale bytes for it. Put back as
  before commit 2d41961: a write notes nothing of the positions it skipped or failed
  (``StripeArray._miss``), a resync rebuilds the ``dirty`` slots as they are when it starts
  (``StripeArray.missed_by``), a recovery marks its targets active as soon as its walk
  ends, with no catch-up of the slots they missed meanwhile (``Recovery._catch_up``), and
  a member back from being away is read for every slot not ``dirty`` (``StripeArray.current``,
  as ``missed`` is no longer noted).
  ``storage.array`` rule 5 and ``storage.recovery`` rule 1 are what it breaks.
- ``ack_without_member``: a write acknowledged with fewer members holding it than it takes
  to read it back, or with none (at a heal, gossip from the cut-off side made the owner hold
  every member's node down for an instant, and the writes of that instant were acknowledged
  with no member holding them). Put back as before commit d49f6a5: a write goes to the
  positions in service and returns, whatever number took it (``StripeArray._write_positions``
  with no ``need``). ``storage.array`` rule 7 is what it breaks.
- ``stale_after_resync``: a write that lay in a paused or cut-off node's socket, long given up
  by the array (the call timed out, the member turned faulty and missed the slot), lands on
  the member's device after the member was resynchronised and overwrites the slot's current
  bytes with old ones (in the simulator: bytes a partition held land at the sender's next
  retransmission after the heal, ``cluster.sim.simsocket`` rule 3). Put back as before commit
  d49f6a5: a device takes every write, whatever its writer's epoch (``remote.fenced`` judges
  nothing and records nothing).
  ``remote`` rule 2 is what it breaks.

Each plant patches product code from here (class attributes and one module function) and
puts back the very objects it took, also when the block raises; no product code has a seam
for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any

from cluster.modules import remote
from cluster.runtime import BlockCall
from cluster.storage.array import StripeArray
from cluster.storage.layout import StripeLayout
from cluster.storage.recovery import Recovery
from cluster.storage.roster import DeviceState

__all__ = [
    "STORAGE_PLANTS",
    "ack_without_member",
    "stale_after_resync",
    "write_races_return",
]

_ABSENT = object()


@contextmanager
def _swapped(owner: Any, name: str, replacement: Any) -> Iterator[None]:
    """``owner.name`` is ``replacement`` for the block; the very object it held is put back
    after (an attribute ``owner`` only inherited is removed again, not copied onto it)."""
    held = vars(owner).get(name, _ABSENT)
    setattr(owner, name, replacement)
    try:
        yield
    finally:
        if held is _ABSENT:
            delattr(owner, name)
        else:
            setattr(owner, name, held)


def _miss_nothing(self: StripeArray, position: int, slot: int, block: Any) -> None:
    """The defect: a write that skips a position, or whose write there fails, notes nothing;
    only the ``_degraded()`` check at the end of the write marks its slots dirty."""


def _dirty_at_start(self: StripeArray, positions: Sequence[int]) -> set[int]:
    """The defect: a resync rebuilds the slots dirty when it starts, not the ones its targets
    missed (the container passed ``only=set(array.dirty)``)."""
    return set(self.dirty)


def _current_unless_dirty(self: StripeArray, position: int, first: int, n: int = 1) -> bool:
    """What it knew then: a member back from being away missed the ``dirty`` slots and no
    other (a write marked its slots dirty only if the array looked degraded at its end)."""
    state = self.member(position).state
    if state != DeviceState.RECOVERING or position in self.fresh:
        return StripeLayout.current(self, position, first, n)
    return self.dirty.isdisjoint(range(first, first + n))


async def _no_catch_up(self: Recovery, targets: Sequence[int], generation: int) -> bool:
    """The defect: the targets are marked active as soon as the walk ends."""
    return True


@contextmanager
def write_races_return() -> Iterator[None]:
    """A write in flight when a member comes back is never rebuilt onto it (docstring)."""
    with ExitStack() as stack:
        stack.enter_context(_swapped(StripeArray, "_miss", _miss_nothing))
        stack.enter_context(_swapped(StripeArray, "missed_by", _dirty_at_start))
        stack.enter_context(_swapped(Recovery, "_catch_up", _no_catch_up))
        stack.enter_context(_swapped(StripeArray, "current", _current_unless_dirty))
        yield


@contextmanager
def ack_without_member() -> Iterator[None]:
    """A write is acknowledged however few members took it (docstring)."""
    original = StripeArray._write_positions

    async def write_positions(
        self: StripeArray, slot: int, blocks: Sequence[tuple[int, Any]], *, need: int = 0
    ) -> None:
        await original(self, slot, blocks)  # the defect: no count of the members that took it

    with _swapped(StripeArray, "_write_positions", write_positions):
        yield


def _unfenced(device: Any, call: BlockCall) -> None:
    """The defect: a device takes every write of a writer, whatever its epoch."""


@contextmanager
def stale_after_resync() -> Iterator[None]:
    """A device takes a stale write that lands after the resync (docstring)."""
    with _swapped(remote, "fenced", _unfenced):
        yield


STORAGE_PLANTS: dict[str, Callable[[], AbstractContextManager[None]]] = {
    "write_races_return": write_races_return,
    "ack_without_member": ack_without_member,
    "stale_after_resync": stale_after_resync,
}
