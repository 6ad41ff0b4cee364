"""The layout of an erasure-coded array: which member holds each position, in what state,
and where each logical byte lives. No I/O here: the data path is ``array.StripeArray``.

Rules:
1. Geometry: ``k`` data and ``m`` parity positions; every member holds ``slots`` chunks of
   ``chunk`` bytes from its ``base`` offset. Slot ``s`` is one stripe: chunk ``s`` of every
   member. Logical byte ``L`` lives in slot ``L // (k·chunk)`` on data member ``(L // chunk) % k``.
2. Positions ``0..k-1`` are the data members, ``k..k+m-1`` the parity members. A member is
   replaced whole (``set_state`` makes a new record), so a reader never sees a half-changed one.
3. Which blocks are current: an ``active`` position holds every slot's current block; a
   ``recovering`` one holds those of the slots it did not miss (``missed``: written without
   it, or not yet rebuilt onto it); one that joined empty (``fresh``: a replacement or a new
   parity member) holds only the slots written or rebuilt onto it since, until its recovery
   ends. A read and a rebuild use exactly the current blocks, so a member back from being
   away serves what it kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from cluster.ground.ids import PoolId

from .roster import ArrayMember, DeviceState

__all__ = ["RUN_BYTES", "StripeLayout"]

RUN_BYTES = 1 << 20  # consecutive slots are coded and moved in runs of up to this much per member


class StripeLayout:
    """The positions of an array named ``name``: ``data`` then ``parity`` members, each holding
    ``slots`` chunks of ``chunk`` bytes."""

    def __init__(
        self,
        name: str,
        chunk: int,
        slots: int,
        data: Sequence[ArrayMember],
        parity: Sequence[ArrayMember],
    ) -> None:
        self.name, self.chunk, self.slots = name, chunk, slots
        self.data, self.parity = list(data), list(parity)
        self.missed: dict[int, set[int]] = {}  # position -> slots not current on it (rule 3)
        self.fresh: dict[int, set[int]] = {}  # joined empty -> slots written since (rule 3)

    @property
    def k(self) -> int:
        return len(self.data)

    @property
    def m(self) -> int:
        return len(self.parity)

    @property
    def stripe_bytes(self) -> int:
        return self.k * self.chunk

    @property
    def run_slots(self) -> int:
        """Slots coded and moved together: ``RUN_BYTES`` per member."""
        return max(1, RUN_BYTES // self.chunk)

    @property
    def capacity(self) -> int:
        return self.slots * self.stripe_bytes

    def member(self, position: int) -> ArrayMember:
        return self.data[position] if position < self.k else self.parity[position - self.k]

    def set_member(self, position: int, member: ArrayMember) -> None:
        if position < self.k:
            self.data[position] = member
        else:
            self.parity[position - self.k] = member

    def join_fresh(self, position: int, member: ArrayMember) -> None:
        """An empty device takes ``position``: ``recovering``, and current nowhere (rule 3).
        What the position missed stays noted: a write under way that skipped the member it
        replaces is caught up onto it too (``recovery`` rule 1)."""
        self.set_member(position, replace(member, state=DeviceState.RECOVERING))
        self.fresh[position] = set()

    def current(self, position: int, first: int, n: int = 1) -> bool:
        """Does ``position`` hold the current blocks of slots ``first..first+n-1`` (rule 3)?"""
        state = self.member(position).state
        if state == DeviceState.ACTIVE:
            return True
        return state == DeviceState.RECOVERING and self._keeps(position, range(first, first + n))

    def holders(self, slot: int) -> int:
        """Positions that hold the current block of ``slot``, in service or not (rule 3): a
        ``faulty`` member keeps what it did not miss, for when it comes back."""
        return sum(
            self.member(p).state != DeviceState.REMOVED and self._keeps(p, range(slot, slot + 1))
            for p in self.positions()
        )

    def _keeps(self, position: int, slots: range) -> bool:
        """Rule 3: does ``position`` hold the current blocks of ``slots``, whatever its state?"""
        if position in self.fresh:
            return self.fresh[position].issuperset(slots)
        missed = self.missed.get(position)
        return not missed or missed.isdisjoint(slots)

    def missed_by(self, positions: Sequence[int]) -> set[int]:
        """The slots not current on any of ``positions`` (rule 3)."""
        return set().union(*(self.missed.get(p, set()) for p in positions))

    def positions(self) -> range:
        return range(self.k + self.m)

    def position_of(self, pool_id: PoolId) -> int | None:
        return next((p for p in self.positions() if self.member(p).pool_id == pool_id), None)

    def out_of_service(self) -> int:
        """Positions not ``active`` (faulty, removed or still recovering)."""
        return sum(self.member(p).state != DeviceState.ACTIVE for p in self.positions())

    def set_state(self, position: int, state: DeviceState) -> None:
        self.set_member(position, replace(self.member(position), state=state))

    def _degraded(self) -> bool:
        """Is a position out of service for good (faulty or removed), not merely recovering?"""
        states = (DeviceState.FAULTY, DeviceState.REMOVED)
        return any(self.member(p).state in states for p in self.positions())

    def _split(
        self, offset: int, size: int, start: int | None = None
    ) -> dict[int, list[tuple[int, int, int, int]]]:
        """Slot -> pieces ``(data index, offset in chunk, length, offset in the buffer)`` of
        ``size`` bytes at ``offset``, for a buffer that starts at ``start`` (``offset``)."""
        out: dict[int, list[tuple[int, int, int, int]]] = {}
        pos, end, base = offset, offset + size, offset if start is None else start
        while pos < end:
            slot, rest = divmod(pos, self.stripe_bytes)
            index, within = divmod(rest, self.chunk)
            n = min(self.chunk - within, end - pos)
            out.setdefault(slot, []).append((index, within, n, pos - base))
            pos += n
        return out
