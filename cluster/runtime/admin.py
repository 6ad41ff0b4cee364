"""The admin pool's monitor queries: what a per-node endpoint answers about this node.

Each query is one function of the runtime and the request's parameters; ``ADMIN_QUERIES``
is the table the runtime dispatches on (and the list the dashboard's per-node routes check).
A numeric parameter is parsed strictly (``cluster.parse``: canonical ASCII digits, ranged), here
where every per-node query is answered, asked locally or forwarded by a peer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from cluster.errors import BadRequest
from cluster.parse import ParseError, parse_int

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["ADMIN_QUERIES", "admin_query"]

JSON = dict[str, Any]
Query = Callable[["Runtime", Mapping[str, str]], JSON]
MAX_EVENT_ID = (1 << 63) - 1


def _workers(rt: Runtime, params: Mapping[str, str]) -> JSON:
    return {"workers": rt.workers.snapshot()}


def _system_stats(rt: Runtime, params: Mapping[str, str]) -> JSON:
    raw = params.get("min_event_id", "") or "0"  # left out or empty: every entry
    try:
        min_id = parse_int(raw, low=0, high=MAX_EVENT_ID, what="min_event_id")
    except ParseError as exc:
        if isinstance(raw, str) and raw.isascii() and raw.lstrip("-").isdigit():
            raise BadRequest(str(exc)) from None  # a number out of range: say the range
        shown = raw if isinstance(raw, str) and len(raw) <= 40 else f"{str(raw)[:40]}..."
        raise BadRequest(f"min_event_id must be an integer, got '{shown}'") from None
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
