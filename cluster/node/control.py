"""What a node answers over its RPC: the monitor frames, block I/O on its devices for arrays
on other nodes (``cluster.modules.remote``), and the control operations that
``rt_run`` and the launcher send (identity, stop, faults, compose, pools, migrate, adopt).

Rules:
1. One handler per request type (``handlers()``), filed by type once when the node starts;
   the membership protocol's ``Swim`` frame is the SWIM handle's and is filed by the node.
2. A refusal is an ``ApiError`` (it goes back with its status); the handlers check what a
   frame's well-typed fields mean, ``frames.decode_untrusted`` has checked their types. Every
   number is ranged here (``cluster.ground.parse``), before anything changes: a percentage in
   0..100, a delay in 0..600,000 ms, node ids in 0..``MAX_NODE_ID``, at most
   ``MAX_BLOCKED`` peers and ``MAX_COMPOSE_ENTRIES`` entries. A hostile value is a 400, never
   a 500.
3. The fault actions are a table (``FAULT_ACTIONS``): the action's name -> what it does to the
   membership (its ``swim.Faults``, its clock) with the request's checked fields. ``cut``
   adds one-way cuts to ``peers`` (never to the node itself), ``clock`` sets the node's clock
   (an offset within ``swim.MAX_CLOCK_OFFSET_S`` either way, a rate in
   ``swim.MIN_CLOCK_RATE..MAX_CLOCK_RATE``; refused on an embedded node, whose trio clock is
   its caller's), ``heal`` removes every fault and resets the clock. ``disk`` is the one action
   on the node's devices instead (``Control.disk``): the ``rt_bdev`` pool ``pool`` takes a
   ``DiskFault``; ``heal`` clears every device's too.
4. A migration sends ``Adopt`` to the target through the runtime's forward (bounded by the
   forward timeout, errors worded as every forward's), and destroys the pool here only once
   the target has adopted it. An adopted pool whose state the module cannot import is
   destroyed again, and the adoption refused (400).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import swim
from cluster.api import unknown_node
from cluster.ground.clock import check_clock
from cluster.ground.errors import ApiError, BadRequest
from cluster.ground.ids import ADMIN_POOL_ID, PoolId
from cluster.ground.parse import MAX_NODE_ID, ParseError, float_value, int_value
from cluster.rpc import (
    Adopt,
    Block,
    Compose,
    Faults,
    Identity,
    Migrate,
    Monitor,
    PoolMonitor,
    Pools,
    Stop,
)
from cluster.runtime import NO_DISK_FAULT, DiskFault, UnknownNode

from .rpc import Handler

if TYPE_CHECKING:
    from cluster.runtime import Runtime

    from .peers import RpcPeers
    from .rpc import RpcServerStats

__all__ = ["FAULT_ACTIONS", "MAX_BLOCKED", "MAX_COMPOSE_ENTRIES", "Control", "ControlledNode"]

log = logging.getLogger(__name__)
JSON = dict[str, Any]
MAX_BLOCKED = 4096  # peers one ``block`` names
MAX_COMPOSE_ENTRIES = 256  # pools one compose request creates
MAX_DELAY_MS = 600_000.0  # what ``swim.Faults`` accepts


def _peer(value: int | None) -> int | None:
    return None if value is None else int_value(value, low=0, high=MAX_NODE_ID, what="peer")


def _peers(values: tuple[int, ...]) -> list[int]:
    if len(values) > MAX_BLOCKED:
        raise ParseError(f"peers: at most {MAX_BLOCKED} node ids, got {len(values)}")
    return [int_value(v, low=0, high=MAX_NODE_ID, what="peers") for v in values]


def _cut(handle: swim.SwimHandle, req: Faults) -> None:
    peers = _peers(req.peers)
    if handle.node_id in peers:
        raise ParseError(f"peers: node {handle.node_id} cannot cut itself off")
    handle.faults.cut_to(peers)


def _clock(handle: swim.SwimHandle, req: Faults) -> None:
    offset, rate = check_clock(req.offset, req.rate)
    try:
        handle.set_clock(offset, rate)
    except ValueError as exc:  # an embedded node (rule 3)
        raise ParseError(str(exc)) from None


FAULT_ACTIONS: dict[str, Callable[[swim.SwimHandle, Faults], None]] = {
    "loss": lambda handle, req: handle.faults.set_loss(
        _peer(req.peer), float_value(req.value, low=0, high=100, what="loss percent")
    ),
    "delay": lambda handle, req: handle.faults.set_delay(
        _peer(req.peer), float_value(req.value, low=0, high=MAX_DELAY_MS, what="delay ms")
    ),
    "block": lambda handle, req: handle.faults.block(_peers(req.peers)),
    "cut": _cut,
    "clock": _clock,
    "heal": lambda handle, req: handle.heal(),
}  # each checks every field it reads before it calls the one method that changes the faults


class ControlledNode(Protocol):
    """What the control operations need of their node (``process.Node`` is one)."""

    @property
    def node_id(self) -> int: ...
    @property
    def runtime(self) -> Runtime: ...
    @property
    def swim(self) -> swim.SwimHandle: ...
    @property
    def peers(self) -> RpcPeers: ...
    @property
    def rpc_port(self) -> int: ...
    @property
    def rpc_stats(self) -> RpcServerStats: ...
    @property
    def dashboard_url(self) -> str | None: ...
    def request_stop(self) -> None: ...


class Control:
    """The RPC handlers of one node (everything but ``Swim``)."""

    def __init__(self, node: ControlledNode) -> None:
        self.node = node
        self.runtime = node.runtime

    def handlers(self) -> dict[type, Handler]:
        return {
            Monitor: self.monitor,
            PoolMonitor: self.pool_monitor,
            Block: self.block,
            Identity: self.identity,
            Stop: self.stop,
            Faults: self.faults,
            Compose: self.compose,
            Pools: self.pools,
            Migrate: self.migrate,
            Adopt: self.adopt,
        }

    async def monitor(self, req: Monitor) -> JSON:
        return await self.runtime.run_admin_monitor(req.query, req.params)

    async def pool_monitor(self, req: PoolMonitor) -> Any:
        pool_id = PoolId.parse(req.pool_id)
        return await self.runtime.local_pool_monitor(pool_id, req.query, req.params)

    async def block(self, req: Block) -> Any:
        return await self.runtime.local_block(req)  # a Block frame is a BlockCall

    def _identity(self) -> JSON:
        return {
            "node_id": self.node.node_id,
            "pid": os.getpid(),
            "runtime_port": self.node.rpc_port,
            "dashboard": self.node.dashboard_url,  # None until the dashboard is bound
            "rpc": self.node.rpc_stats.as_dict(),  # the RPC server's counters
        }

    async def identity(self, req: Identity) -> JSON:
        return self._identity()

    async def stop(self, req: Stop) -> JSON:
        self.node.request_stop()
        return self._identity()

    async def faults(self, req: Faults) -> JSON:
        if req.action == "disk":
            return self.disk(req)
        action = FAULT_ACTIONS.get(req.action)
        if action is None:
            shown = req.action if len(req.action) <= 40 else f"{req.action[:40]}..."
            known = ", ".join([*FAULT_ACTIONS, "disk"])
            raise BadRequest(f"unknown fault action {shown!r} (one of: {known})")
        try:
            action(self.node.swim, req)
        except ParseError as exc:
            raise BadRequest(str(exc)) from None
        if req.action == "heal":
            self.heal_disks()
        return {"ok": True, "node_id": self.node.node_id, "action": req.action}

    def disk(self, req: Faults) -> JSON:
        """Rule 3: the disk fault of the rt_bdev pool ``req.pool`` (every field checked, and
        the pool found, before anything changes); all zero and not full clears it."""
        try:
            fault = DiskFault(req.latency_ms, req.errors, req.full)
        except ParseError as exc:
            raise BadRequest(str(exc)) from None
        shown = req.pool if len(req.pool) <= 80 else f"{req.pool[:80]}..."
        pool = self.runtime.pools.by_name(req.pool) if req.pool else None
        if pool is None:
            raise BadRequest(f"no pool named {shown!r} on node {self.node.node_id}")
        pool.set_disk_fault(fault)  # a pool that is no rt_bdev device refuses (400)
        log.warning("disk fault on pool %s: %s", shown, fault.as_dict())
        return {"ok": True, "node_id": self.node.node_id, "action": "disk", "pool": req.pool}

    def heal_disks(self) -> None:
        """Clear every device's disk fault (``heal``)."""
        for pool in self.runtime.pools.all():
            if pool.disk_fault.active:
                pool.set_disk_fault(NO_DISK_FAULT)

    async def compose(self, req: Compose) -> JSON:
        if len(req.entries) > MAX_COMPOSE_ENTRIES:
            raise BadRequest(
                f"a compose request holds at most {MAX_COMPOSE_ENTRIES} entries, "
                f"not {len(req.entries)}"
            )
        return {"results": [await self.runtime.compose_entry(e) for e in req.entries]}

    async def pools(self, req: Pools) -> JSON:
        return self.runtime.pools_json()

    async def migrate(self, req: Migrate) -> JSON:
        pool_id = PoolId.parse(req.pool_id)
        container = self.runtime.pools.get(pool_id)
        if pool_id == ADMIN_POOL_ID:
            raise BadRequest("the admin pool cannot move")
        try:
            target = self.runtime.resolve_node(str(req.to))
        except UnknownNode as exc:  # worded as the dashboard words it
            raise BadRequest(unknown_node(exc.node)) from None
        if target == self.node.node_id:
            raise BadRequest(f"pool {pool_id} is on node {target} already")
        adopt = Adopt(
            container.info.mod_name,
            container.info.pool_name,
            str(pool_id),
            container.info.pool_query,
            container.export_state(),
        )
        _, member = self.runtime.reach(target)
        await self.node.peers.call(member, adopt, f"adopt {pool_id}")
        await self.runtime.destroy(str(pool_id))
        return {"ok": True, "pool_id": str(pool_id), "to": target}

    async def adopt(self, req: Adopt) -> JSON:
        raw_config = req.state.get("config")
        config: JSON = raw_config if isinstance(raw_config, dict) else {}
        body = await self.runtime.compose(
            req.mod_name, req.pool_name, req.pool_id, config, pool_query=req.pool_query
        )
        pool_id = PoolId.parse(body["pool_id"])
        try:
            await self.runtime.pools.get(pool_id).import_state(req.state)
        except Exception as exc:  # the module's own reading of an untrusted state
            await self.runtime.destroy(str(pool_id))
            if isinstance(exc, ApiError):
                raise
            log.warning("refused to adopt pool %s: %s: %s", pool_id, type(exc).__name__, exc)
            raise BadRequest(f"pool {pool_id}: state cannot be imported: {exc}") from None
        return body
