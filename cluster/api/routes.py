"""A module's routes as data: what the dashboard mounts under ``/api/mod/<mod_name>/``.

Rules:
1. A ``ModuleRoute`` is a method, a path below the module's prefix (``{name}`` segments match
   one path segment each), a handler, a one-line doc and its ``ApiSpec`` for
   ``/openapi.json`` (a route without one is flagged in the document).
2. A handler receives a ``RouteCall`` and returns a JSON-able dict or raises an ``ApiError``.
   Parameters are read as written (never stripped): booleans through ``RouteCall.flag``, pool
   ids through ``PoolId.parse``, numbers and sizes through ``cluster.ground.parse``.
3. A handler's ``PoolGone`` (its pool was destroyed under it) is answered 409
   (``answering_pool_gone``).
4. A node id that names no node (the runtime's ``UnknownNode``) is answered with where ids
   are listed (``unknown_node``), by the dashboard and the node's RPC alike.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cluster.ground.errors import BadRequest, Conflict, PoolGone
from cluster.ground.parse import ParseError, parse_bool
from cluster.runtime import ModuleContext

from .apidoc import ApiSpec

__all__ = ["Handler", "ModuleRoute", "RouteCall", "answering_pool_gone", "unknown_node"]

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class RouteCall:
    """One request to a module route: the merged parameters and the path's ``{name}`` parts."""

    runtime: ModuleContext
    params: Mapping[str, str]
    path_args: Mapping[str, str]

    def require(self, name: str) -> str:
        value = self.params.get(name, "")
        if value == "":
            raise BadRequest(f"missing {name}")
        return value

    def flag(self, name: str, default: bool = False) -> bool:
        """A boolean parameter: ``default`` when left out or empty, else exactly one of
        ``cluster.ground.parse.BOOL_WORDS`` (any case); anything else (``maybe``, ``2``, `` 1``)
        is a BadRequest, before the handler changes anything."""
        value = self.params.get(name, "")
        if value == "":
            return default
        try:
            return parse_bool(value, what=name)
        except ParseError as exc:
            raise BadRequest(str(exc)) from None


Handler = Callable[[RouteCall], Awaitable[JSON]]


@dataclass(frozen=True, slots=True)
class ModuleRoute:
    method: str  # "GET" or "POST"
    path: str  # below /api/mod/<mod_name>/, e.g. "{pool}/add_member"
    handler: Handler
    doc: str
    api: ApiSpec | None = None  # for /openapi.json; a route without one is flagged there


def answering_pool_gone(route: ModuleRoute) -> ModuleRoute:
    """``route`` with a ``PoolGone`` from its handler answered as a 409 ``Conflict``."""
    handler = route.handler

    @functools.wraps(handler)
    async def handle(call: RouteCall) -> JSON:
        try:
            return await handler(call)
        except PoolGone as exc:
            raise Conflict(f"pool {exc.pool} was destroyed while the request ran") from None

    return ModuleRoute(route.method, route.path, handle, route.doc, route.api)


def unknown_node(node: str) -> str:
    """The message for a node id ``node`` (as written) that is malformed or in no host table
    (rule 4)."""
    return f"unknown or malformed node id: {node} (use a node id from /api/topology, or 'local')"
