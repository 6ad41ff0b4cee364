"""rt_bdev: block devices that really hold bytes (``ram``, ``file``, ``noop``; ``hbm`` and
``pinned`` behave as ``ram``).

Rules:
1. Every allocation, read and write is a task of the device's pool, so the pool's cost model
   learns from real work; task sizes are KiB. Allocations and reads and writes over
   ``INLINE_BYTES`` run on the node's workers (``runtime.workers.run``); smaller reads and
   writes run in the caller's task, measured and taught the same way. A worker is a trio task
   in the same thread, so the hop bought no overlap and cost about 20 µs: five 4 KiB copies.
   They are counted in the worker rows' ``num_tasks_processed`` all the same
   (``WorkerPool.count_inline``).
2. The ``stats`` monitor answers the reference's keys in its order, from measured figures.
3. Other modules use the device through the ``BlockStore`` interface (allocate/free/read/write).
4. A ``file`` device is a sparse file in the node's data folder, named after its pool id.
5. A capacity is an int or size text as written (``bdev_config.size_bytes``: no spaces, ASCII
   digits) of at most ``MAX_CAPACITY`` bytes; a ``file`` device at most the free space of
   the data folder, a memory device at most the host's memory. When the store cannot be made
   or an I/O fails (``OSError``), the answer is an ``ApiError`` that says so, never a 500.
6. ``made_for`` (optional) names the writer of a peer's array the device was made for: 1 to
   ``MAX_WRITER`` printable ASCII characters, no space. Only that array may give the device
   back, once nothing is allocated on it (``remote`` rule 6).
7. A disk fault (``rt_cluster disk``) delays, fails or fills the device: every allocation,
   free, read and write passes ``DeviceFaults`` first (``diskfaults``); a healthy device pays
   one attribute test for it. A peer's write is admitted against its fence after the delay
   (``remote`` rule 2), so a write that waited out its owner's bound lands over nothing newer.
"""

from __future__ import annotations

import errno
import logging
import random
import secrets
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import trio

from cluster.api import (
    ApiParam,
    FormField,
    FormSpec,
    HttpModule,
    apidoc,
    pool_id_field,
    pool_name_field,
)
from cluster.ground.elapsed import perf_ns
from cluster.ground.errors import BadRequest, Conflict, ValidationFailed
from cluster.ground.parse import int_value
from cluster.runtime import BlockCall, DiskFault
from cluster.storage import (
    Allocator,
    Buffer,
    Extent,
    IoMeter,
    NoSpace,
    Store,
    export_chunks,
    import_chunks,
    open_store,
    parse_size,
)

from .bdev_config import (
    BDEV_TYPES,
    BLOCK,
    MAX_CAPACITY,
    bdev_config_errors,
    bdev_type_of,
    made_for_errors,
)
from .diskfaults import DeviceFaults
from .extents import ExtentDevice
from .remote import serve_block

if TYPE_CHECKING:
    from cluster.storage.erasure import Bytes as Rows

__all__ = ["INLINE_BYTES", "BdevContainer", "BdevModule"]

log = logging.getLogger(__name__)
JSON = dict[str, Any]
T = TypeVar("T")
SIZE_ERRNOS = (errno.EFBIG, errno.ENOSPC, errno.ENOMEM, errno.EINVAL, errno.EDQUOT)
INLINE_BYTES = 1 << 20  # reads and writes up to this size run in the caller's task (rule 1)
YIELD_NS = 1_000_000  # ... which yields to other tasks at least this often (nanoseconds)


def _io_error(what: str, exc: OSError) -> Conflict:
    """An ``OSError`` of the device, answered as a ``Conflict`` (409)."""
    return Conflict(f"{what} failed: {exc.strerror or exc}")


def _offset(value: Any) -> int:
    """An offset or a length of a migrated state: an int (not a bool, a float or text)."""
    if isinstance(value, str):
        raise ValueError(f"expected an integer, got {value[:40]!r}")
    return int_value(value, low=0, high=MAX_CAPACITY, what="offset")


