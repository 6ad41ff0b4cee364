"""What a node answers over its RPC: the monitor frames, and the control operations that
``rt_run`` and the launcher send (identity, stop, faults, compose, pools, migrate, adopt).

Rules:
1. One handler per request type (``handlers()``), filed by type once when the node starts;
   the membership protocol's ``Swim`` frame is the SWIM handle's and is filed by the node.
2. A refusal is an ``ApiError`` (it goes back with its status); the handlers check what a
   frame's well-typed fields mean, ``frames.decode_untrusted`` has checked their types.
3. A migration sends ``Adopt`` to the target through the runtime's forward (bounded by the
   forward timeout, errors worded as every forward's), and destroys the pool here only once
   the target has adopted it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from cluster.errors import BadRequest
from cluster.ids import ADMIN_POOL_ID, PoolId

from .frames import (
    Adopt,
    Compose,
    Faults,
    Identity,
    Migrate,
    Monitor,
    PoolMonitor,
    Pools,
    Stop,
)
from .rpc import Handler

if TYPE_CHECKING:
    from .process import Node

__all__ = ["Control"]

JSON = dict[str, Any]


class Control:
    """The RPC handlers of one node (everything but ``Swim``)."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.runtime = node.runtime

    def handlers(self) -> dict[type, Handler]:
        return {
            Monitor: self.monitor,
            PoolMonitor: self.pool_monitor,
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

    def _identity(self) -> JSON:
        return {
            "node_id": self.node.node_id,
            "pid": os.getpid(),
            "runtime_port": self.node.rpc_port,
            "dashboard": self.node.dashboard_url,  # None until the dashboard is bound
        }

    async def identity(self, req: Identity) -> JSON:
        return self._identity()

    async def stop(self, req: Stop) -> JSON:
        self.node.request_stop()
        return self._identity()

    async def faults(self, req: Faults) -> JSON:
        faults = self.node.swim.faults
        if req.action == "loss":
            faults.set_loss(req.peer, req.value)
        elif req.action == "delay":
            faults.set_delay(req.peer, req.value)
        elif req.action == "block":
            faults.block(req.peers)
        elif req.action == "heal":
            faults.heal()
        else:
            raise BadRequest(f"unknown fault action {req.action!r}")
        return {"ok": True, "node_id": self.node.node_id, "action": req.action}

    async def compose(self, req: Compose) -> JSON:
        return {"results": [await self.runtime.compose_entry(e) for e in req.entries]}

    async def pools(self, req: Pools) -> JSON:
        return self.runtime.pools_json()

    async def migrate(self, req: Migrate) -> JSON:
        pool_id = PoolId.parse(req.pool_id)
        container = self.runtime.pools.get(pool_id)
        if pool_id == ADMIN_POOL_ID:
            raise BadRequest("the admin pool cannot move")
        target = self.runtime.resolve_node(str(req.to))
        if target == self.node.node_id:
            raise BadRequest(f"pool {pool_id} is on node {target} already")
        adopt = Adopt(
            container.info.mod_name,
            container.info.pool_name,
            str(pool_id),
            container.info.pool_query,
            container.export_state(),
        )
        peers = self.node.peers
        await self.runtime.forward(target, f"adopt {pool_id}", lambda _, m: peers.call(m, adopt))
        await self.runtime.destroy(str(pool_id))
        return {"ok": True, "pool_id": str(pool_id), "to": target}

    async def adopt(self, req: Adopt) -> JSON:
        raw_config = req.state.get("config")
        config: JSON = raw_config if isinstance(raw_config, dict) else {}
        body = await self.runtime.compose(
            req.mod_name, req.pool_name, req.pool_id, config, pool_query=req.pool_query
        )
        await self.runtime.pools.get(PoolId.parse(body["pool_id"])).import_state(req.state)
        return body
