"""The admin pool's monitor queries: what a per-node endpoint answers about this node.

Each query is one function of the runtime and the request's parameters; ``ADMIN_QUERIES``
is the table the runtime dispatches on (and the list the dashboard's per-node routes check).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from cluster.errors import BadRequest

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["ADMIN_QUERIES", "admin_query"]

JSON = dict[str, Any]
Query = Callable[["Runtime", Mapping[str, str]], JSON]


def _workers(rt: Runtime, params: Mapping[str, str]) -> JSON:
    return {"workers": rt.workers.snapshot()}


def _system_stats(rt: Runtime, params: Mapping[str, str]) -> JSON:
    raw = params.get("min_event_id", "0") or "0"
    try:
        min_id = int(raw)
    except ValueError:
        raise BadRequest(f"min_event_id must be an integer, got '{raw}'") from None
    return {"entries": rt.stats.since(min_id)}


def _containers(rt: Runtime, params: Mapping[str, str]) -> JSON:
    return {
        "containers": [
            {**c.info.to_json(), "methods": c.cost.to_json(), "learning_rate": c.cost.learning_rate}
            for c in rt.pools.all()
        ]
    }


def _bdevs(rt: Runtime, params: Mapping[str, str]) -> JSON:
    return {
        "devices": [
            {"pool_id": str(c.info.pool_id), "stats": c.stats()}
            for c in rt.pools.all()
            if getattr(c, "is_block_device", False)
        ]
    }


ADMIN_QUERIES: dict[str, Query] = {
    "workers": _workers,
    "system_stats": _system_stats,
    "containers": _containers,
    "bdevs": _bdevs,
    "health": lambda rt, params: rt.health(),
    "topology": lambda rt, params: rt.topology(),
    "pools": lambda rt, params: rt.pools_json(),
}


def admin_query(rt: Runtime, query: str, params: Mapping[str, str]) -> JSON:
    """``{"node_id": ..., **answer}``; an unknown query is a 400."""
    answer = ADMIN_QUERIES.get(query)
    if answer is None:
        raise BadRequest(f"unknown admin monitor query '{query}'")
    return {"node_id": rt.node_id, **answer(rt, params)}
