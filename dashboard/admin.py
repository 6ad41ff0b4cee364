"""The rt_admin blueprint: node-local, per-node, cluster and per-pool routes, ``/metrics``, the
API document (``/openapi.json``) and the pages (``/``, ``/views``, ``/api/docs``).

Rules:
1. Handlers are thin: read parameters, call one ``RuntimeView`` method, return its dict. Errors
   are ``ApiError``s raised by the runtime and translated once (``dashboard.errors``).
2. A per-node route is one admin monitor task: answered here for ``local``/``self``/this
   node's id, else forwarded to the peer by the runtime (5 s bound, then 503). Forwards are
   timed into ``/metrics``. ``PER_NODE`` names each query and the parameters it passes on;
   the runtime parses them strictly (a 400 before any forward).
3. Nothing here shuts a node down or deletes data; POST routes stay node-local.
4. Every route is registered with its declaration for the API document (``declare``, the
   specs in ``dashboard.adminapi``); a route without one is flagged in the document.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio
from quart import Blueprint, Response, current_app

from cluster.api import FormField, FormSpec
from cluster.runtime import RuntimeView

from . import adminapi as api
from .assets import asset_response, mounts
from .metrics import CONTENT_TYPE, DashboardMetrics
from .modules import add_module_routes
from .openapi import build_document
from .params import request_params
from .routes import ADMIN, ASSET_ENDPOINTS, app_routes, declare

__all__ = ["ADMIN", "ASSET_ENDPOINTS", "admin_blueprint", "route_table"]

JSON = dict[str, Any]
PER_NODE: dict[str, tuple[str, ...]] = {  # query -> the request parameters it passes on
    "workers": (),
    "system_stats": ("min_event_id",),
    "containers": (),
    "bdevs": (),
    "events": ("after", "limit"),
    "faults": (),
    "process": (),
}


def route_table(runtime: RuntimeView) -> JSON:
    """Every route of the running app with its registering module, and every asset mount."""
    return {
        "routes": [r.to_json() for r in app_routes(current_app, runtime.modules)],
        "mounts": [
            {"mod_name": mod, "url_prefix": f"/viz/{mod}", "dir": folder}
            for mod, folder in sorted(mounts(runtime).items())
        ],
    }


def _compose_form(runtime: RuntimeView, mod_name: str) -> JSON:
    mods = tuple(runtime.modules)
    return FormSpec(
        mod_name=mod_name,
        title="Compose a pool",
        fields=(
            FormField("mod_name", "Module", "select", True, mod_name, mods),
            FormField("pool_name", "Pool name", required=True, placeholder="my_pool"),
            FormField(
                "pool_id",
                "Pool id",
                required=True,
                default=runtime.suggest_pool_id(mod_name),
                help="<major>.<minor>; a free id is suggested",
            ),
            FormField("pool_query", "Routing", default="local"),
            FormField("config", "Module parameters (YAML)", "textarea"),
        ),
        note="The same path as rt_run compose; action=validate checks without creating.",
    ).to_json()


def admin_blueprint(runtime: RuntimeView, metrics: DashboardMetrics) -> Blueprint:
    bp = Blueprint(ADMIN, __name__)
    _node_routes(bp, runtime)
    for query in PER_NODE:
        bp.add_url_rule(
            f"/api/nodes/<node>/{query}",
            f"node_{query}",
            declare(api.per_node(query))(_per_node_view(runtime, metrics, query)),
            methods=["GET"],
        )
    _pool_routes(bp, runtime)
    _page_routes(bp, runtime, metrics)
    admin_module = runtime.modules.get(ADMIN)
    if admin_module is not None:
        add_module_routes(bp, runtime, admin_module)
    return bp


def _node_routes(bp: Blueprint, runtime: RuntimeView) -> None:
    """This node's own answers."""
    route = bp.route

    @route("/api/health", methods=["GET"])
    @declare(api.HEALTH)
    async def health() -> JSON:
        """liveness and this node's identity"""
        return runtime.health()

    @route("/api/topology", methods=["GET"])
    @declare(api.TOPOLOGY)
    async def topology() -> JSON:
        """cluster membership and SWIM state from the local host table"""
        return runtime.topology()

    @route("/api/pools", methods=["GET"])
    @declare(api.POOLS)
    async def pools() -> JSON:
        """pools composed on this node"""
        return runtime.pools_json()

    @route("/api/config", methods=["GET"])
    @declare(api.CONFIG)
    async def config() -> JSON:
        """settings the node came up with"""
        return runtime.config_json()

    @route("/api/routes", methods=["GET"])
    @declare(api.ROUTES)
    async def routes() -> JSON:
        """every route and asset mount, per module"""
        return route_table(runtime)

    @route("/api/chimods", methods=["GET"])
    @declare(api.CHIMODS)
    async def chimods() -> JSON:
        """loaded modules, with create form and pages flags"""
        return runtime.chimods()

    @route("/api/events", methods=["GET"])
    @declare(api.EVENTS)
    async def events() -> JSON:
        """this node's membership changes, oldest first (after=SEQ, limit=N)"""
        return await runtime.node_monitor(
            "local", "events", _passed(await request_params(), "events")
        )

    @route("/api/faults", methods=["GET"])
    @declare(api.FAULTS)
    async def faults() -> JSON:
        """the faults injected at this node: blocked and cut peers, loss, delay, clock, disks"""
        return await runtime.node_monitor("local", "faults", {})

    @route("/api/cluster/views", methods=["GET"])
    @declare(api.VIEWS)
    async def cluster_views() -> JSON:
        """every member's view of every member, asked of each (within 6 s)"""
        return await runtime.cluster_views()


