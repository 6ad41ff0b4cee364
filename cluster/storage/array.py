"""The data path of an erasure-coded array: stripes over member devices, reads that
reconstruct around unusable members, recovery onto fresh members, parity checks.

Rules:
1. Geometry: ``k`` data and ``m`` parity positions; every member holds ``slots`` chunks of
   ``chunk`` bytes from its ``base`` offset. Slot ``s`` is one stripe: chunk ``s`` of every
   member. Logical byte ``L`` lives in slot ``L // (k·chunk)`` on data member ``(L // chunk) % k``.
2. A position is readable when its member is ``active``; it is written when ``active`` or
   ``recovering``; ``faulty`` and ``removed`` positions are skipped. A member whose device
   fails an I/O is marked ``faulty`` on the spot.
3. Slots never written read as zeros without I/O; the first write of a slot writes every
   position, so stale bytes on a member never leak into the array.
4. One slot is changed by one task at a time (a per-slot lock), so a read-modify-write, a
   rebuild and a parity check of the same slot never interleave.
5. ``dirty`` slots are those whose redundancy is not current: written while a position was out
   of service, or found inconsistent by a check. A finished recovery leaves none.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import trio

from cluster.errors import ApiError, Conflict, PoolGone
from cluster.ids import PoolId

from .blockdev import BlockStore
from .erasure import Codec
from .roster import ArrayMember, MemberState, RecoveryProgress
from .slots import SlotLocks, slot_runs

__all__ = ["StripeArray", "Unreadable"]

log = logging.getLogger(__name__)
RunOp = Callable[[str, float, Callable[[], Awaitable[Any]]], Awaitable[Any]]
MEMBER_ERRORS = (ApiError, PoolGone, OSError)
PARALLEL_SLOTS = 8
WALK_STEPS = 100  # a paced recovery walks the slots in at most this many steps


class Unreadable(Conflict):
    """A slot with fewer readable blocks than data members."""


class StripeArray:
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
        self.name, self.chunk, self.slots = name, chunk, slots
        self.data, self.parity = list(data), list(parity)
        self.codec = Codec(len(self.data), len(self.parity))
        self._open_member, self._run_op = open_member, run_op
        self.written: set[int] = set()
        self.dirty: set[int] = set()
        self.recovery = RecoveryProgress()
        self._locks = SlotLocks()
        self._zero = bytes(chunk)

    # -- geometry and roster ----------------------------------------------------------------

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
    def capacity(self) -> int:
        return self.slots * self.stripe_bytes

    def member(self, position: int) -> ArrayMember:
        return self.data[position] if position < self.k else self.parity[position - self.k]

    def set_member(self, position: int, member: ArrayMember) -> None:
        if position < self.k:
            self.data[position] = member
        else:
            self.parity[position - self.k] = member

    def positions(self) -> range:
        return range(self.k + self.m)

    def position_of(self, pool_id: PoolId) -> int | None:
        return next((p for p in self.positions() if self.member(p).pool_id == pool_id), None)

    def out_of_service(self) -> int:
        """Positions not ``active`` (faulty, removed or still recovering)."""
        return sum(self.member(p).state != MemberState.ACTIVE for p in self.positions())

    def set_state(self, position: int, state: MemberState) -> None:
        self.set_member(position, replace(self.member(position), state=state))

    def add_parity(self, member: ArrayMember) -> None:
        """Raise the parity level; the new member recovers (existing parity stays valid)."""
        self.parity.append(replace(member, state=MemberState.RECOVERING))
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
        if member.state in (MemberState.ACTIVE, MemberState.RECOVERING):
            log.warning(
                "array %s: member %s failed (%s); marked faulty", self.name, member.pool_name, exc
            )
            self.set_state(position, MemberState.FAULTY)

    async def _read_one(
        self, slot: int, position: int, out: dict[int, bytes | None], n: int = 1
    ) -> None:
        member = self.member(position)
        store = self._open_member(member.pool_id)
        try:
            if store is None:
                raise PoolGone(str(member.pool_id))
            out[position] = await store.read(member.base + slot * self.chunk, n * self.chunk)
        except MEMBER_ERRORS as exc:
            self._fail(position, exc)
            out[position] = None

    async def _write_one(self, slot: int, position: int, block: bytes) -> None:
        member = self.member(position)
        if member.state not in (MemberState.ACTIVE, MemberState.RECOVERING):
            return
        store = self._open_member(member.pool_id)
        try:
            if store is None:
                raise PoolGone(str(member.pool_id))
            await store.write(member.base + slot * self.chunk, block)
        except MEMBER_ERRORS as exc:
            self._fail(position, exc)

    async def _read_positions(
        self, slot: int, positions: Sequence[int], n: int = 1
    ) -> dict[int, bytes | None]:
        """Chunks of ``n`` consecutive slots from each position (one read per member)."""
        out: dict[int, bytes | None] = {}
        async with trio.open_nursery() as nursery:
            for p in positions:
                nursery.start_soon(self._read_one, slot, p, out, n)
        return out

    async def _write_positions(self, slot: int, blocks: Sequence[tuple[int, bytes]]) -> None:
        async with trio.open_nursery() as nursery:
            for p, block in blocks:
                nursery.start_soon(self._write_one, slot, p, block)

    async def _gather(self, slot: int, want: int, n: int = 1) -> list[bytes | None]:
        """At least ``want`` readable blocks of ``n`` consecutive slots (data first)."""
        blocks: list[bytes | None] = [None] * (self.k + self.m)
        candidates = [p for p in self.positions() if self.member(p).state == MemberState.ACTIVE]
        have = 0
        while have < want and candidates:
            batch, candidates = candidates[: want - have], candidates[want - have :]
            for p, block in (await self._read_positions(slot, batch, n)).items():
                if block is not None:
                    blocks[p] = block
                    have += 1
        return blocks

    async def _stripe_data(self, slot: int, indices: Sequence[int]) -> dict[int, bytes]:
        """Data chunks ``indices`` of a slot, reconstructed when a member is unusable."""
        if slot not in self.written:
            return dict.fromkeys(indices, self._zero)
        direct = [i for i in indices if self.member(i).state == MemberState.ACTIVE]
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

    def _split(self, offset: int, size: int) -> dict[int, list[tuple[int, int, int, int]]]:
        """Slot -> pieces ``(data index, offset in chunk, length, offset in the buffer)``."""
        out: dict[int, list[tuple[int, int, int, int]]] = {}
        pos, end = offset, offset + size
        while pos < end:
            slot, rest = divmod(pos, self.stripe_bytes)
            index, within = divmod(rest, self.chunk)
            n = min(self.chunk - within, end - pos)
            out.setdefault(slot, []).append((index, within, n, pos - offset))
            pos += n
        return out

    async def read(self, offset: int, size: int) -> bytes:
        out = bytearray(size)

        async def one(slot: int, pieces: list[tuple[int, int, int, int]]) -> None:
            async with self._locks.hold(slot):
                chunks = await self._stripe_data(slot, sorted({p[0] for p in pieces}))
            for index, within, n, at in pieces:
                out[at : at + n] = chunks[index][within : within + n]

        await self._per_slot(self._split(offset, size), one)
        return bytes(out)

    async def write(self, offset: int, data: bytes) -> None:
        split = self._split(offset, len(data))
        full = [s for s, pieces in split.items() if sum(p[2] for p in pieces) == self.stripe_bytes]
        for first, n in slot_runs(full):
            await self._write_full(first, n, data, split[first][0][3])
        done = set(full)
        partial = {s: pieces for s, pieces in split.items() if s not in done}

        async def one(slot: int, pieces: list[tuple[int, int, int, int]]) -> None:
            async with self._locks.hold(slot):
                await self._write_slot(slot, pieces, data)

        if partial:
            await self._per_slot(partial, one)

    async def _write_full(self, first: int, n: int, buf: bytes, at: int) -> None:
        """Whole stripes of ``n`` consecutive slots from ``buf[at:]``: one write per member."""
        per_position: list[list[bytes]] = [[] for _ in self.positions()]
        for i in range(n):
            base = at + i * self.stripe_bytes
            data = [buf[base + j * self.chunk : base + (j + 1) * self.chunk] for j in range(self.k)]
            for p, block in enumerate(data + self.codec.encode(data)):
                per_position[p].append(block)
        async with self._locks.hold_run(first, n):
            await self._write_positions(
                first, [(p, b"".join(c)) for p, c in enumerate(per_position)]
            )
            self.written.update(range(first, first + n))
            if self._degraded():
                self.dirty.update(range(first, first + n))

    def _degraded(self) -> bool:
        states = (MemberState.FAULTY, MemberState.REMOVED)
        return any(self.member(p).state in states for p in self.positions())

    async def _per_slot(self, split: dict[int, list[tuple[int, int, int, int]]], fn: Any) -> None:
        limiter = trio.CapacityLimiter(PARALLEL_SLOTS)

        async def limited(slot: int, pieces: list[tuple[int, int, int, int]]) -> None:
            async with limiter:
                await fn(slot, pieces)

        if len(split) == 1:
            ((slot, pieces),) = split.items()
            await fn(slot, pieces)
            return
        async with trio.open_nursery() as nursery:
            for slot, pieces in split.items():
                nursery.start_soon(limited, slot, pieces)

    async def _write_slot(
        self, slot: int, pieces: list[tuple[int, int, int, int]], buf: bytes
    ) -> None:
        touched = {p[0] for p in pieces}
        whole = {p[0] for p in pieces if p[2] == self.chunk}
        first = slot not in self.written
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
        await self._write_positions(slot, blocks)
        self.written.add(slot)
        if self._degraded():
            self.dirty.add(slot)

    # -- recovery and checks ----------------------------------------------------------------

    async def recover(self, pace_s: float = 0.0) -> None:
        """Walk every slot for the ``recovering`` members, then mark them active: a written
        slot is rebuilt onto them, an unwritten one holds nothing yet (rule 3). Progress counts
        slots (``recovery.total`` is every slot). With ``pace_s`` > 0 the slots are walked in
        order in at most ``WALK_STEPS`` steps, each taking at least that many seconds (a rebuild
        a person can watch, a few seconds whatever the size); with 0 the unwritten ones count
        done at once and runs of written slots are rebuilt in parallel."""
        rec = self.recovery
        generation = rec.generation
        targets = [p for p in self.positions() if self.member(p).state == MemberState.RECOVERING]
        if not targets:
            return
        slots = sorted(self.written)
        rec.active, rec.total, rec.in_flight = True, self.slots, 0
        rec.completed = 0 if pace_s > 0 else self.slots - len(slots)
        limiter = trio.CapacityLimiter(PARALLEL_SLOTS)

        async def one(first: int, n: int) -> None:
            async with limiter:
                rec.in_flight += n
                try:
                    size = n * self.chunk / 1024
                    await self._run_op("recover", size, lambda: self._rebuild(first, n, targets))
                finally:
                    rec.in_flight -= n
                rec.completed += n

        try:
            if pace_s > 0:
                await self._walk(targets, pace_s)
            else:
                async with trio.open_nursery() as nursery:
                    for first, n in slot_runs(slots):
                        nursery.start_soon(one, first, n)
        finally:
            rec.active = False
        if rec.generation != generation:
            return  # another member started recovering meanwhile: the next run covers it
        for p in targets:
            if self.member(p).state == MemberState.RECOVERING:
                self.set_state(p, MemberState.ACTIVE)
        if self.out_of_service() == 0:
            self.dirty.clear()
        log.info("array %s: recovery of %d slots done", self.name, len(slots))

    async def _walk(self, targets: Sequence[int], pace_s: float) -> None:
        """Every slot in order, in steps of ``ceil(slots / WALK_STEPS)`` slots, at least
        ``pace_s`` seconds each; the slots written by then are rebuilt (a slot written later
        went to the targets already)."""
        rec = self.recovery
        step = -(-self.slots // WALK_STEPS)
        for first in range(0, self.slots, step):
            count = min(step, self.slots - first)
            written = [s for s in range(first, first + count) if s in self.written]
            rec.in_flight = count
            try:
                for start, n in slot_runs(written):
                    rebuild = partial(self._rebuild, start, n, targets)
                    await self._run_op("recover", n * self.chunk / 1024, rebuild)
                await trio.sleep(pace_s)
            finally:
                rec.in_flight = 0
            rec.completed += count

    async def _rebuild(self, first: int, n: int, targets: Sequence[int]) -> None:
        """Rebuild ``n`` consecutive written slots onto ``targets``: one I/O per member."""
        c = self.chunk
        async with self._locks.hold_run(first, n):
            runs = await self._gather(first, self.k, n)
            if sum(b is not None for b in runs) < self.k:
                raise Unreadable(
                    f"slots {first}..{first + n - 1} of array {self.name} are unreadable"
                )
            out: dict[int, list[bytes]] = {p: [] for p in targets}
            for i in range(n):
                blocks = [b[i * c : (i + 1) * c] if b is not None else None for b in runs]
                data = self.codec.recover_data(blocks)
                for p in targets:
                    out[p].append(self.codec.block(data, p))
            await self._write_positions(first, [(p, b"".join(chunks)) for p, chunks in out.items()])

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
