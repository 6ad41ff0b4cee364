"""The member I/O of an erasure-coded array (``array.StripeArray``): blocks read from and
written to the positions' devices, with what each I/O leaves behind.

Rules (``array`` rules 2, 5 and 7 as they touch one member):
1. A position is written when ``active`` or ``recovering`` (``IN_SERVICE``); ``faulty`` and
   ``removed`` ones are skipped. A member whose device fails an I/O is marked ``faulty`` on
   the spot, and why is kept in ``failures`` for the roster to judge.
2. A block not written to a position (skipped, or its write failed) is noted in ``missed``
   and its slots are ``dirty``; a whole block written there makes the position current for
   its slots again (``layout`` rule 3).
3. A write that needs ``need`` positions to take it is refused before it writes anything when
   fewer are in service, and fails after when fewer took it (``Unwritable``).
4. Member I/O up to ``SMALL_IO`` is done in turn: the member devices do it in the caller's
   task anyway, and a task each would cost more than the copy.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import trio

from cluster.ground.errors import ApiError, Conflict, PoolGone
from cluster.ground.ids import PoolId

from .blockdev import BlockStore
from .erasure import Buffer
from .layout import StripeLayout
from .roster import ArrayMember, DeviceState

if TYPE_CHECKING:
    from .erasure import Bytes as Rows

__all__ = ["IN_SERVICE", "MEMBER_ERRORS", "SMALL_IO", "MemberIO", "Unwritable"]

log = logging.getLogger("cluster.storage.array")
MEMBER_ERRORS = (ApiError, PoolGone, OSError)
IN_SERVICE = (DeviceState.ACTIVE, DeviceState.RECOVERING)  # written (rule 1)
SMALL_IO = 1 << 20  # bytes: member I/O up to this size is done in turn (rule 4)


def _nbytes(block: Buffer | Rows) -> int:
    return len(block) if isinstance(block, bytes | bytearray | memoryview) else block.nbytes


class Unwritable(Conflict):
    """A write that reached fewer members than it takes to read it back (rule 3); ``partial``
    when it was not refused before writing anything, so some members may have taken it."""

    partial = True


class MemberIO(StripeLayout):
    """The positions' devices, found by ``open_member``, read and written block by block."""

    def __init__(
        self,
        name: str,
        chunk: int,
        slots: int,
        data: Sequence[ArrayMember],
        parity: Sequence[ArrayMember],
        open_member: Callable[[PoolId], BlockStore | None],
    ) -> None:
        super().__init__(name, chunk, slots, data, parity)
        self._open_member = open_member
        self.dirty: set[int] = set()
        self.failures: dict[int, BaseException] = {}  # position -> why its last I/O failed

    def _fail(self, position: int, exc: BaseException) -> None:
        member = self.member(position)
        self.failures[position] = exc
        if member.state in (DeviceState.ACTIVE, DeviceState.RECOVERING):
            log.warning(
                "array %s: member %s failed (%s); marked faulty", self.name, member.pool_name, exc
            )
            self.set_state(position, DeviceState.FAULTY)

    async def _read_one(
        self, slot: int, position: int, out: dict[int, Buffer | None], n: int, into: Rows | None
    ) -> None:
        member = self.member(position)
        store = self._open_member(member.pool_id)
        offset = member.base + slot * self.chunk
        try:
            if store is None:
                raise PoolGone(str(member.pool_id))
            if into is None:
                out[position] = await store.read(offset, n * self.chunk)
            else:
                await store.read_into(offset, into[position].data)
                out[position] = into[position].data
        except MEMBER_ERRORS as exc:
            self._fail(position, exc)
            out[position] = None

    def _slots_of(self, slot: int, block: Buffer | Rows) -> range:
        """The slots of ``block``: one chunk a slot from ``slot`` on."""
        return range(slot, slot + max(1, _nbytes(block) // self.chunk))

    def _miss(self, position: int, slot: int, block: Buffer | Rows) -> None:
        """Rule 2: ``block`` (one chunk a slot from ``slot`` on) was not written to
        ``position``."""
        slots = self._slots_of(slot, block)
        self.missed.setdefault(position, set()).update(slots)
        if position in self.fresh:  # a failed write may have left part of a block there
            self.fresh[position].difference_update(slots)
        self.dirty.update(slots)

    async def _write_one(self, slot: int, position: int, block: Buffer | Rows) -> bool:
        """Write ``block`` to ``position``; whether it took it."""
        member = self.member(position)
        if member.state not in IN_SERVICE:
            self._miss(position, slot, block)
            return False
        store = self._open_member(member.pool_id)
        try:
            if store is None:
                raise PoolGone(str(member.pool_id))
            if isinstance(block, bytes | bytearray | memoryview):
                await store.write(member.base + slot * self.chunk, block)
            else:
                await store.write_rows(member.base + slot * self.chunk, block)
        except MEMBER_ERRORS as exc:
            self._fail(position, exc)
            self._miss(position, slot, block)
            return False
        if self.missed.get(position):  # whole blocks: current there again (rule 2)
            self.missed[position].difference_update(self._slots_of(slot, block))
        if position in self.fresh:
            self.fresh[position].update(self._slots_of(slot, block))
        return True

    async def _read_positions(
        self, slot: int, positions: Sequence[int], n: int = 1, into: Rows | None = None
    ) -> dict[int, Buffer | None]:
        """Chunks of ``n`` consecutive slots from each position (one read per member; into
        row ``p`` of ``into`` when given). Small reads go one after the other: a member device
        does them in the caller's task, and a task each would cost more than the copy."""
        out: dict[int, Buffer | None] = {}
        if n * self.chunk <= SMALL_IO:
            for p in positions:
                await self._read_one(slot, p, out, n, into)
            return out
        async with trio.open_nursery() as nursery:
            for p in positions:
                nursery.start_soon(self._read_one, slot, p, out, n, into)
        return out

    async def _write_positions(
        self, slot: int, blocks: Sequence[tuple[int, Buffer | Rows]], *, need: int = 0
    ) -> None:
        """Each block to its position; ``Unwritable`` when fewer than ``need`` took theirs, or,
        before any is written, could (rule 3)."""
        took = 0
        serving = sum(self.member(p).state in IN_SERVICE for p, _ in blocks)
        if serving < need:
            refused = self._unwritable(
                slot, f"wrote slot {slot} nowhere: {serving} of its members in service"
            )
            refused.partial = False
            raise refused
        if all(_nbytes(b) <= SMALL_IO for _, b in blocks):
            for p, block in blocks:
                took += await self._write_one(slot, p, block)
        else:

            async def one(p: int, block: Buffer | Rows) -> None:
                nonlocal took
                took += await self._write_one(slot, p, block)

            async with trio.open_nursery() as nursery:
                for p, block in blocks:
                    nursery.start_soon(one, p, block)
        if took < need:
            raise self._unwritable(slot, f"could write slot {slot} to {took} members only")

    def _unwritable(self, slot: int, what: str) -> Unwritable:
        return Unwritable(
            f"array {self.name} {what}; it takes {self.k} to read it back "
            f"({self.out_of_service()} of {self.k + self.m} members out of service, "
            f"{self.m} tolerated)"
        )
