"""Routes of the retired standalone dashboard (spec section 9): each answers 404 with an error
that names its replacement, so an old script fails with a hint instead of a bare "no route".

These are not routes of any module: ``/api/routes`` leaves them out.
"""

from __future__ import annotations

from typing import Any

from quart import Blueprint, request

from cluster.ground.errors import NotFound

__all__ = ["RETIRED", "retired_blueprint"]

RETIRED = "retired"
_NO_REPLACEMENT = "none; use `rt_run stop` or `rt_run restart` on the node"


def _gone(replacement: str) -> NotFound:
    return NotFound(f"retired route {request.method} {request.path}: replaced by {replacement}")


def retired_blueprint() -> Blueprint:
    bp = Blueprint(RETIRED, __name__)
    methods = ["GET", "POST"]

    @bp.route("/api/node/<node>/workers", methods=methods, endpoint="node_workers")
    async def node_workers(node: str) -> Any:
        raise _gone(f"GET /api/nodes/{node}/workers")

    @bp.route("/api/node/<node>/system_stats", methods=methods, endpoint="node_system_stats")
    async def node_system_stats(node: str) -> Any:
        raise _gone(f"GET /api/nodes/{node}/system_stats")

    @bp.route("/api/node/<node>/bdev_stats", methods=methods, endpoint="node_bdev_stats")
    async def node_bdev_stats(node: str) -> Any:
        raise _gone(f"GET /api/nodes/{node}/bdevs")

    @bp.route("/api/system", methods=methods, endpoint="system")
    @bp.route("/api/workers", methods=methods, endpoint="workers")
    async def system() -> Any:
        raise _gone("GET /api/nodes/local/workers; GET /api/health for liveness")

    @bp.route("/api/topology/node/<node>/shutdown", methods=methods, endpoint="shutdown")
    @bp.route("/api/topology/node/<node>/restart", methods=methods, endpoint="restart")
    async def shutdown(node: str) -> Any:
        raise _gone(_NO_REPLACEMENT)

    return bp
