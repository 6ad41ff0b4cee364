"""Module blueprints: the routes under ``/api/mod/<mod_name>/`` of every loaded module.

Rules:
1. One blueprint per module, named by its ``mod_name`` (``/api/routes`` reads the registering
   module from the blueprint name). rt_admin's blueprint also holds the node routes
   (``dashboard.admin``).
2. The routes are the module's own (``cluster.api.routes_of``: the conventional ``pools`` and
   ``create`` come from ``cluster.api.HttpModule``); the dashboard mounts them and knows no
   more.
3. A route's ``{name}`` segments match one path segment each; the handler receives a
   ``RouteCall`` with the merged parameters and the path arguments. Handlers stay thin.
4. A route's ``ModuleRoute.api`` goes on its view for the API document (``dashboard.routes``).
"""

from __future__ import annotations

import re
from typing import Any

from quart import Blueprint

from cluster.api import ModuleRoute, RouteCall, routes_of
from cluster.runtime import Module, RuntimeView

from .params import request_params
from .routes import declare

__all__ = ["add_module_routes", "module_blueprint", "to_rule"]

JSON = dict[str, Any]
_SEGMENT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def to_rule(path: str) -> str:
    """``{pool}/add_member`` -> ``<pool>/add_member`` (werkzeug: one segment per name)."""
    return _SEGMENT.sub(r"<\1>", path)


def _view(runtime: RuntimeView, route: ModuleRoute) -> Any:
    async def view(**path_args: str) -> JSON:
        params = await request_params()
        return await route.handler(RouteCall(runtime, params, path_args))

    view.__doc__ = route.doc
    return declare(route.api)(view)  # its declaration for /openapi.json (None: flagged there)


def add_module_routes(bp: Blueprint, runtime: RuntimeView, module: Module) -> None:
    """Register ``module``'s routes on ``bp``."""
    prefix = f"/api/mod/{module.mod_name}/"
    for route in routes_of(module):
        method = route.method.upper()
        path = route.path.strip("/")
        endpoint = re.sub(r"\W", "_", f"mod_{method}_{path}").lower()
        bp.add_url_rule(prefix + to_rule(path), endpoint, _view(runtime, route), methods=[method])


def module_blueprint(runtime: RuntimeView, module: Module) -> Blueprint:
    """The blueprint of a module other than rt_admin."""
    bp = Blueprint(module.mod_name, __name__)
    add_module_routes(bp, runtime, module)
    return bp
