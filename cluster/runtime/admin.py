"""The admin pool's monitor queries: what a per-node query answers about this node.

Rules:
1. Each query is one function of a ``NodeState`` and the request's parameters;
   ``ADMIN_QUERIES`` is the table the runtime dispatches on (and the list the dashboard's
   per-node routes check). A peer answers a forwarded query from the same table, so a query
   added here is answered by every node.
2. A query's parameters are parsed strictly (``cluster.ground.parse``: canonical ASCII digits,
   ranged) by ``check_params``, which the runtime calls before it answers or forwards: a bad
   parameter is a ``BadRequest`` here, never a wait on a peer. The parsers sit in
   ``ADMIN_PARAMS``.
3. Every answer is built from this node's own state: its SWIM table and history
   (``Membership``), its faults (the membership's, and its devices' disk faults), its own
   process (``ProcessProbe``, psutil on its own pid). Machine-wide figures are labelled
   ``machine`` and read from the stats ring, so this query never disturbs the ring's CPU
   sampling.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import psutil

from cluster.ground.errors import BadRequest
from cluster.ground.parse import ParseError, parse_int

from .membership import faults_json, view_name
from .nodestate import NodeState
from .shapes import health, pools_json, topology

__all__ = [
    "ADMIN_PARAMS",
    "ADMIN_QUERIES",
    "EVENTS_LIMIT",
    "MAX_EVENTS_LIMIT",
    "VIEW_QUERY",
    "admin_query",
    "check_params",
    "events_params",
]

JSON = dict[str, Any]
Query = Callable[[NodeState, Mapping[str, str]], JSON]
MAX_EVENT_ID = (1 << 63) - 1
MAX_SEQ = (1 << 63) - 1
EVENTS_LIMIT = 500  # events one page holds unless ``limit`` says otherwise
MAX_EVENTS_LIMIT = 5000
VIEW_QUERY = "view"  # what each observer is asked for the cluster's views (``views``)


def _strict(params: Mapping[str, str], key: str, default: int, low: int, high: int) -> int:
    if key not in params:
        return default
    try:
        return parse_int(params[key], low=low, high=high, what=key)
    except ParseError as exc:
        raise BadRequest(str(exc)) from None


def events_params(params: Mapping[str, str]) -> tuple[int, int]:
    """``after`` (default 0) and ``limit`` (default ``EVENTS_LIMIT``, 1 to ``MAX_EVENTS_LIMIT``);
    BadRequest if either is not canonical ASCII digits in range."""
    after = _strict(params, "after", 0, 0, MAX_SEQ)
    return after, _strict(params, "limit", EVENTS_LIMIT, 1, MAX_EVENTS_LIMIT)


def _min_event_id(params: Mapping[str, str]) -> int:
    raw = params.get("min_event_id", "") or "0"  # left out or empty: every entry
    try:
        return parse_int(raw, low=0, high=MAX_EVENT_ID, what="min_event_id")
    except ParseError as exc:
        if isinstance(raw, str) and raw.isascii() and raw.lstrip("-").isdigit():
            raise BadRequest(str(exc)) from None  # a number out of range: say the range
        shown = raw if isinstance(raw, str) and len(raw) <= 40 else f"{str(raw)[:40]}..."
        raise BadRequest(f"min_event_id must be an integer, got '{shown}'") from None


ADMIN_PARAMS: dict[str, Callable[[Mapping[str, str]], object]] = {
    "system_stats": _min_event_id,
    "events": events_params,
}


def check_params(query: str, params: Mapping[str, str]) -> None:
    """BadRequest if ``query`` is unknown or one of its parameters is malformed."""
    if query not in ADMIN_QUERIES:
        raise BadRequest(f"unknown admin monitor query '{query}'")
    parse = ADMIN_PARAMS.get(query)
    if parse is not None:
        parse(params)


def _workers(rt: NodeState, params: Mapping[str, str]) -> JSON:
    return {"workers": rt.workers.snapshot()}


def _system_stats(rt: NodeState, params: Mapping[str, str]) -> JSON:
    return {"entries": rt.stats.since(_min_event_id(params))}


def _containers(rt: NodeState, params: Mapping[str, str]) -> JSON:
    return {
        "containers": [
            {**c.info.to_json(), "methods": c.cost.to_json(), "learning_rate": c.cost.learning_rate}
            for c in rt.pools.all()
        ]
    }


def _bdevs(rt: NodeState, params: Mapping[str, str]) -> JSON:
    return {
        "devices": [
            {"pool_id": str(c.info.pool_id), "stats": c.stats()}
            for c in rt.pools.all()
            if getattr(c, "is_block_device", False)
        ]
    }


def _events(rt: NodeState, params: Mapping[str, str]) -> JSON:
    after, limit = events_params(params)
    events, cursor, dropped = rt.membership.events(after, limit)
    return {
        "events": [e.as_dict() for e in events],
        "next": cursor,
        "dropped": dropped,
        "boot": rt.process.boot,  # a cursor is good only with the boot that gave it
    }


def node_faults(rt: NodeState) -> JSON:
    """The membership's faults (``faults_json``) and ``disk``: each device's disk fault by pool
    name, for the devices that have one; ``active`` when any is set."""
    disk = {c.info.pool_name: c.disk_fault.as_dict() for c in rt.pools.all() if c.disk_fault.active}
    shaped = faults_json(rt.membership.faults)
    active = bool(shaped.pop("active") or disk)
    return {**shaped, "disk": disk, "active": active}  # the schema's order: active last


def _faults(rt: NodeState, params: Mapping[str, str]) -> JSON:
    return node_faults(rt)


def _view(rt: NodeState, params: Mapping[str, str]) -> JSON:
    """What this node holds of every member, its leader and its faults: one observer's row of
    the views matrix (``views``) in one round trip."""
    return {
        "leader": rt.membership.leader_id(),
        "views": {str(m.node_id): view_name(m.state) for m in rt.membership.members()},
        "faults": {"node_id": rt.node_id, **node_faults(rt)},
    }


def _process(rt: NodeState, params: Mapping[str, str]) -> JSON:
    stats = getattr(rt.membership, "statistics", None)  # SingleNode has no SWIM statistics
    swim = stats() if stats is not None else None
    me = next((m for m in rt.membership.members() if m.node_id == rt.node_id), None)
    sample = rt.stats.latest() or {}
    try:
        memory: float | None = psutil.virtual_memory().percent
    except (OSError, psutil.Error):
        memory = None
    figures = rt.process.figures()
    return {
        "pid": figures.pop("pid"),
        "runtime_port": me.port if me is not None else rt.settings.networking.port,
        "dashboard_url": rt.dashboard_url,
        **figures,
        "incarnation": me.incarnation if me is not None else 0,
        "health_score": swim.health_score if swim is not None else None,
        "loop_lag_ms": _ms(swim.loop_lag) if swim is not None else None,
        "loop_lag_max_ms": _ms(swim.loop_lag_max) if swim is not None else None,
        "machine": {"cpu_percent": sample.get("cpu_usage_pct"), "memory_percent": memory},
    }


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


ADMIN_QUERIES: dict[str, Query] = {
    "workers": _workers,
    "system_stats": _system_stats,
    "containers": _containers,
    "bdevs": _bdevs,
    "health": lambda rt, params: health(rt),
    "topology": lambda rt, params: topology(rt),
    "pools": lambda rt, params: pools_json(rt),
    "events": _events,
    "faults": _faults,
    "process": _process,
    VIEW_QUERY: _view,
}


def admin_query(rt: NodeState, query: str, params: Mapping[str, str]) -> JSON:
    """``{"node_id": ..., **answer}``; an unknown query or a bad parameter is a BadRequest."""
    check_params(query, params)
    return {"node_id": rt.node_id, **ADMIN_QUERIES[query](rt, params)}
