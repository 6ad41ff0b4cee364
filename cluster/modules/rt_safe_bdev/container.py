"""The container of one array: composition over its members, the ``BlockStore`` it offers,
its periodic ``recover`` and ``scrub`` tasks, ``verify`` and its ``stats``.

Member changes on a running array are in ``member_ops``; the container's methods of the same
names hand over to it, one at a time (``member_change``: a second one is refused, 409).

Recovery walks every slot of the array and is paced so it can be watched: at most 100 steps
(``storage.recovery.WALK_STEPS``), each taking at least ``recover_pace_s`` seconds
(``knobs.DEFAULT_PACE_S`` when left out: a few seconds whatever the size; 0 rebuilds as fast as the
devices go, for tests and benchmarks). ``stats`` reports it in slots: ``completed +
in_flight + queued == total``, the rate measured over the run, and one ``recovery_state``
the page shows as is.

What an array takes it gives back when it is destroyed (or its start fails): its regions on
the member devices (``claim`` / ``release``) and the devices it created itself (its ``_p<j>``
parity members, members and spares made from a name and a capacity, here or on a peer:
``devices`` rule 5), once nothing else is allocated on them. It waits for its operations in
flight first, so no late write lands in a freed region.
"""

from __future__ import annotations

import logging
import random
import secrets
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import Any

import trio

from cluster.ground.elapsed import perf_ns
from cluster.ground.errors import ApiError, Conflict
from cluster.ground.ids import PoolId, parse_node_id
from cluster.runtime import parse_period
from cluster.storage import (
    Allocator,
    ArrayMember,
    BlockStore,
    Buffer,
    DeviceState,
    Extent,
    IoMeter,
    NoSpace,
    StripeArray,
    parse_size,
)

from ..extents import ExtentDevice
from ..members import MemberRequest, member_names, resolve_member
from ..rt_bdev import BdevContainer
from . import member_ops
from .devices import MemberDevices
from .knobs import auto_replace_of, pace_of
from .ledger import WriteLedger

__all__ = ["DEFAULT_CHUNK", "SafeBdevContainer"]

log = logging.getLogger(__name__)
JSON = dict[str, Any]
DEFAULT_CHUNK = 4096