class BdevContainer(ExtentDevice):
    """One block device: its store, its allocator and its measured I/O."""

    methods = ("allocate", "free", "read", "write")
    is_block_device = True

    def __post_init__(self) -> None:
        super().__post_init__()
        self.bdev_type = bdev_type_of(self.config)
        self._capacity = parse_size(self.config.get("capacity", 0))
        self.allocator = Allocator(self._capacity, BLOCK)
        self.meter = IoMeter()
        self.store: Store | None = None
        self.instance = secrets.token_hex(8)  # this process's copy of the device (``remote``)
        self.made_for = str(self.config.get("made_for", ""))  # rule 6
        self.fences: dict[str, int] = {}
        noun = f"block device {self.info.pool_id}"
        self.faults = DeviceFaults(noun, f"disk faults of {noun}", BLOCK)  # rule 7
        self._yielded_ns = 0  # perf_counter_ns of the last yield of an I/O run inline
        self._done_ns = 0  # perf_counter_ns of the end of the last I/O run inline

    async def serve_block(self, call: BlockCall) -> Any:
        """A peer's array uses this device as a member (``remote`` rule 1)."""
        return await serve_block(self, call)

    async def start(self) -> None:
        path = self.runtime.settings.data_dir / f"bdev-{self.info.pool_id}.img"
        try:
            self.store = open_store(self.bdev_type, self._capacity, path)
        except (OSError, OverflowError, MemoryError) as exc:
            code = getattr(exc, "errno", None)
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            if code in SIZE_ERRNOS or not isinstance(exc, OSError):
                raise ValidationFailed(
                    {
                        "capacity": f"a {self.bdev_type} device of {self._capacity} bytes cannot "
                        f"be made here: {reason}"
                    }
                ) from None
            raise BadRequest(
                f"cannot create the {self.bdev_type} device at {path}: {reason}"
            ) from None

    async def close(self) -> None:
        await super().close()
        if self.store is not None:
            self.store.close()

    # -- BlockStore -------------------------------------------------------------------------

    @property
    def capacity(self) -> int:
        return self._capacity

    def _open_store(self) -> Store:
        self.ensure_open()
        if self.store is None:
            raise BadRequest(f"block device {self.info.pool_id} is not started")
        return self.store

    @property
    def disk_fault(self) -> DiskFault:
        return self.faults.fault

    def set_disk_fault(self, fault: DiskFault) -> None:
        self.faults.set(fault)  # rule 7

    async def allocate(self, size: int) -> Extent:
        if self.faults.on:
            await self.faults.admit("allocate", 0, size)
        return await super().allocate(size)

    async def free(self, extent: Extent) -> None:
        if self.faults.on:
            await self.faults.admit("free", extent.offset, extent.size)
        await super().free(extent)

    async def read(self, offset: int, size: int) -> bytes:
        self.check_range(offset, size)
        if self.faults.on:
            await self.faults.admit("read", offset, size)
        if size > INLINE_BYTES:
            return await self._run_io("read", size, self._read, offset, size)
        await trio.lowlevel.checkpoint_if_cancelled()  # _run_io's inline path, one frame less
        data = self._inline("read", size, self._read, offset, size)
        if self._yield_due():
            await trio.lowlevel.cancel_shielded_checkpoint()
        return data

    async def read_into(self, offset: int, out: memoryview) -> None:
        self.check_range(offset, len(out))
        if self.faults.on:
            await self.faults.admit("read", offset, len(out))
        await self._run_io("read", len(out), self._read_into, offset, out)

    async def write(self, offset: int, data: Buffer) -> None:
        self.check_range(offset, len(data))
        if self.faults.on:
            await self.faults.admit("write", offset, len(data))
        await self._run_io("write", len(data), self._write, offset, data)
        self.faults.footprint.add(offset, len(data))

    async def write_admitted(self, offset: int, data: Buffer, admit: Callable[[], None]) -> None:
        self.check_range(offset, len(data))
        if self.faults.on:
            await self.faults.wait()  # rule 7: the fence is judged once the delay is over
        admit()
        if self.faults.on:
            self.faults.judge("write", offset, len(data))
        await self._run_io("write", len(data), self._write, offset, data)
        self.faults.footprint.add(offset, len(data))

    async def write_rows(self, offset: int, rows: Rows) -> None:
        self.check_range(offset, rows.size)
        if self.faults.on:
            await self.faults.admit("write", offset, rows.size)
        await self._run_io("write", rows.size, self._write_rows, offset, rows)
        self.faults.footprint.add(offset, rows.size)

    # The store's own calls, an OSError as a refusal naming the device (bound methods, not
    # closures made per call: an inline read of 4 KiB costs a few µs in all).

    def _read(self, offset: int, size: int) -> bytes:
        try:
            return self._open_store().read(offset, size)
        except OSError as exc:
            raise _io_error(f"read of block device {self.info.pool_id}", exc) from None

    def _read_into(self, offset: int, out: memoryview) -> None:
        try:
            self._open_store().read_into(offset, out)
        except OSError as exc:
            raise _io_error(f"read of block device {self.info.pool_id}", exc) from None

    def _write(self, offset: int, data: Buffer) -> None:
        try:
            self._open_store().write(offset, data)
        except OSError as exc:
            raise _io_error(f"write of block device {self.info.pool_id}", exc) from None

    def _write_rows(self, offset: int, rows: Rows) -> None:
        try:
            self._open_store().write_rows(offset, rows)
        except OSError as exc:
            raise _io_error(f"write of block device {self.info.pool_id}", exc) from None

    async def _run_io(self, method: str, size: int, op: Callable[..., T], *args: Any) -> T:
        """``op(*args)`` (a read or write of ``size`` bytes) as a task of this pool, measured by
        the meter. Up to ``INLINE_BYTES`` it runs in the caller's task (rule 1,
        ``WorkerPool.count_inline``); the caller still yields at least every ``YIELD_NS``, and a
        cancelled caller is cancelled here."""
        if size > INLINE_BYTES:

            def task() -> T:
                t0 = perf_ns()
                result = op(*args)
                self.meter.record(method, size, (perf_ns() - t0) / 1e9)
                return result

            return await self.runtime.workers.run(self.info.pool_id, method, size / 1024, task)
        await trio.lowlevel.checkpoint_if_cancelled()
        result = self._inline(method, size, op, *args)
        if self._yield_due():
            await trio.lowlevel.cancel_shielded_checkpoint()
        return result

    def _inline(self, method: str, size: int, op: Callable[..., T], *args: Any) -> T:
        """``op(*args)`` run here, measured and counted (``_run_io``'s inline path)."""
        t0 = perf_ns()
        result = op(*args)
        t1 = self._done_ns = perf_ns()
        self.meter.record(method, size, (t1 - t0) / 1e9)
        self.runtime.workers.count_inline(
            self.info.pool_id, method, size / 1024, (t1 - t0) / 1e3, self.cost
        )
        return result

    def _yield_due(self) -> bool:
        """Has the caller run ``YIELD_NS`` since it last yielded (rule 1)?"""
        if self._done_ns - self._yielded_ns > YIELD_NS:
            self._yielded_ns = self._done_ns
            return True
        return False

    # -- monitor, workload, migration -------------------------------------------------------

    def stats(self) -> JSON:
        return {
            "pool_name": self.info.pool_name,
            "bdev_type": self.bdev_type,
            "total_capacity": self._capacity,
            "remaining_capacity": self.allocator.remaining,
            **self.meter.snapshot().to_json(),
        }

    async def workload_step(self, rng: random.Random, io_size: int) -> None:
        """Allocate, write, read back and free a scratch extent; read only when full."""
        size = max(1, min(io_size, self._capacity))
        try:
            extent = await self.allocate(size)
        except NoSpace:
            offset = rng.randrange(0, self._capacity - size + 1) // BLOCK * BLOCK
            await self.read(offset, size)
            return
        try:
            await self.write(extent.offset, rng.randbytes(size))
            await self.read(extent.offset, size)
        finally:
            await self.free(extent)

    def export_state(self) -> JSON:
        state: JSON = {"config": dict(self.config), "free_runs": self.allocator.free_runs()}
        if self.store is not None and self.bdev_type != "noop":
            state["chunks"] = [[o, c] for o, c in export_chunks(self.store)]
        return state

    async def import_state(self, state: Mapping[str, Any]) -> None:
        runs = state.get("free_runs")
        if isinstance(runs, list):
            self.allocator.load_free_runs((_offset(o), _offset(s)) for o, s in runs)
        chunks = state.get("chunks")
        if self.store is not None and isinstance(chunks, list):
            import_chunks(self.store, self._imported(chunks))

    def _imported(self, chunks: list[Any]) -> Iterator[tuple[int, bytes]]:
        """An imported state's chunks (the exported 64 KiB runs that hold data), each counted
        written: the moved device's present use, for ``full``."""
        for o, c in chunks:
            # memoryview: a chunk given as a number n is refused, not read as bytes(n) of zeros
            offset, data = _offset(o), bytes(memoryview(c))
            yield offset, data
            self.faults.footprint.add(offset, len(data))


