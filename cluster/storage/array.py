"""The data path of an erasure-coded array: stripes over member devices, reads that
reconstruct around unusable members, recovery onto fresh members, parity checks.

Rules:
1. Geometry (``layout``): ``k`` data and ``m`` parity positions, a slot is one stripe.
2. A position is read where it holds the current block (``layout`` rule 3: ``active``, or
   ``recovering`` and current for the slot); it is written when ``active`` or ``recovering``;
   ``faulty`` and ``removed`` positions are skipped. A member whose device fails an I/O is
   marked ``faulty`` on the spot (``memberio``: one member's I/O).
3. Slots never written read as zeros without I/O; the first write of a slot writes every
   position, so stale bytes on a member never leak into the array.
4. One slot is changed by one task at a time (a per-slot lock), so a read-modify-write, a
   rebuild and a parity check of the same slot never interleave.
5. ``dirty`` slots are those whose redundancy is not current: written while a position was out
   of service, or found inconsistent by a check. A finished recovery leaves none. Per
   position, ``missed`` holds the slots written without it (skipped, or its write failed),
   noted by the write itself, until a whole block of the slot is written there again (by a
   later write or a rebuild): a resync rebuilds exactly those, and a recovery marks its
   targets active only once every slot they missed, also by a write that was already under
   way when they came back, has been rebuilt onto them.
6. Whole stripes move in runs of up to ``layout.RUN_BYTES`` per member: one coding pass and
   one I/O per member for the run (the data chunks straight from the caller's buffer,
   ``write_rows``; recovery reads into and codes in reused matrices, ``ScratchPool``).
7. A write is acknowledged only when at least ``k`` positions took it (enough to read it back
   whatever else is lost meanwhile); else it fails (``Unwritable``, 409) and its slots are
   dirty. With more members out than the parity level, every write fails so, before it
   writes anything: a write that only some members took would leave the slot's blocks of two
   versions, fewer than ``k`` of either, and lose what the slot held.
8. A write that failed part-way can leave a written slot with fewer than ``k`` current blocks
   (some members took it; the rest missed it, or may hold either version). Such a slot is
   ``torn``: the owner keeps the stripe that write meant to write (the slot's acknowledged
   bytes are in it too), up to ``TORN_BYTES`` an array; reads and partial writes use it, a
   rebuild writes the targets' blocks from it, and it is dropped once ``k`` members hold
   the slot again. A torn slot not kept (past the bound) is ``lost``: a rebuild skips it, a
   read or a partial write of it is ``Unreadable``, and only a write of its whole stripe makes
   it whole again. Its bytes are never made up from blocks of two versions.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from cluster.ground.errors import Conflict
from cluster.ground.ids import PoolId

from .blockdev import BlockStore
from .erasure import Buffer, Codec, load_numpy
from .memberio import MemberIO, Unwritable

if TYPE_CHECKING:
    from .erasure import Bytes as Rows
from .recovery import PARALLEL_RUNS, Recovery
from .roster import ArrayMember, RecoveryProgress
from .scratch import ScratchPool
from .slots import SlotLocks

__all__ = ["StripeArray", "Unreadable", "Unwritable"]

log = logging.getLogger(__name__)
RunOp = Callable[[str, float, Callable[[], Awaitable[Any]]], Awaitable[Any]]
PARALLEL_SLOTS = 8
TORN_BYTES = 16 << 20  # rule 8: torn stripes kept on the owner, at most this many bytes


class Unreadable(Conflict):
    """A slot with fewer readable blocks than data members."""


class StripeArray(MemberIO):
    """Stripes over members; ``open_member`` finds a member's device, ``run_op`` runs a task."""

    def __init__(
        self,
        name: str,
        chunk: int,
        slots: int,
        data: Sequence[ArrayMember],
        parity: Sequence[ArrayMember],
        open_member: Callable[[PoolId], BlockStore | None],
        run_op: RunOp,
    ) -> None:
        super().__init__(name, chunk, slots, data, parity, open_member)
        self.codec = Codec(len(self.data), len(self.parity))
        self._run_op = run_op
        self.written: set[int] = set()
        self.torn: dict[int, bytes] = {}  # slot -> its stripe, kept on the owner (rule 8)
        self.lost: set[int] = set()  # written slots with fewer than k current blocks (rule 8)
        self.recovery = RecoveryProgress()
        self._locks = SlotLocks()
        self._zero = bytes(chunk)
        self._scratch = ScratchPool(keep=PARALLEL_RUNS + 1)  # the rebuilt runs and a write

    # -- changes of the roster --------------------------------------------------------------

    def add_parity(self, member: ArrayMember) -> None:
        """Raise the parity level; the new member recovers (existing parity stays valid)."""
        self.parity.append(member)
        self.join_fresh(self.k + self.m - 1, member)
        self.codec = Codec(self.k, self.m)
        self.recovery.generation += 1

    def add_data(self, member: ArrayMember) -> None:
        """Widen an array that holds no data yet."""
        if self.written:
            raise Conflict(f"array {self.name} holds data; a data member can only join it empty")
        self.data.append(member)
        self.codec = Codec(self.k, self.m)

    async def _gather(
        self, slot: int, want: int, n: int = 1, into: Rows | None = None
    ) -> list[Buffer | None]:
        """At least ``want`` readable blocks of ``n`` consecutive slots (data first)."""
        blocks: list[Buffer | None] = [None] * (self.k + self.m)
        candidates = [p for p in self.positions() if self.current(p, slot, n)]
        have = 0
        while have < want and candidates:
            batch, candidates = candidates[: want - have], candidates[want - have :]
            for p, block in (await self._read_positions(slot, batch, n, into)).items():
                if block is not None:
                    blocks[p] = block
                    have += 1
        return blocks

    def _refuse_lost(self, first: int, n: int) -> None:
        """Rule 8: Unreadable when one of slots ``first..first+n-1`` is lost."""
        if self.lost and not self.lost.isdisjoint(range(first, first + n)):
            raise Unreadable(
                f"slot {min(self.lost & set(range(first, first + n)))} of array {self.name} is "
                "lost: a write that failed part-way left fewer than "
                f"{self.k} blocks of any one version; write its whole stripe again"
            )

    async def _stripe_data(self, slot: int, indices: Sequence[int]) -> dict[int, Buffer]:
        """Data chunks ``indices`` of a slot, reconstructed when a member is unusable."""
        if slot not in self.written:
            return dict.fromkeys(indices, self._zero)
        self._refuse_lost(slot, 1)
        if slot in self.torn:
            return {i: self._torn_chunks(slot)[i] for i in indices}
        direct = [i for i in indices if self.current(i, slot)]
        if len(direct) == len(indices):
            got = await self._read_positions(slot, direct)
            if all(b is not None for b in got.values()):
                return {i: b for i, b in got.items() if b is not None}
        blocks = await self._gather(slot, self.k)
        try:
            data = self.codec.recover_data(blocks)
        except ValueError as exc:
            raise Unreadable(f"slot {slot} of array {self.name} is unreadable: {exc}") from None
        return {i: data[i] for i in indices}

    # -- logical I/O ------------------------------------------------------------------------

    async def read(self, offset: int, size: int) -> bytes:
        out = bytearray(size)
        sb, end = self.stripe_bytes, offset + size
        first_full, end_full = -(-offset // sb), end // sb
        if first_full < end_full:  # whole stripes: read run by run, one read per member
            view = memoryview(out)
            for first in range(first_full, end_full, self.run_slots):
                n = min(self.run_slots, end_full - first)
                at = first * sb - offset
                try:
                    await self._read_full(first, n, view[at : at + n * sb])
                except Unreadable:  # the run as a whole: its slots may be readable one by one
                    if n == 1:
                        raise
                    for s in range(first, first + n):
                        at = s * sb - offset
                        await self._read_full(s, 1, view[at : at + sb])
            partial = self._split(offset, first_full * sb - offset)
            partial.update(self._split(end_full * sb, end - end_full * sb, offset))
        else:
            partial = self._split(offset, size)

        async def one(slot: int, pieces: list[tuple[int, int, int, int]]) -> None:
            async with self._locks.hold(slot):
                chunks = await self._stripe_data(slot, sorted({p[0] for p in pieces}))
            for index, within, n, at in pieces:
                out[at : at + n] = chunks[index][within : within + n]

        if partial:
            await self._per_slot(partial, one)
        return bytes(out)

    async def _read_full(self, first: int, n: int, dst: memoryview) -> None:
        """Whole stripes of ``n`` consecutive slots into ``dst``: the data members' runs (or
        enough members to rebuild them), interleaved back into stripes in one copy."""
        k, rows, size = self.k, self.k + self.m, n * self.chunk
        with self._scratch.take(rows, size) as buf:
            async with self._locks.hold_run(first, n):
                written = [s for s in range(first, first + n) if s in self.written]
                if not written:
                    dst[:] = bytes(len(dst))
                    return
                self._refuse_lost(first, n)
                if self._torn_in(first, n):
                    dst[:] = self.torn[first]
                    return
                blocks = await self._gather(first, k, n, buf)
                try:
                    data = self.codec.rebuild(blocks, range(k))
                except ValueError as exc:
                    raise Unreadable(
                        f"slots {first}..{first + n - 1} of array {self.name} are unreadable: {exc}"
                    ) from None
                np = load_numpy()
                grid = np.frombuffer(dst, np.uint8).reshape(n, k, self.chunk)
                for i, column in enumerate(data):
                    grid[:, i, :] = np.frombuffer(column, np.uint8).reshape(n, self.chunk)
                if len(written) < n:  # rule 3: a slot never written reads as zeros
                    sb = self.stripe_bytes
                    for s in set(range(first, first + n)) - set(written):
                        dst[(s - first) * sb : (s - first + 1) * sb] = bytes(sb)

    async def write(self, offset: int, data: Buffer) -> None:
        sb, end = self.stripe_bytes, offset + len(data)
        first_full, end_full = -(-offset // sb), end // sb
        if first_full < end_full:  # whole stripes: coded and written run by run, no pieces
            step = self.run_slots
            for first in range(first_full, end_full, step):
                n = min(step, end_full - first)
                await self._write_full(first, n, data, first * sb - offset)
            partial = self._split(offset, first_full * sb - offset)
            partial.update(self._split(end_full * sb, end - end_full * sb, offset))
        else:
            partial = self._split(offset, len(data))

        async def one(slot: int, pieces: list[tuple[int, int, int, int]]) -> None:
            async with self._locks.hold(slot):
                await self._write_slot(slot, pieces, data)

        if partial:
            await self._per_slot(partial, one)

    async def _write_full(self, first: int, n: int, buf: Buffer, at: int) -> None:
        """Whole stripes of ``n`` consecutive slots from ``buf[at:]``: one write per member."""
        stripes = memoryview(buf)[at : at + n * self.stripe_bytes]
        columns = self.codec.stripe_columns(stripes, self.chunk)  # views: no copy of the data
        with self._scratch.take(self.m, n * self.chunk) as parity:
            self.codec.parity_into(columns, parity)
            blocks: list[tuple[int, Buffer | Rows]] = [*enumerate(columns)]
            blocks += [(self.k + j, row.data) for j, row in enumerate(parity)]
            async with self._locks.hold_run(first, n):
                unwritten = [s for s in range(first, first + n) if s not in self.written]
                try:
                    await self._write_positions(first, blocks, need=self.k)
                except Unwritable as exc:
                    self._unmiss(unwritten)
                    sb = self.stripe_bytes
                    for s in sorted(set(range(first, first + n)) - set(unwritten)):
                        if exc.partial:  # rule 8 (a refused write wrote nothing)
                            self._tear(s, stripes[(s - first) * sb : (s - first + 1) * sb])
                    raise
            self.written.update(range(first, first + n))
            self.lost.difference_update(range(first, first + n))
            for s in self._torn_in(first, n, whole=False):
                del self.torn[s]
            if self._degraded():
                self.dirty.update(range(first, first + n))

    def _torn_in(self, first: int, n: int, whole: bool = True) -> list[int]:
        """The torn slots of ``first..first+n-1``; with ``whole``, ``Unreadable`` when a run
        of several slots has one (the caller goes slot by slot)."""
        if not self.torn:
            return []
        torn = sorted(self.torn.keys() & range(first, first + n))
        if torn and whole and n > 1:
            raise Unreadable(f"slot {torn[0]} of array {self.name} is torn: one slot at a time")
        return torn

    def _tear(self, slot: int, stripe: Buffer) -> None:
        """Rule 8: a written slot that a failed write left with fewer than ``k`` current
        blocks keeps ``stripe`` (as that write meant it) on the owner."""
        if self.holders(slot) >= self.k:
            self.torn.pop(slot, None)
        elif slot in self.torn or len(self.torn) * self.stripe_bytes < TORN_BYTES:
            self.torn[slot] = bytes(stripe)

    def _torn_chunks(self, slot: int) -> list[bytes]:
        stripe, c = self.torn[slot], self.chunk
        return [stripe[i * c : (i + 1) * c] for i in range(self.k)]

    def _settle(self, slot: int) -> None:
        """Rule 8: a torn slot that ``k`` members hold again is dropped from the owner."""
        if slot in self.torn and self.holders(slot) >= self.k:
            del self.torn[slot]

    def _unmiss(self, slots: Sequence[int]) -> None:
        """Rule 3: a slot never written holds nothing to miss; the members a failed first
        write of it skipped did not miss it (its next write is a first one again)."""
        for missed in self.missed.values():
            missed.difference_update(slots)
        self.dirty.difference_update(slots)

    async def _per_slot(self, split: dict[int, list[tuple[int, int, int, int]]], fn: Any) -> None:
        limiter = trio.CapacityLimiter(PARALLEL_SLOTS)

        async def limited(slot: int, pieces: list[tuple[int, int, int, int]]) -> None:
            async with limiter:
                await fn(slot, pieces)

        if len(split) <= 2:  # the head and tail of a write: tasks would cost more than they overlap
            for slot, pieces in split.items():
                await fn(slot, pieces)
            return
        async with trio.open_nursery() as nursery:
            for slot, pieces in split.items():
                nursery.start_soon(limited, slot, pieces)

    async def _write_slot(
        self, slot: int, pieces: list[tuple[int, int, int, int]], buf: Buffer
    ) -> None:
        touched = {p[0] for p in pieces}
        whole = {p[0] for p in pieces if p[2] == self.chunk}
        first = slot not in self.written
        old: dict[int, Buffer]
        if len(whole) == self.k or first:
            old = dict.fromkeys(range(self.k), self._zero)
        else:
            old = await self._stripe_data(slot, range(self.k))
        chunks = [bytearray(old[i]) for i in range(self.k)]
        for index, within, n, at in pieces:
            chunks[index][within : within + n] = buf[at : at + n]
        data = [bytes(c) for c in chunks]
        changed = range(self.k) if first or slot in self.torn else sorted(touched)
        blocks = [(i, data[i]) for i in changed]
        blocks += [(self.k + j, p) for j, p in enumerate(self.codec.encode(data))]
        kept = sum(self.current(i, slot) for i in range(self.k) if i not in changed)
        try:
            await self._write_positions(slot, blocks, need=self.k - kept)
        except Unwritable as exc:
            if first:
                self._unmiss([slot])
            elif exc.partial:
                self._tear(slot, b"".join(data))
            raise
        self.written.add(slot)
        self.lost.discard(slot)
        self.torn.pop(slot, None)
        if self._degraded():
            self.dirty.add(slot)

    # -- recovery and checks ----------------------------------------------------------------

    async def recover(self, pace_s: float = 0.0, resync: bool = False) -> None:
        """Rebuild the ``recovering`` members, then mark them active (``recovery.Recovery``:
        every written slot, or with ``resync`` only the ones they missed)."""
        await Recovery(self).run(pace_s, resync)

    async def rebuild_run(self, first: int, n: int, targets: Sequence[int]) -> None:
        """``_rebuild`` as one task of the array's pool (``run_op``); a run that cannot be
        rebuilt whole is rebuilt slot by slot, and a slot fewer than ``k`` members hold is
        lost (rule 8)."""
        rebuild = partial(self._rebuild, first, n, targets)  # waits for the slots' lock
        try:
            await self._run_op("recover", n * self.chunk / 1024, rebuild)
        except Unreadable:
            if n > 1:
                for slot in range(first, first + n):
                    await self.rebuild_run(slot, 1, targets)
                return
            if self.holders(first) >= self.k:
                raise  # enough members keep it: it waits for them to come back
            if first not in self.lost:
                log.warning("array %s: slot %d is lost (rule 8)", self.name, first)
            self.lost.add(first)
            for p in targets:  # nothing to rebuild there: the slot stays lost until written
                self.missed.get(p, set()).discard(first)

    async def _rebuild(self, first: int, n: int, targets: Sequence[int]) -> None:
        """Rebuild ``n`` consecutive written slots onto ``targets``: one I/O per member."""
        rows, size = self.k + self.m, n * self.chunk
        with self._scratch.take(rows + len(targets), size) as buf:
            async with self._locks.hold_run(first, n):
                if self._torn_in(first, n):  # rule 8: its blocks come from the owner's copy
                    data = self._torn_chunks(first)
                    await self._write_positions(
                        first, [(p, self.codec.block(data, p)) for p in targets]
                    )
                    self._settle(first)
                    return
                runs = await self._gather(first, self.k, n, buf[:rows])
                if sum(b is not None for b in runs) < self.k:
                    raise Unreadable(
                        f"slots {first}..{first + n - 1} of array {self.name} are unreadable"
                    )
                # the code is byte-wise: the whole run of every member is rebuilt in one pass
                rebuilt = self.codec.rebuild(runs, targets, buf[rows:])
                await self._write_positions(first, list(zip(targets, rebuilt, strict=True)))

    async def check_slot(self, slot: int, repair: bool = False) -> tuple[bool, bool]:
        """``(readable, consistent)`` of a written slot from every readable block; with
        ``repair``, an inconsistent slot with every position active gets its parity rewritten."""
        if slot in self.lost:
            return False, True
        async with self._locks.hold(slot):
            if slot in self.torn:  # rule 8: readable from the owner; its recovery rewrites it
                return True, False
            blocks = await self._gather(slot, self.k + self.m)
            present = [p for p, b in enumerate(blocks) if b is not None]
            if len(present) < self.k:
                return False, True
            data = self.codec.recover_data(blocks)
            consistent = all(self.codec.block(data, p) == blocks[p] for p in present)
            if not consistent:
                self.dirty.add(slot)
            if (not consistent or slot in self.dirty) and repair and self.out_of_service() == 0:
                parity = [(self.k + j, b) for j, b in enumerate(self.codec.encode(data))]
                await self._write_positions(slot, parity)
                self.dirty.discard(slot)
            return True, consistent
