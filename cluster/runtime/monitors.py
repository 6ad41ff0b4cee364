"""Where a monitor is answered: here, or forwarded to the peers the request names.

Rules:
1. A per-node query (``node_monitor``) is one monitor task of the admin pool: run on this
   node's workers when the node is this one (``cluster.runtime.peers.is_local`` through
   ``resolve_node``), else forwarded to the peer under the forward bound. Its parameters are
   checked first (``check_params``): a bad one is refused before any forward.
2. A pool monitor (``pool_monitor``) asks every container its routing names, all at once,
   each forward under the same bound: ``results`` holds each answer (``null`` for a node that
   failed) and ``errors`` why. A node without the pool is left out; a query every asked node
   refused as a ``BadRequest`` (no such query) is a ``BadRequest`` itself.
3. A peer is asked only through the ``Peers`` that ``Forwarder.reach`` hands out, which bound
   every call once (``peers`` rule 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import trio

from cluster.ground.errors import ApiError, BadRequest, NotFound
from cluster.ground.ids import ADMIN_POOL_ID, PoolId

from .admin import admin_query, check_params
from .membership import state_name
from .nodestate import Forwarder, NodeState
from .peers import routing_targets

__all__ = ["node_monitor", "pool_monitor", "run_admin_monitor"]

JSON = dict[str, Any]


async def run_admin_monitor(node: NodeState, query: str, params: Mapping[str, str]) -> JSON:
    """The admin monitor as one monitor task of the admin pool on this node's workers (how
    every per-node query is answered, asked here or by a peer)."""
    return await node.workers.run(
        ADMIN_POOL_ID, "monitor", 0, lambda: admin_query(node, query, params)
    )


async def node_monitor(node: Forwarder, target: str, query: str, params: Mapping[str, str]) -> JSON:
    """A per-node query: answered here, or forwarded as one monitor task to the peer."""
    nid = node.resolve_node(target)
    check_params(query, params)  # a bad query or parameter is refused before any forward
    if nid == node.node_id:
        return await run_admin_monitor(node, query, params)
    peers, member = node.reach(nid)
    return await peers.monitor(member, query, params)


async def pool_monitor(
    node: Forwarder, pool: str, query: str, routing: str, params: Mapping[str, str]
) -> JSON:
    """A pool's monitor answer from each container the routing names (rule 2); ``params``
    (the request's other parameters) reach the module's monitor handler."""
    pool_id = PoolId.parse(pool)
    if not query:
        raise BadRequest("missing ?query")
    alive = [m.node_id for m in node.membership.members() if state_name(m.state) == "alive"]
    targets = routing_targets(routing or "local", node.node_id, alive, node.resolve_node)
    results: dict[str, Any] = {}
    failed: dict[str, ApiError] = {}

    async def ask(nid: int) -> None:
        try:
            if nid == node.node_id:
                results[str(nid)] = await node.local_pool_monitor(pool_id, query, params)
            else:
                peers, member = node.reach(nid)
                results[str(nid)] = await peers.pool_monitor(member, str(pool_id), query, params)
        except NotFound:
            pass
        except ApiError as exc:
            results[str(nid)], failed[str(nid)] = None, exc

    if targets == [node.node_id]:  # answered here: its errors are the request's
        results[str(node.node_id)] = await node.local_pool_monitor(pool_id, query, params)
    else:
        async with trio.open_nursery() as nursery:
            for nid in targets:
                nursery.start_soon(ask, nid)
        if not results:
            raise NotFound(f"no pool with id {pool_id}")
        refused = all(isinstance(e, BadRequest) for e in failed.values())
        if len(failed) == len(results) and refused:
            raise BadRequest(next(iter(failed.values())).message)  # no node knows the query
    body = {"pool_id": str(pool_id), "query": query, "results": dict(sorted(results.items()))}
    if failed:
        body["errors"] = {nid: failed[nid].message for nid in sorted(failed)}
    return body