class BdevModule(HttpModule):
    mod_name = "rt_bdev"
    title = "Block device"
    container_class = BdevContainer
    suggest_base = 800
    config_keys = ("bdev_type", "capacity", "made_for")
    api_fields = {
        "capacity": ApiParam("capacity", apidoc.SIZE, "bytes, e.g. 16M (powers of 1024)", True),
        "bdev_type": ApiParam("bdev_type", apidoc.one_of(*BDEV_TYPES), "the store (ram)"),
    }

    def create_form(self) -> FormSpec:
        return FormSpec(
            self.mod_name,
            self.title,
            (
                pool_name_field(),
                pool_id_field(self.suggestion()),
                FormField(
                    "bdev_type",
                    "Type",
                    "select",
                    True,
                    "ram",
                    BDEV_TYPES,
                    help="ram, hbm and pinned hold bytes in memory; file a sparse file in the "
                    "node's data folder; noop discards writes",
                ),
                FormField(
                    "capacity",
                    "Capacity",
                    required=True,
                    placeholder="16M",
                    help="number with optional K/M/G/T/P suffix (powers of 1024), e.g. 512MB, 1GiB",
                ),
            ),
        )

    def form_to_compose(self, params: Mapping[str, str]) -> tuple[JSON, dict[str, str]]:
        return {
            "bdev_type": params.get("bdev_type", "") or "ram",
            "capacity": params.get("capacity", ""),
        }, {}

    def validate_config(self, config: Mapping[str, Any]) -> dict[str, str]:
        errors = bdev_config_errors(config, self.runtime.settings.data_dir)
        return {**errors, **made_for_errors(config)}

    def demo_entries(self) -> list[JSON]:
        entry = {"mod_name": self.mod_name, "bdev_type": "ram"}
        return [
            {**entry, "pool_name": "demo_ram", "capacity": "2M"},
            {**entry, "pool_name": "demo_file", "bdev_type": "file", "capacity": "2M"},
            *({**entry, "pool_name": f"demo_m{i}", "capacity": "512K"} for i in range(4)),
        ]