def _passed(params: dict[str, str], query: str) -> dict[str, str]:
    """The request parameters a per-node query passes on (``PER_NODE``)."""
    return {k: params[k] for k in PER_NODE[query] if k in params}


def _per_node_view(
    runtime: RuntimeView, metrics: DashboardMetrics, query: str
) -> Callable[..., Any]:
    """``/api/nodes/<node>/<query>``: answered here, or forwarded (and timed into /metrics)."""

    async def view(node: str) -> JSON:
        args = _passed(await request_params(), query)
        if runtime.resolve_node(node) == runtime.node_id:  # 400 for a bad id, not timed
            return await runtime.node_monitor(node, query, args)
        started, outcome = trio.current_time(), "error"
        try:
            body = await runtime.node_monitor(node, query, args)
            outcome = "ok"
            return body
        finally:
            metrics.forward_seconds.labels(query, outcome).observe(trio.current_time() - started)

    view.__doc__ = f"{query} of a node (local, or forwarded to a peer)"
    return view


def _pool_routes(bp: Blueprint, runtime: RuntimeView) -> None:
    route = bp.route

    @route("/api/pools/<pool>/monitor", methods=["GET"])
    @declare(api.POOL_MONITOR)
    async def pool_monitor(pool: str) -> JSON:
        """a pool's monitor answer (query=..., routing=local|broadcast|...)"""
        params = await request_params()
        extra = {k: v for k, v in params.items() if k not in ("query", "routing")}
        return await runtime.pool_monitor(
            pool, params.get("query", ""), params.get("routing", "") or "local", extra
        )

    @route("/api/pools/<pool>/destroy", methods=["POST"])
    @declare(api.DESTROY)
    async def destroy(pool: str) -> JSON:
        """shut a pool down (refused for the admin pool)"""
        return await runtime.destroy(pool)

    @route("/api/pools/compose", methods=["GET"])
    @declare(api.COMPOSE_FORM)
    async def compose_form() -> JSON:
        """the generic compose form spec, with a free pool id suggested"""
        params = await request_params()
        return _compose_form(runtime, params.get("mod_name", ""))

    @route("/api/pools/compose", methods=["POST"])
    @declare(api.compose(runtime.modules))
    async def compose() -> JSON:
        """compose a pool from mod_name, pool_name, pool_id, pool_query, config (YAML)"""
        p = await request_params()
        action = p.get("action", "")
        errors = {}
        if action not in ("", "validate", "create"):
            errors["action"] = f"unknown action '{action}' (use validate, or leave it out)"
        return await runtime.compose(
            p.get("mod_name", ""),
            p.get("pool_name", ""),
            p.get("pool_id", ""),
            p.get("config", ""),
            pool_query=p.get("pool_query", "") or "local",
            validate_only=action == "validate",
            errors=errors,
        )


def _page_routes(bp: Blueprint, runtime: RuntimeView, metrics: DashboardMetrics) -> None:
    route = bp.route

    @route("/metrics", methods=["GET"])
    @declare(api.METRICS)
    async def prometheus() -> Response:
        """Prometheus text: membership, SWIM, HTTP, forwards, workers"""
        return Response(metrics.render(), content_type=CONTENT_TYPE)

    @route("/", methods=["GET"])
    @declare(api.PAGE)
    async def cluster_page() -> Response:
        """the Cluster page (viz/rt_admin/index.html)"""
        return await asset_response(runtime, ADMIN, "index.html")

    @route("/views", methods=["GET"])
    @declare(api.PAGE)
    async def views_page() -> Response:
        """the Views page: who sees whom as what (viz/rt_admin/views.html)"""
        return await asset_response(runtime, ADMIN, "views.html")

    @route("/api/docs", methods=["GET"])
    @declare(api.DOCS_PAGE)
    async def docs_page() -> Response:
        """the API page: every operation of /openapi.json (viz/rt_admin/apidocs.html)"""
        return await asset_response(runtime, ADMIN, "apidocs.html")

    @route("/openapi.json", methods=["GET"])
    @declare(api.OPENAPI)
    async def openapi() -> JSON:
        """the OpenAPI 3.1 document of every route, from the running app"""
        return build_document(current_app, runtime)

    @route("/viz/<mod>/", methods=["GET"], endpoint="asset_root")
    @route("/viz/<mod>/<path:rest>", methods=["GET"], endpoint="asset")
    async def asset(mod: str, rest: str = "") -> Response:
        """page assets of a module"""
        return await asset_response(runtime, mod, rest)
