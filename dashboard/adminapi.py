"""What the rt_admin blueprint's routes take and answer, for the API document: one
``ApiSpec`` per route, attached where the route is registered (``dashboard.admin``).

Rules:
1. Bodies are the runtime's (``cluster.api.answers``); parameters are described as the
   runtime parses them (``cluster.ground.parse``: canonical ASCII digits, ranged), so a value the
   schema allows is one the node accepts, and the examples are ones it answers 200.
2. Statuses listed here are the handler's own; the HTTP layer's refusals are added to every
   route by ``dashboard.openapi``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from cluster.api import ApiParam, ApiSpec, Link, answers, apidoc
from cluster.api.apidoc import ACTION_PARAM, POOL_ID, POOL_NAME, POOL_PARAM, obj, one_of

__all__ = [
    "CHIMODS",
    "COMPOSE",
    "COMPOSE_FORM",
    "CONFIG",
    "DESTROY",
    "DOCS_PAGE",
    "EVENTS",
    "FAULTS",
    "HEALTH",
    "METRICS",
    "OPENAPI",
    "PAGE",
    "POOLS",
    "POOL_MONITOR",
    "ROUTES",
    "TOPOLOGY",
    "VIEWS",
    "compose",
    "per_node",
]

MAX_SEQ = (1 << 63) - 1
NODE_PATTERN = r"^(local|self|0|[1-9][0-9]{0,9})$"
NODE = ApiParam(
    "node",
    {"type": "string", "pattern": NODE_PATTERN},
    "local, self, or a node id from /api/topology (a peer's query is forwarded to it)",
    True,
    ("local",),
)
AFTER = ApiParam(
    "after",
    {"type": "integer", "minimum": 0, "maximum": MAX_SEQ, "default": 0},
    "return the events after this seq (the last answer's next)",
    blank=False,
)
LIMIT = ApiParam(
    "limit",
    {"type": "integer", "minimum": 1, "maximum": 5000, "default": 500},
    "at most this many events",
    blank=False,
)
MIN_EVENT_ID = ApiParam(
    "min_event_id",
    {"type": "integer", "minimum": 0, "maximum": MAX_SEQ, "default": 0},
    "the first sample's event_id (inclusive; pages ask for last + 1); empty: every sample",
)
ROUTING = ApiParam(
    "routing",
    {
        "type": "string",
        "pattern": r"^(|local|dynamic|broadcast|(direct_id|physical|direct_hash):[0-9]+"
        r"|range:[0-9]+:[0-9]+)$",
        "default": "local",
    },
    "which containers answer: local, broadcast, dynamic, direct_id:N, direct_hash:N, "
    "range:OFF:CNT, physical:N",
    examples=("local", "broadcast"),
)
PARAMS_OF: dict[str, tuple[ApiParam, ...]] = {  # per-node query -> its request parameters
    "system_stats": (MIN_EVENT_ID,),
    "events": (AFTER, LIMIT),
}
NODE_ERRORS = {
    400: "a node id that is not local, self or one in the host table; a bad parameter",
    503: "the peer did not answer within 5 s, or refused the connection",
}

HEALTH = ApiSpec(body=answers.HEALTH)
TOPOLOGY = ApiSpec(body=answers.TOPOLOGY)
POOLS = ApiSpec(body=answers.POOLS)
CONFIG = ApiSpec(body=answers.CONFIG)
CHIMODS = ApiSpec(body=answers.CHIMODS)
ROUTES = ApiSpec(
    body=obj(
        {
            "routes": apidoc.array(
                obj(
                    {
                        "method": one_of("GET", "POST"),
                        "path": apidoc.STRING,
                        "mod_name": apidoc.STRING,
                        "doc": apidoc.STRING,
                    }
                )
            ),
            "mounts": apidoc.array(
                obj({"mod_name": apidoc.STRING, "url_prefix": apidoc.STRING, "dir": apidoc.STRING})
            ),
        }
    )
)
EVENTS = ApiSpec(
    params=(AFTER, LIMIT),
    body=answers.NODE_ANSWERS["events"],
    errors={400: "after or limit is not canonical digits in range"},
)
FAULTS = ApiSpec(body=answers.NODE_ANSWERS["faults"])
VIEWS = ApiSpec(
    body=answers.VIEWS,
    doc="Observers are the members of this node's table; each peer is asked in parallel under "
    "one 5 s bound. A peer that did not answer has a null row and a reason in errors.",
)


def per_node(query: str) -> ApiSpec:
    """``/api/nodes/{node}/<query>``."""
    return ApiSpec(
        params=(NODE, *PARAMS_OF.get(query, ())),
        body=answers.NODE_ANSWERS[query],
        errors=NODE_ERRORS,
    )


POOL_MONITOR = ApiSpec(
    params=(
        POOL_PARAM,
        ApiParam("query", apidoc.STRING, "the monitor query, e.g. stats", True, ("stats",)),
        ROUTING,
    ),
    body=answers.POOL_MONITOR,
    errors={
        400: "a pool id that does not parse, no query, a bad routing, a query no node knows",
        404: "no pool with that id on the nodes asked",
        409: "the pool was destroyed while the query ran",
        503: "a forward did not answer within 5 s",
    },
    doc="Any other parameter reaches the module's monitor handler.",
)
DESTROY = ApiSpec(
    params=(POOL_PARAM,),
    body=answers.DESTROYED,
    errors={
        400: "a pool id that does not parse",
        403: "the admin pool 1.0 (the runtime itself)",
        404: "no pool with that id",
    },
)
MOD_NAME = ApiParam("mod_name", doc="a loaded module (/api/chimods)", examples=("rt_bdev",))
COMPOSE_FORM = ApiSpec(params=(MOD_NAME,), body=answers.FORM_SPEC)


def compose(modules: Iterable[str]) -> ApiSpec:
    """``POST /api/pools/compose`` of an app whose modules are ``modules`` (its ``mod_name``
    is one of them, rt_admin excepted: any other is a 400 on that field)."""
    names = [m for m in modules if m != "rt_admin"]
    if not names:
        return COMPOSE
    mod_name = ApiParam("mod_name", one_of(*names), "a loaded module other than rt_admin", True)
    return replace(COMPOSE, params=(mod_name, *COMPOSE.params[1:]))


COMPOSE = ApiSpec(
    params=(
        ApiParam(
            "mod_name",
            {**apidoc.STRING, "minLength": 1},
            "a loaded module other than rt_admin",
            True,
            ("rt_bdev",),
        ),
        ApiParam(
            "pool_name",
            POOL_NAME,
            "1 to 64 printable characters, no comma, unique on this node",
            True,
            ("api_pool",),
        ),
        ApiParam("pool_id", POOL_ID, "<major>.<minor>, free, not 0.0 or 1.0", True, ("880.0",)),
        ApiParam("pool_query", ROUTING.schema, "the pool's routing (local)"),
        ApiParam(
            "config",
            doc="module parameters as a YAML mapping (64 KiB at most)",
            examples=("{bdev_type: ram, capacity: 64K}",),
        ),
        ACTION_PARAM,
    ),
    body=answers.COMPOSED,
    errors={409: "the pool could not start (nothing is left behind)"},
    fields=True,
    links=(
        Link(
            "monitor",
            "GET /api/pools/{pool}/monitor",
            {"pool": "$response.body#/pool_id", "query": "stats"},
        ),
        Link("destroy", "POST /api/pools/{pool}/destroy", {"pool": "$response.body#/pool_id"}),
    ),
)
METRICS = ApiSpec(body=apidoc.STRING, media="text/plain")
PAGE = ApiSpec(
    body=apidoc.STRING, media="text/html", errors={404: "the page's file is not installed"}
)
DOCS_PAGE = PAGE
OPENAPI = ApiSpec(
    body=obj(
        {
            "openapi": {"const": "3.1.0"},
            "info": obj({"title": apidoc.STRING}),
            "paths": apidoc.mapping(apidoc.ANY),
        }
    ),
    doc="This document: every route of /api/routes, generated from the running app.",
)
