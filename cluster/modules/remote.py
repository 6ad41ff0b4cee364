"""Array members on other nodes: the block device a peer lends (``serve_block``) and the one
an array uses in its place (``RemoteStore``), one ``Block`` frame of the node RPC per call.

Rules:
1. Only an ``rt_bdev`` device serves other nodes (``Container.serve_block``), and only six
   operations (``cluster.runtime.BLOCK_OPS``):
   ``info``, ``allocate``, ``free``, ``read``, ``write``, ``destroy`` (rule 6). Every field is
   checked before the device is touched: a writer name is at most ``MAX_WRITER`` characters;
   a read or write moves at most ``BLOCK_IO`` bytes and lies inside the device; a free names
   an aligned, allocated extent inside it (a double free is refused, never merged). A refusal
   is a ``BadRequest`` (400), and nothing changed.
2. Writes are fenced: each carries its array's name (``writer``) and an epoch, raised when the
   member comes back from being away. A device refuses a write below the highest epoch it saw
   from that writer, so a write that lay in a paused node's socket, long given up by the
   array, cannot land over the resync that followed (Conflict, 409). A device that delays
   its writes (a disk fault) judges the fence again once the delay is over, when the bytes
   land (``ExtentDevice.write_admitted``).
3. A device's ``instance`` is drawn when it starts: the same pool id with another instance is
   a device made again (its node restarted), whose blocks and allocations are gone.
4. A member is written ``name@node`` in an array's ``members`` (``m1@1``: the rt_bdev pool
   ``m1`` on node 1); a name without ``@`` is this node's. ``split_member`` reads it.
5. ``RemoteStore`` is a ``BlockStore``: the array reads and writes it as it does a local
   device, and every call is bounded by the runtime's forward timeout (5 s). A peer that is
   down, cut off or silent is a ``PeerUnavailable``, which the array takes as a failed I/O
   (the member turns ``faulty``).
6. A device an array makes on a peer is composed there with ``made_for``: the array's writer
   name. ``destroy`` gives it back: the device destroys itself only when the call's writer is
   the one it was made for and nothing is allocated on it (no region of any array, here or
   elsewhere); otherwise it refuses (409) and nothing changes. So a peer can destroy only a
   device made for its own array, once free, never another pool of the node.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from cluster.ground.elapsed import perf_ns, wall_ns
from cluster.ground.errors import ApiError, BadRequest, Conflict, PeerUnreachable
from cluster.ground.ids import PoolId, parse_node_id
from cluster.runtime import BLOCK_IO, BLOCK_OPS, MAX_WRITER, BlockCall, ModuleContext
from cluster.storage import BlockStore, Buffer, Extent, IoMeter, IoSnapshot

from .extents import ExtentDevice

__all__ = ["PROBE_BYTES", "RemoteStore", "serve_block", "split_member"]


def split_member(text: str) -> tuple[str, int | None]:
    """``name@node`` -> (name, node id); a bare name -> (name, None). BadRequest when the part
    after ``@`` is not a node id."""
    name, at, node = text.rpartition("@")
    if not at:
        return text, None
    node_id = parse_node_id(node)
    if node_id is None:
        raise BadRequest(f"member '{text[:80]}': '{node[:40]}' after '@' is not a node id")
    return name, node_id


def _io_size(size: int) -> int:
    if not 0 <= size <= BLOCK_IO:
        raise BadRequest(f"a block read or write moves 0 to {BLOCK_IO} bytes, not {size}")
    return size


PROBE_BYTES = 4096  # what ``refence`` reads to see a device answer again
MAX_WRITERS = 1024  # writers whose fence a device remembers (rule 2); the oldest goes first


def fenced(device: ExtentDevice, call: BlockCall) -> None:
    """Rule 2: Conflict for a write of ``call.writer`` below the highest epoch the device saw
    from it; any call of a writer raises its fence."""
    if not call.writer:
        return
    fences = device.fences
    seen = fences.get(call.writer, -1)
    if call.op == "write" and call.epoch < seen:
        raise Conflict(
            f"a stale write of {call.writer[:80]} (epoch {call.epoch}; it has written at "
            f"{seen} since): refused"
        )
    if call.epoch > seen:
        fences.pop(call.writer, None)
        fences[call.writer] = call.epoch
        while len(fences) > MAX_WRITERS:
            del fences[next(iter(fences))]


async def destroy_for(device: ExtentDevice, writer: str) -> dict[str, Any]:
    """Rule 6: destroy ``device`` for the array ``writer`` names, or refuse (409)."""
    pool_id = device.info.pool_id
    if not writer or device.made_for != writer:
        raise Conflict(
            f"device {pool_id} was not made for the array {writer[:80] or '(none)'}: "
            "only the array it was made for may give it back"
        )
    if not device.unused:
        raise Conflict(f"device {pool_id} holds allocations: it is in use and stays")
    await device.runtime.destroy(str(pool_id))  # out of the pool table before any checkpoint
    return {"ok": True, "pool_id": str(pool_id)}


async def serve_block(device: ExtentDevice, call: BlockCall) -> Any:
    """One operation a peer asks of ``device`` (rule 1)."""
    op, offset, size, data = call.op, call.offset, call.size, call.data
    if op not in BLOCK_OPS:
        raise BadRequest(f"unknown block operation '{op[:40]}' (one of: {', '.join(BLOCK_OPS)})")
    if len(call.writer) > MAX_WRITER:
        raise BadRequest(f"a writer is at most {MAX_WRITER} characters, not {len(call.writer)}")
    fenced(device, call)
    if op == "destroy":
        return await destroy_for(device, call.writer)
    if op == "info":
        return {
            "pool_id": str(device.info.pool_id),
            "pool_name": device.info.pool_name,
            "capacity": device.capacity,
            "remaining": device.remaining_capacity,
            "largest_free": device.largest_free,
            "instance": device.instance,
        }
    if op == "allocate":
        if not 0 < size <= device.capacity:
            raise BadRequest(f"cannot allocate {size} bytes on a device of {device.capacity}")
        extent = await device.allocate(size)
        return {"offset": extent.offset, "size": extent.size}
    if op == "free":
        unit = device.allocator.unit
        if size <= 0 or offset % unit or size % unit:
            raise BadRequest(f"a freed extent is aligned to {unit} bytes and not empty")
        device.check_range(offset, size)
        try:
            await device.free(Extent(offset, size))
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        return {"ok": True}
    if op == "read":
        device.check_range(offset, _io_size(size))
        return await device.read(offset, size)
    device.check_range(offset, _io_size(len(data)))
    await device.write_admitted(offset, data, partial(fenced, device, call))  # rule 2
    return {"ok": True}


class RemoteStore(BlockStore):
    """The rt_bdev device ``pool_id`` on node ``node_id``, as an array member (rule 2).

    The figures ``info`` gave when the member was found stand in for ``capacity`` and free
    space (the array only reads them while claiming its region); I/O is metered here."""

    def __init__(
        self, peer: ModuleContext, node_id: int, info: dict[str, Any], writer: str = ""
    ) -> None:
        self.peer, self.node_id, self.writer = peer, node_id, writer
        self.epoch = wall_ns()  # rule 2: raised by ``refence``
        try:
            self.pool_id = PoolId.parse(str(info["pool_id"]))
            self.pool_name = str(info["pool_name"])
            self._capacity = int(info["capacity"])
            self._remaining = int(info["remaining"])
            self._largest = int(info["largest_free"])
            self.instance = str(info["instance"])
        except (KeyError, TypeError, ValueError, BadRequest):
            raise PeerUnreachable(f"node {node_id} described its device badly") from None
        self.meter = IoMeter()

    @classmethod
    async def find(
        cls, peer: ModuleContext, node_id: int, pool: str, writer: str = ""
    ) -> RemoteStore:
        """The device ``pool`` (an id, or an rt_bdev pool name) on node ``node_id``, written
        by ``writer`` (the array's name for its fence, rule 2)."""
        info = await peer.peer_block(node_id, BlockCall(pool, "info"))
        if not isinstance(info, dict):
            raise PeerUnreachable(f"node {node_id} described its device badly")
        return cls(peer, node_id, info, writer)

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def remaining_capacity(self) -> int:
        return self._remaining

    @property
    def largest_free(self) -> int:
        return self._largest

    def io_snapshot(self) -> IoSnapshot:
        return self.meter.snapshot()

    async def refence(self) -> bool:
        """Does the node still hold this very device (rule 3), blocks and region included,
        and does it read again within the bound (a disk that failed or was slow)? If so, our
        writes go on at a new epoch, set on the device first (rule 2): a write of ours that
        lay in its socket while it was paused is refused from now on."""
        self.epoch = max(wall_ns(), self.epoch + 1)
        try:
            info = await self._call("info")
            if not isinstance(info, dict) or info.get("instance") != self.instance:
                return False
            await self._call("read", offset=0, size=min(PROBE_BYTES, self._capacity))
        except ApiError:
            return False
        return True

    async def _call(self, op: str, **fields: Any) -> Any:
        call = BlockCall(str(self.pool_id), op, writer=self.writer, epoch=self.epoch, **fields)
        return await self.peer.peer_block(self.node_id, call)

    async def allocate(self, size: int) -> Extent:
        got = await self._call("allocate", size=size)
        try:
            return Extent(int(got["offset"]), int(got["size"]))
        except (KeyError, TypeError, ValueError):
            raise PeerUnreachable(f"node {self.node_id} answered an allocation badly") from None

    async def free(self, extent: Extent) -> None:
        await self._call("free", offset=extent.offset, size=extent.size)

    async def read(self, offset: int, size: int) -> bytes:
        got: bytes = await self._metered(
            "read", size, lambda: self._call("read", offset=offset, size=size)
        )
        return got

    async def write(self, offset: int, data: Buffer) -> None:
        blob = bytes(data)
        await self._metered(
            "write", len(blob), lambda: self._call("write", offset=offset, data=blob)
        )

    async def _metered(self, kind: str, size: int, call: Callable[[], Awaitable[Any]]) -> Any:
        t0 = perf_ns() / 1e9
        got = await call()
        self.meter.record(kind, size, perf_ns() / 1e9 - t0)
        if kind == "read" and (not isinstance(got, bytes) or len(got) != size):
            raise PeerUnreachable(f"node {self.node_id} answered a read of {size} bytes badly")
        return got