class SafeBdevContainer(ExtentDevice):
    methods = ("read", "write", "allocate", "free", "recover", "scrub", "verify")
    device_noun = "array"

    def __post_init__(self) -> None:
        super().__post_init__()
        self.max_failures = int(self.config.get("max_failures", 1))
        self.chunk = parse_size(self.config.get("chunk_size", DEFAULT_CHUNK))
        self.meter = IoMeter()
        self.array: StripeArray | None = None
        self.allocator = Allocator(0, self.chunk)
        self._scrub_cursor = 0
        self._claims: dict[PoolId, list[Extent]] = {}  # regions held on member devices
        self._created: list[BdevContainer] = []  # devices made for this array
        self._member_change: str | None = None  # the member change in progress
        self.pace_s = pace_of(self.config)
        self.auto_replace_s = auto_replace_of(self.config)
        self._run_started: float | None = None  # trio time the last recovery run started
        self._run_ended: float | None = None  # ... and ended (None while it runs)
        writer = f"{self.runtime.node_id}/{self.info.pool_id}/{secrets.token_hex(4)}"
        self.devices = MemberDevices(self.runtime, writer, self.info.pool_name)  # the members
        self.ledger = WriteLedger()  # the durability check's acknowledged writes

    # -- composition ------------------------------------------------------------------------

    async def start(self) -> None:
        named = self.devices.named
        data = [await named(n) for n in member_names(self.config.get("members"))]
        parity = [await named(n) for n in member_names(self.config.get("parity_members"))]
        slots = min(b.largest_free for b in data + parity) // self.chunk if data else 0
        if slots <= 0:
            raise Conflict(f"members of {self.info.pool_name} have no free space")
        for j in range(len(parity), self.max_failures):
            parity.append(await self._create_member(f"{self.info.pool_name}_p{j}", data[0], slots))
        taken: list[PoolId] = []
        for b in data + parity:
            self.devices.check_distinct(None, taken, b)
            taken.append(self.devices.pool_id(b))
        members = [await self.claim(b, slots) for b in data + parity]
        recover_s = parse_period(self.config.get("recover_period_s", 0.2))
        scrub_s = parse_period(self.config.get("scrub_period_s", 2.0))
        self.array = StripeArray(
            self.info.pool_name,
            self.chunk,
            slots,
            members[: len(data)],
            members[len(data) :],
            self._open_member,
            self._run_op,
        )
        self.allocator = Allocator(self.array.capacity, self.chunk)
        workers, pid = self.runtime.workers, self.info.pool_id
        workers.add_periodic(pid, "recover", recover_s, self._recover_tick)
        workers.add_periodic(pid, "scrub", scrub_s, self._scrub_tick)

    async def close(self) -> None:
        await super().close()
        await self.wait_idle()
        made = [*(b.info.pool_id for b in self._created), *self.devices.made]
        for pool_id in dict.fromkeys([*self._claims, *made]):  # each once: one bound a peer
            await self.give_back(pool_id)

    async def _create_member(self, name: str, like: BlockStore, slots: int) -> BlockStore:
        kind = like.bdev_type if isinstance(like, BdevContainer) else "ram"
        bdev_type = kind if kind in ("ram", "file") else "ram"
        req = MemberRequest(name, str(slots * self.chunk), bdev_type)
        return await self.resolve_member(req, slots * self.chunk)

    async def resolve_member(self, req: MemberRequest, needed: int) -> BlockStore:
        """The device ``req`` names or creates, with ``needed`` free bytes for this array: on
        node ``req.node_id`` when that is a peer (found or made there, ``devices`` rule 1)."""
        node_id = parse_node_id(req.node_id) if req.node_id else None
        if self.devices.is_remote(node_id):
            assert node_id is not None
            return await self.devices.find_or_make(node_id, req, needed, self.array)
        member_of = partial(member_ops.member_of, self.runtime)
        avoid = set(self.devices.remote)  # ``devices`` rule 2
        bdev, created = await resolve_member(self.runtime, req, needed, member_of, avoid)
        if created:
            self._created.append(bdev)
        return bdev

    async def claim(self, bdev: BlockStore, slots: int) -> ArrayMember:
        """Allocate the array's region on ``bdev``: the member record of that device."""
        extent = await bdev.allocate(slots * self.chunk)
        self._claims.setdefault(self.devices.pool_id(bdev), []).append(extent)
        return self.devices.member(bdev, extent.offset)

    def device_id(self, bdev: BlockStore) -> PoolId:
        return self.devices.pool_id(bdev)

    async def release(self, pool_id: PoolId) -> bool:
        """Free the regions this array holds on device ``pool_id`` (a device that is gone or
        broken keeps them: its space is its own); whether every one was freed."""
        store, freed = self.devices.open(pool_id), True
        for extent in list(self._claims.get(pool_id, ())):
            try:
                if store is not None:
                    await store.free(extent)
            except Exception as exc:
                freed = False
                log.info(
                    "array %s: could not free %s on %s: %s",
                    self.info.pool_name,
                    extent,
                    pool_id,
                    exc,
                )
            self._claims[pool_id].remove(extent)
        self._claims.pop(pool_id, None)
        return freed

    async def give_back(self, pool_id: PoolId) -> None:
        """Free this array's regions on device ``pool_id``; destroy the device too when it was
        made for this array and nothing else holds space on it (on a peer: ``devices`` rule
        5, once it is no member of the array)."""
        freed = await self.release(pool_id)
        for bdev in [b for b in self._created if b.info.pool_id == pool_id]:
            if bdev.closed or self.runtime.pools.find(pool_id) is not bdev:
                self._created.remove(bdev)
            elif bdev.unused and member_ops.member_of(self.runtime, pool_id) is None:
                self._created.remove(bdev)
                await self.runtime.destroy(str(pool_id))
        if self.closed or self.array is None or self.array.position_of(pool_id) is None:
            await self.devices.give_back(pool_id, freed)

    @contextmanager
    def member_change(self, what: str) -> Iterator[StripeArray]:
        """Run one member change at a time: a second one meanwhile is refused (409)."""
        array = self.require_array()
        if self._member_change is not None:
            raise Conflict(
                f"array {self.info.pool_name} is busy: {self._member_change} is in progress; "
                "send this request again when it has finished"
            )
        self._member_change = what
        try:
            with self.operation():
                yield array
        finally:
            self._member_change = None

    def _open_member(self, pool_id: PoolId) -> BlockStore | None:
        return self.devices.open(pool_id)

    async def _run_op(self, method: str, size_kib: float, fn: Callable[[], Awaitable[Any]]) -> Any:
        async def task() -> Any:
            with self.operation():
                return await fn()

        return await self.runtime.workers.run(self.info.pool_id, method, size_kib, task)

    def require_array(self) -> StripeArray:
        """The started array of an open pool (``PoolGone`` once destroyed, 409 before start)."""
        self.ensure_open()
        if self.array is None:
            raise Conflict(f"array {self.info.pool_name} is not started")
        return self.array

    # -- BlockStore -------------------------------------------------------------------------

    @property
    def capacity(self) -> int:
        return self.array.capacity if self.array else 0

    async def read(self, offset: int, size: int) -> bytes:
        self.check_range(offset, size)

        async def io() -> bytes:
            t0 = perf_ns() / 1e9
            data = await self.require_array().read(offset, size)
            self.meter.record("read", size, perf_ns() / 1e9 - t0)
            return data

        return await self._run_op("read", size / 1024, io)  # type: ignore[no-any-return]

    async def write(self, offset: int, data: Buffer) -> None:
        self.check_range(offset, len(data))

        async def io() -> None:
            t0 = perf_ns() / 1e9
            await self.require_array().write(offset, data)
            self.meter.record("write", len(data), perf_ns() / 1e9 - t0)

        await self._run_op("write", len(data) / 1024, io)

    # -- member management ------------------------------------------------------------------

    async def add_member(self, req: MemberRequest, as_parity: bool) -> JSON:
        return await member_ops.add_member(self, req, as_parity)

    async def remove_member(self, member_pool_id: str, was_faulty: bool) -> JSON:
        return await member_ops.remove_member(self, member_pool_id, was_faulty)

    async def replace_member(self, failed_pool_id: str, req: MemberRequest) -> JSON:
        return await member_ops.replace_member(self, failed_pool_id, req)

    # -- periodic tasks, checks -------------------------------------------------------------

    async def _recover_tick(self) -> None:
        array = self.require_array()
        now = trio.current_time()
        for line in await self.devices.follow_membership(array, now):
            log.warning("array %s: %s", self.info.pool_name, line)  # ``devices`` rule 3
        if self.auto_replace_s is not None:
            for p, pool_id in self.devices.overdue(now, self.auto_replace_s):
                await self._auto_replace(array, p, pool_id)
        with self.operation():
            if any(array.member(p).state == DeviceState.RECOVERING for p in array.positions()):
                resync = self.devices.resync_only(array)
                self._run_started, self._run_ended = trio.current_time(), None
                try:
                    await array.recover(self.pace_s, resync)
                finally:
                    self._run_ended = trio.current_time()

    async def _scrub_tick(self) -> None:
        array = self.require_array()
        slots = sorted(array.written)[self._scrub_cursor : self._scrub_cursor + 8]
        self._scrub_cursor = self._scrub_cursor + 8 if len(slots) == 8 else 0
        with self.operation():
            for slot in slots:
                await array.check_slot(slot, repair=True)

    async def _auto_replace(self, array: StripeArray, position: int, pool_id: PoolId) -> None:
        """``devices`` rule 4: replace the member away too long onto a spare on a live node."""
        name = f"{self.info.pool_name}_r{array.recovery.generation + 1}_{position}"
        spare: PoolId | None = None
        try:
            size = array.slots * self.chunk
            req, spare = await self.devices.make_spare(array, name, size, replacing=position)
            await self.replace_member(str(pool_id), req)
        except ApiError as exc:
            log.warning("array %s: no automatic replacement yet: %s", self.info.pool_name, exc)
            if spare is not None:
                await self.give_back(spare)  # ``devices`` rule 4: no spare left unused
            return
        log.warning(
            "array %s: member %s replaced by %s on node %s after %gs away",
            self.info.pool_name,
            pool_id,
            name,
            req.node_id or self.runtime.node_id,
            self.auto_replace_s,
        )

    async def wait_recovered(self, poll_s: float = 0.01) -> None:
        """Return once no member is recovering (tests and benchmarks; polls the roster)."""
        array = self.require_array()
        while any(array.member(p).state == DeviceState.RECOVERING for p in array.positions()):
            await trio.sleep(poll_s)

    async def verify(self) -> JSON:
        """Check every slot: unwritten slots are zeros by definition, written ones are read."""
        array = self.require_array()
        unreadable = mismatches = 0
        for slot in sorted(array.written):
            readable, consistent = await self._run_op(
                "verify", array.stripe_bytes / 1024, partial(array.check_slot, slot)
            )
            unreadable += not readable
            mismatches += not consistent
        return {
            "slots_checked": array.slots,
            "unreadable_slots": unreadable,
            "parity_mismatches": mismatches,
        }

    async def monitor(self, query: str, params: Mapping[str, str]) -> Any:
        if query == "verify":
            return await self.verify()
        return await super().monitor(query, params)

    def stats(self) -> JSON:
        a = self.array
        if a is None:
            return {"pool_name": self.info.pool_name, "max_failures": self.max_failures}
        members = [
            {
                "role": "data" if p < a.k else "parity",
                "index": p if p < a.k else p - a.k,
                "pool_name": a.member(p).pool_name,
                "pool_id": str(a.member(p).pool_id),
                "node_id": self.runtime.node_id
                if a.member(p).node_id is None
                else a.member(p).node_id,
                "state": str(a.member(p).state),
                "recovering": a.member(p).state == DeviceState.RECOVERING,
            }
            for p in a.positions()
        ]
        count = {str(s): sum(m["state"] == s for m in members) for s in DeviceState}
        return {
            "pool_name": self.info.pool_name,
            "max_failures": self.max_failures,
            "data_count": a.k,
            "parity_level": a.m,
            "total_slots": a.slots,
            "total_capacity": a.capacity,
            "remaining_capacity": self.allocator.remaining,
            "written_slots": len(a.written),
            "dirty_slots": len(a.dirty),
            **self._recovery_stats(a, count),
            "faulty_members": count["faulty"],
            "active_members": count["active"],
            "recovering_members": count["recovering"],
            "removed_members": count["removed"],
            "members": members,
            **self.meter.snapshot().to_json(),
        }

    def _recovery_stats(self, a: StripeArray, count: Mapping[str, int]) -> JSON:
        """The last (or current) recovery run, in slots; ``completed + in_flight + queued ==
        total``; the rate in slots per second over the run, the time left at that rate."""
        rec = a.recovery
        queued = max(0, rec.total - rec.completed - rec.in_flight)
        started, ended = self._run_started, self._run_ended
        elapsed = 0.0 if started is None else (ended or trio.current_time()) - started
        rate = rec.completed / elapsed if elapsed > 0 and rec.completed else 0.0
        if rec.active:
            state = "recovering"
        elif count["recovering"]:
            state = "starting"  # a member waits for the next recover tick
        elif count["faulty"] or count["removed"]:
            state = "degraded"  # a member is out of service and nothing recovers onto it
        else:
            state = "complete" if rec.total else "idle"
        return {
            "recovery_state": state,
            "recovery_active": int(rec.active),
            "recovery_ops_total": rec.total,
            "recovery_ops_completed": rec.completed,
            "recovery_ops_in_flight": rec.in_flight,
            "recovery_ops_queued": queued,
            "recovery_ops_remaining": rec.remaining,
            "recovery_written_slots": rec.rebuilt,
            "recovery_elapsed_s": round(elapsed, 3),
            "recovery_rate_slots_per_s": round(rate, 2),
            "recovery_eta_s": round((rec.remaining / rate), 1) if rec.active and rate else None,
            "recovery_pace_s": self.pace_s,
        }

    async def workload_step(self, rng: random.Random, io_size: int) -> None:
        size = max(1, min(io_size, self.capacity))
        try:
            extent = await self.allocate(size)
        except NoSpace:
            return
        try:
            await self.write(extent.offset, rng.randbytes(size))
            await self.read(extent.offset, size)
        finally:
            await self.free(extent)
