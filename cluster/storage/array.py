"""The data path of an erasure-coded array: stripes over member devices, reads that
reconstruct around unusable members, recovery onto fresh members, parity checks.

Rules:
1. Geometry (``layout``): ``k`` data and ``m`` parity positions, a slot is one stripe.
2. A position is readable when its member is ``active``; it is written when ``active`` or
   ``recovering``; ``faulty`` and ``removed`` positions are skipped. A member whose device
   fails an I/O is marked ``faulty`` on the spot.
3. Slots never written read as zeros without I/O; the first write of a slot writes every
   position, so stale bytes on a member never leak into the array.
4. One slot is changed by one task at a time (a per-slot lock), so a read-modify-write, a
   rebuild and a parity check of the same slot never interleave.
5. ``dirty`` slots are those whose redundancy is not current: written while a position was out
   of service, or found inconsistent by a check. A finished recovery leaves none. Per
   position, ``missed`` holds the slots written without it (skipped, or its write failed),
   noted by the write itself: a resync rebuilds exactly those, and a recovery marks its
   targets active only once every slot they missed, also by a write that was already under
   way when they came back, has been rebuilt onto them.
7. A write is acknowledged only when at least ``k`` positions took it (enough to read it back
   whatever else is lost meanwhile); else it fails (``Unwritable``, 409) and its slots are
   dirty. With more members out than the parity level, every write fails so.
6. Whole stripes move in runs of up to ``layout.RUN_BYTES`` per member: one coding pass and
   one I/O per member for the run (the data chunks straight from the caller's buffer,
   ``write_rows``; recovery reads into and codes in reused matrices, ``ScratchPool``). Member
   I/O up to ``SMALL_IO`` is done in turn: the member devices do it in the caller's task anyway.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from cluster.ground.errors import ApiError, Conflict, PoolGone
from cluster.ground.ids import PoolId

from .blockdev import BlockStore
from .erasure import Buffer, Codec, load_numpy
from .layout import StripeLayout

if TYPE_CHECKING:
    from .erasure import Bytes as Rows
from .recovery import PARALLEL_RUNS, Recovery
from .roster import ArrayMember, DeviceState, RecoveryProgress
from .scratch import ScratchPool
from .slots import SlotLocks

__all__ = ["StripeArray", "Unreadable", "Unwritable"]

log = logging.getLogger(__name__)
RunOp = Callable[[str, float, Callable[[], Awaitable[Any]]], Awaitable[Any]]
MEMBER_ERRORS = (ApiError, PoolGone, OSError)
PARALLEL_SLOTS = 8
SMALL_IO = 1 << 20  # bytes: member I/O up to this size is done in turn (see _read_positions)


def _nbytes(block: Buffer | Rows) -> int:
    return len(block) if isinstance(block, bytes | bytearray | memoryview) else block.nbytes


class Unreadable(Conflict):
    """A slot with fewer readable blocks than data members."""


class Unwritable(Conflict):
    """A write that reached fewer members than it takes to read it back (rule 7)."""


class StripeArray(StripeLayout):
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
        super().__init__(name, chunk, slots, data, parity)
        self.codec = Codec(len(self.data), len(self.parity))
        self._open_member, self._run_op = open_member, run_op
        self.written: set[int] = set()
        self.dirty: set[int] = set()
        self.missed: dict[int, set[int]] = {}  # position -> slots written without it (rule 5)
        self.failures: dict[int, BaseException] = {}  # position -> why its last I/O failed
        self.recovery = RecoveryProgress()
        self._locks = SlotLocks()
        self._zero = bytes(chunk)
        self._scratch = ScratchPool(keep=PARALLEL_RUNS + 1)  # the rebuilt runs and a write

    # -- changes of the roster --------------------------------------------------------------

    def add_parity(self, member: ArrayMember) -> None:
        """Raise the parity level; the new member recovers (existing parity stays valid)."""
        self.parity.append(replace(member, state=DeviceState.RECOVERING))
        self.codec = Codec(self.k, self.m)
        self.recovery.generation += 1

    def add_data(self, member: ArrayMember) -> None:
        """Widen an array that holds no data yet."""
        if self.written:
            raise Conflict(f"array {self.name} holds data; a data member can only join it empty")
        self.data.append(member)
        self.codec = Codec(self.k, self.m)

    # -- member I/O -------------------------------------------------------------------------

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

    def _miss(self, position: int, slot: int, block: Buffer | Rows) -> None:
        """Rule 5: ``block`` (one chunk a slot from ``slot`` on) was not written to
        ``position``."""
        slots = range(slot, slot + max(1, _nbytes(block) // self.chunk))
        self.missed.setdefault(position, set()).update(slots)
        self.dirty.update(slots)

    async def _write_one(self, slot: int, position: int, block: Buffer | Rows) -> bool:
        """Write ``block`` to ``position``; whether it took it."""
        member = self.member(position)
        if member.state not in (DeviceState.ACTIVE, DeviceState.RECOVERING):
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
        """Each block to its position; ``Unwritable`` when fewer than ``need`` took theirs."""
        took = 0
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
            raise Unwritable(
                f"array {self.name} could write slot {slot} to {took} members only; it takes "
                f"{self.k} to read it back ({self.out_of_service()} of {self.k + self.m} "
                f"members out of service, {self.m} tolerated)"
            )

    async def _gather(
        self, slot: int, want: int, n: int = 1, into: Rows | None = None
    ) -> list[Buffer | None]:
        """At least ``want`` readable blocks of ``n`` consecutive slots (data first)."""
        blocks: list[Buffer | None] = [None] * (self.k + self.m)
        candidates = [p for p in self.positions() if self.member(p).state == DeviceState.ACTIVE]
        have = 0
        while have < want and candidates:
            batch, candidates = candidates[: want - have], candidates[want - have :]
            for p, block in (await self._read_positions(slot, batch, n, into)).items():
                if block is not None:
                    blocks[p] = block
                    have += 1
        return blocks

    async def _stripe_data(self, slot: int, indices: Sequence[int]) -> dict[int, Buffer]:
        """Data chunks ``indices`` of a slot, reconstructed when a member is unusable."""
        if slot not in self.written:
            return dict.fromkeys(indices, self._zero)
        direct = [i for i in indices if self.member(i).state == DeviceState.ACTIVE]
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
                await self._read_full(first, n, view[at : at + n * sb])
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
                await self._write_positions(first, blocks, need=self.k)
            self.written.update(range(first, first + n))
            if self._degraded():
                self.dirty.update(range(first, first + n))

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
        changed = range(self.k) if first else sorted(touched)
        blocks = [(i, data[i]) for i in changed]
        blocks += [(self.k + j, p) for j, p in enumerate(self.codec.encode(data))]
        kept = sum(  # data chunks left as they are, on members in service: still current
            self.member(i).state in (DeviceState.ACTIVE, DeviceState.RECOVERING)
            for i in range(self.k)
            if i not in changed
        )
        await self._write_positions(slot, blocks, need=self.k - kept)
        self.written.add(slot)
        if self._degraded():
            self.dirty.add(slot)

    # -- recovery and checks ----------------------------------------------------------------

    async def recover(self, pace_s: float = 0.0, resync: bool = False) -> None:
        """Rebuild the ``recovering`` members, then mark them active (``recovery.Recovery``:
        every written slot, or with ``resync`` only the ones they missed)."""
        await Recovery(self).run(pace_s, resync)

    def missed_by(self, positions: Sequence[int]) -> set[int]:
        """The slots written without any of ``positions`` (rule 5)."""
        return set().union(*(self.missed.get(p, set()) for p in positions))

    async def rebuild_run(self, first: int, n: int, targets: Sequence[int]) -> None:
        """``_rebuild`` as one task of the array's pool (``run_op``)."""
        rebuild = partial(self._rebuild, first, n, targets)  # waits for the slots' lock
        await self._run_op("recover", n * self.chunk / 1024, rebuild)

    async def _rebuild(self, first: int, n: int, targets: Sequence[int]) -> None:
        """Rebuild ``n`` consecutive written slots onto ``targets``: one I/O per member."""
        rows, size = self.k + self.m, n * self.chunk
        with self._scratch.take(rows + len(targets), size) as buf:
            async with self._locks.hold_run(first, n):
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
        async with self._locks.hold(slot):
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
