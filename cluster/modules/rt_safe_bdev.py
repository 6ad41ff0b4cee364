"""rt_safe_bdev: an erasure-coded array over rt_bdev pools (XOR for one parity member,
Reed-Solomon for more), with member management and recovery.

Rules:
1. The data path lives in ``cluster.storage.array``; this module wires it to the runtime:
   logical reads and writes are tasks of the array's pool whose member I/O are subtasks of the
   members' pools; each rebuilt slot is a ``recover`` task.
2. Members are ordinary rt_bdev pools; ``members`` of the create form are the data members and
   ``max_failures`` parity members are created next to them (``<pool>_p<j>``, ids from 900)
   unless ``parity_members`` names existing ones.
3. Two periodic tasks per array: ``recover`` (runs a pending rebuild) and ``scrub`` (checks a
   few written slots, repairs parity of dirty ones). After destroy they keep retrying.
4. An action that would leave more members out of service than the parity level is refused
   (409); nothing is changed by a refused or invalid request.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

import trio

from cluster.errors import BadRequest, Conflict, NotFound, ValidationFailed
from cluster.ids import PoolId
from cluster.runtime.module import (
    Container,
    FormField,
    FormSpec,
    Module,
    ModuleRoute,
    RouteCall,
    pool_id_field,
    pool_name_field,
)
from cluster.storage.alloc import Allocator, Extent, NoSpace
from cluster.storage.array import ArrayMember, MemberState, StripeArray
from cluster.storage.blockdev import BlockStore
from cluster.storage.iometer import IoMeter, IoSnapshot
from cluster.storage.sizes import parse_size

from .members import MemberRequest, find_block_store, member_names, resolve_member
from .rt_bdev import BdevContainer

__all__ = ["SafeBdevContainer", "SafeBdevModule"]

log = logging.getLogger(__name__)
JSON = dict[str, Any]
DEFAULT_CHUNK = 4096


class SafeBdevContainer(Container, BlockStore):
    methods = ("read", "write", "allocate", "free", "recover", "scrub", "verify")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.max_failures = int(self.config.get("max_failures", 1))
        self.chunk = parse_size(self.config.get("chunk_size", DEFAULT_CHUNK))
        self.meter = IoMeter()
        self.array: StripeArray | None = None
        self.allocator = Allocator(0, self.chunk)
        self._scrub_cursor = 0

    # -- composition ------------------------------------------------------------------------

    async def start(self) -> None:
        data = [self._bdev(n) for n in member_names(self.config.get("members"))]
        parity = [self._bdev(n) for n in member_names(self.config.get("parity_members"))]
        slots = min(b.largest_free for b in data + parity) // self.chunk if data else 0
        if slots <= 0:
            raise Conflict(f"members of {self.info.pool_name} have no free space")
        for j in range(len(parity), self.max_failures):
            parity.append(await self._create_member(f"{self.info.pool_name}_p{j}", data[0], slots))
        members = [await self._claim(b, slots) for b in data + parity]
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
        workers.add_periodic(
            pid, "recover", float(self.config.get("recover_period_s", 0.2)), self._recover_tick
        )
        workers.add_periodic(
            pid, "scrub", float(self.config.get("scrub_period_s", 2.0)), self._scrub_tick
        )

    def _bdev(self, name: str) -> BdevContainer:
        found = self.runtime.pools.by_name(name, "rt_bdev")
        if not isinstance(found, BdevContainer):
            raise NotFound(f"no rt_bdev pool named '{name}'")
        return found

    async def _create_member(self, name: str, like: BdevContainer, slots: int) -> BdevContainer:
        bdev_type = like.bdev_type if like.bdev_type in ("ram", "file") else "ram"
        req = MemberRequest(name, str(slots * self.chunk), bdev_type)
        return await resolve_member(self.runtime, req, slots * self.chunk, self._member_of)

    async def _claim(self, bdev: BdevContainer, slots: int) -> ArrayMember:
        extent = await bdev.allocate(slots * self.chunk)
        return ArrayMember(bdev.info.pool_name, bdev.info.pool_id, extent.offset)

    def _open_member(self, pool_id: PoolId) -> BlockStore | None:
        return find_block_store(self.runtime, pool_id)

    async def _run_op(self, method: str, size_kib: float, fn: Callable[[], Awaitable[Any]]) -> Any:
        async def task() -> Any:
            self.ensure_open()
            return await fn()

        return await self.runtime.workers.run(self.info.pool_id, method, size_kib, task)

    def _require_array(self) -> StripeArray:
        self.ensure_open()
        if self.array is None:
            raise Conflict(f"array {self.info.pool_name} is not started")
        return self.array

    # -- BlockStore -------------------------------------------------------------------------

    @property
    def capacity(self) -> int:
        return self.array.capacity if self.array else 0

    @property
    def remaining_capacity(self) -> int:
        return self.allocator.remaining

    @property
    def largest_free(self) -> int:
        return self.allocator.largest_free

    def io_snapshot(self) -> IoSnapshot:
        return self.meter.snapshot()

    async def allocate(self, size: int) -> Extent:
        def task() -> Extent:
            self.ensure_open()
            return self.allocator.allocate(size)

        return await self.runtime.workers.run(self.info.pool_id, "allocate", size / 1024, task)

    async def free(self, extent: Extent) -> None:
        def task() -> None:
            self.ensure_open()
            self.allocator.free(extent)

        await self.runtime.workers.run(self.info.pool_id, "free", extent.size / 1024, task)

    def _check_range(self, offset: int, size: int) -> None:
        if offset < 0 or size < 0 or offset + size > self.capacity:
            raise BadRequest(
                f"{size} bytes at offset {offset} are outside array {self.info.pool_id} "
                f"(capacity {self.capacity})"
            )

    async def read(self, offset: int, size: int) -> bytes:
        self._check_range(offset, size)

        async def io() -> bytes:
            t0 = time.perf_counter()
            data = await self._require_array().read(offset, size)
            self.meter.record("read", size, time.perf_counter() - t0)
            return data

        return await self._run_op("read", size / 1024, io)  # type: ignore[no-any-return]

    async def write(self, offset: int, data: bytes) -> None:
        self._check_range(offset, len(data))

        async def io() -> None:
            t0 = time.perf_counter()
            await self._require_array().write(offset, data)
            self.meter.record("write", len(data), time.perf_counter() - t0)

        await self._run_op("write", len(data) / 1024, io)

    # -- periodic tasks, checks -------------------------------------------------------------

    async def _recover_tick(self) -> None:
        array = self._require_array()
        if any(array.member(p).state == MemberState.RECOVERING for p in array.positions()):
            await array.recover()

    async def _scrub_tick(self) -> None:
        array = self._require_array()
        slots = sorted(array.written)[self._scrub_cursor : self._scrub_cursor + 8]
        self._scrub_cursor = self._scrub_cursor + 8 if len(slots) == 8 else 0
        for slot in slots:
            await array.check_slot(slot, repair=True)

    async def wait_recovered(self, poll_s: float = 0.01) -> None:
        """Return once no member is recovering (tests and benchmarks; polls the roster)."""
        array = self._require_array()
        while any(array.member(p).state == MemberState.RECOVERING for p in array.positions()):
            await trio.sleep(poll_s)

    async def verify(self) -> JSON:
        """Check every slot: unwritten slots are zeros by definition, written ones are read."""
        array = self._require_array()
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
        rec = a.recovery
        members = [
            {
                "role": "data" if p < a.k else "parity",
                "index": p if p < a.k else p - a.k,
                "pool_name": a.member(p).pool_name,
                "pool_id": str(a.member(p).pool_id),
                "state": str(a.member(p).state),
                "recovering": a.member(p).state == MemberState.RECOVERING,
            }
            for p in a.positions()
        ]
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
            "recovery_active": int(rec.active),
            "recovery_ops_total": rec.total,
            "recovery_ops_completed": rec.completed,
            "recovery_ops_in_flight": rec.in_flight,
            "recovery_ops_remaining": rec.remaining,
            "faulty_members": sum(m["state"] == "faulty" for m in members),
            "members": members,
            **self.meter.snapshot().to_json(),
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

    # -- member management ------------------------------------------------------------------

    async def add_member(self, req: MemberRequest, as_parity: bool) -> JSON:
        array = self._require_array()
        bdev = await resolve_member(self.runtime, req, array.slots * self.chunk, self._member_of)
        member = await self._claim(bdev, array.slots)
        if as_parity:
            array.add_parity(member)
            self.max_failures = max(self.max_failures, array.m)
        else:
            try:
                array.add_data(member)
            except Conflict:
                await bdev.free(Extent(member.base, array.slots * self.chunk))
                raise
            self.allocator.grow(array.capacity)
        return {
            "ok": True,
            "member_name": bdev.info.pool_name,
            "member_pool_id": str(bdev.info.pool_id),
            "as_parity": as_parity,
        }

    def _member_of(self, pool_id: PoolId) -> str | None:
        return member_of(self.runtime, pool_id)

    def _position(self, field: str, text: str) -> int:
        array = self._require_array()
        pool_id = PoolId.parse(text)
        position = array.position_of(pool_id)
        if position is None:
            raise NotFound(f"no member with pool id {pool_id} in array {self.info.pool_name}")
        return position

    def _check_tolerance(self, extra_out: int, what: str) -> None:
        array = self._require_array()
        if array.out_of_service() + extra_out > array.m:
            raise Conflict(
                f"{what} would leave {array.out_of_service() + extra_out} members out of service; "
                f"array {self.info.pool_name} tolerates {array.m}"
            )

    async def remove_member(self, member_pool_id: str, was_faulty: bool) -> JSON:
        array = self._require_array()
        try:
            position = self._position("member_pool_id", member_pool_id)
        except BadRequest as exc:
            if isinstance(exc, NotFound):
                raise
            raise BadRequest(f"bad member_pool_id '{member_pool_id}': {exc.message}") from None
        active = array.member(position).state == MemberState.ACTIVE
        self._check_tolerance(int(active), f"removing {array.member(position).pool_name}")
        array.set_state(position, MemberState.FAULTY if was_faulty else MemberState.REMOVED)
        return {"ok": True, "member_pool_id": member_pool_id}

    async def replace_member(self, failed_pool_id: str, req: MemberRequest) -> JSON:
        array = self._require_array()
        errors: dict[str, str] = {}
        position = None
        try:
            position = self._position("failed_pool_id", failed_pool_id)
        except NotFound as exc:
            errors["failed_pool_id"] = exc.message
        except BadRequest as exc:
            errors["failed_pool_id"] = f"unparseable: {exc.message}"
        if position is None:
            raise ValidationFailed(errors)
        old = array.member(position)
        self._check_tolerance(int(old.state == MemberState.ACTIVE), f"replacing {old.pool_name}")
        bdev = await resolve_member(self.runtime, req, array.slots * self.chunk, self._member_of)
        member = await self._claim(bdev, array.slots)
        array.set_member(
            position,
            ArrayMember(member.pool_name, member.pool_id, member.base, MemberState.RECOVERING),
        )
        array.recovery.generation += 1
        gone = find_block_store(self.runtime, old.pool_id)
        if gone is not None:
            try:
                await gone.free(Extent(old.base, array.slots * self.chunk))
            except Exception as exc:  # the old device may be broken: its space is its own
                log.info(
                    "array %s: could not free %s on %s: %s",
                    self.info.pool_name,
                    old.base,
                    old.pool_name,
                    exc,
                )
        return {
            "ok": True,
            "failed_pool_id": failed_pool_id,
            "member_name": bdev.info.pool_name,
            "member_pool_id": str(bdev.info.pool_id),
        }


def member_of(runtime: Any, pool_id: PoolId) -> str | None:
    """The name of the open array ``pool_id`` is a member of, if any."""
    for c in runtime.pools.of_module("rt_safe_bdev"):
        array = getattr(c, "array", None)
        if (
            isinstance(array, StripeArray)
            and not c.closed
            and array.position_of(pool_id) is not None
        ):
            return str(c.info.pool_name)
    return None


def _int_field(raw: Any, low: int, high: int) -> int | None:
    try:
        value = int(str(raw).strip())
    except ValueError:
        return None
    return value if low <= value <= high else None


class SafeBdevModule(Module):
    mod_name = "rt_safe_bdev"
    title = "Safe block device (EC array)"
    container_class = SafeBdevContainer
    suggest_base = 850

    def create_form(self) -> FormSpec:
        return FormSpec(
            self.mod_name,
            self.title,
            (
                pool_name_field(),
                pool_id_field(self.suggestion()),
                FormField(
                    "max_failures",
                    "Max failures",
                    default="1",
                    help="simultaneous member failures the array survives",
                ),
                FormField(
                    "members",
                    "Data members",
                    required=True,
                    placeholder="bdev_a, bdev_b, bdev_c",
                    help="comma-separated names of EXISTING bdev pools (create them with the "
                    "Block device form first); max_failures parity members are created for them",
                ),
            ),
        )

    def form_to_compose(self, params: Mapping[str, str]) -> tuple[JSON, dict[str, str]]:
        return {
            "members": params.get("members", ""),
            "max_failures": params.get("max_failures", "").strip() or "1",
        }, {}

    def _member_errors(self, names: list[str], chunk: int) -> list[str]:
        msgs: list[str] = []
        for i, name in enumerate(names):
            found = self.runtime.pools.by_name(name)
            if name in names[:i]:
                msgs.append(f"'{name}' is listed twice")
            elif found is None:
                msgs.append(f"no pool named '{name}' exists")
            elif not isinstance(found, BdevContainer) or found.closed:
                msgs.append(f"'{name}' exists but is not a rt_bdev pool")
            elif (array := member_of(self.runtime, found.info.pool_id)) is not None:
                msgs.append(f"'{name}' is a member of array '{array}' already")
            elif found.largest_free < chunk:
                msgs.append(f"'{name}' has no free space left")
        return msgs

    def validate_config(self, config: Mapping[str, Any]) -> dict[str, str]:
        errors: dict[str, str] = {}
        max_failures = _int_field(config.get("max_failures", 1), 0, 64)
        if max_failures is None:
            errors["max_failures"] = "must be a whole number from 0 to 64"
        try:
            chunk = parse_size(config.get("chunk_size", DEFAULT_CHUNK))
        except ValueError as exc:
            errors["chunk_size"] = str(exc)
            chunk = DEFAULT_CHUNK
        if chunk < 512 or chunk > 1 << 20 or chunk & (chunk - 1):
            errors["chunk_size"] = "must be a power of two from 512 bytes to 1M"
        names = member_names(config.get("members"))
        parity = member_names(config.get("parity_members"))
        if msgs := self._member_errors(names, chunk):
            errors["members"] = "; ".join(msgs)
        elif not names:
            errors["members"] = "at least one existing bdev pool name is required"
        if msgs := self._member_errors(parity, chunk):
            errors["parity_members"] = "; ".join(msgs)
        elif set(parity) & set(names):
            errors["parity_members"] = "a pool cannot be a data and a parity member"
        elif max_failures is not None and len(parity) > max_failures:
            errors["parity_members"] = f"more parity members than max_failures ({max_failures})"
        for key in ("recover_period_s", "scrub_period_s"):
            try:
                if float(config.get(key, 1.0)) <= 0:
                    raise ValueError
            except (TypeError, ValueError):
                errors[key] = "must be a number of seconds > 0"
        if not errors and max_failures is not None and len(names) <= max_failures:
            errors["max_failures"] = "needs more data members than tolerated failures"
        return errors

    def create_result(self, body: JSON, config: Mapping[str, Any]) -> JSON:
        return {**body, "data_members": len(member_names(config.get("members")))}

    def action_routes(self) -> list[ModuleRoute]:
        return [
            ModuleRoute(
                "POST",
                "{pool}/add_member",
                self._add_member,
                "Add a data or parity member bdev (fields: member_name[, capacity, bdev_type, "
                "node_id, as_parity])",
            ),
            ModuleRoute(
                "POST",
                "{pool}/replace_member",
                self._replace_member,
                "Replace a failed member with a fresh bdev and recover onto it (fields: "
                "failed_pool_id, member_name, capacity[, bdev_type, node_id])",
            ),
            ModuleRoute(
                "POST",
                "{pool}/remove_member",
                self._remove_member,
                "Take a member out of service (fields: member_pool_id[, was_faulty])",
            ),
        ]

    async def _add_member(self, call: RouteCall) -> JSON:
        array = self.pool_of(call, SafeBdevContainer)
        as_parity = call.params.get("as_parity", "0") == "1"
        return await array.add_member(MemberRequest.from_params(call.params), as_parity)

    async def _replace_member(self, call: RouteCall) -> JSON:
        array = self.pool_of(call, SafeBdevContainer)
        failed = call.params.get("failed_pool_id", "")
        return await array.replace_member(failed, MemberRequest.from_params(call.params))

    async def _remove_member(self, call: RouteCall) -> JSON:
        array = self.pool_of(call, SafeBdevContainer)
        member = call.require("member_pool_id")
        return await array.remove_member(member, call.params.get("was_faulty", "0") == "1")

    def demo_entries(self) -> list[JSON]:
        return [
            {
                "mod_name": self.mod_name,
                "pool_name": "demo_array",
                "members": "demo_m0,demo_m1,demo_m2",
                "parity_members": "demo_m3",
                "max_failures": 1,
            }
        ]
