"""Module blueprints: the routes under ``/api/mod/<mod_name>/`` of every loaded module.

Rules:
1. One blueprint per module, named by its ``mod_name`` (``/api/routes`` reads the registering
   module from the blueprint name). rt_admin's blueprint also holds the node routes
   (``dashboard.admin``).
2. Every module gets the conventional ``GET pools``; a module with a create form also gets
   ``GET create`` (the form spec) and ``POST create`` (validate or create, through
   ``Runtime.compose``). A module's own ``routes()`` win over the conventional ones.
3. A route's ``{name}`` segments match one path segment each; the handler receives a
   ``RouteCall`` with the merged parameters and the path arguments. Handlers stay thin.
"""

from __future__ import annotations

import re
from typing import Any

from quart import Blueprint

from cluster.errors import NotFound
from cluster.modules.base import Module, ModuleRoute, RouteCall
from cluster.runtime import Runtime

from .params import request_params

__all__ = ["add_module_routes", "module_blueprint", "to_rule"]

JSON = dict[str, Any]
_SEGMENT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def to_rule(path: str) -> str:
    """``{pool}/add_member`` -> ``<pool>/add_member`` (werkzeug: one segment per name)."""
    return _SEGMENT.sub(r"<\1>", path)


def has_create_form(module: Module) -> bool:
    """Whether the module overrides ``create_form`` (without calling it: a form spec suggests
    a pool id, and every suggestion is used up)."""
    return type(module).create_form is not Module.create_form


def _conventional(module: Module) -> list[ModuleRoute]:
    mod = module.mod_name

    async def pools(call: RouteCall) -> JSON:
        return {
            "pools": [
                {"pool_id": str(c.info.pool_id), "pool_name": c.info.pool_name}
                for c in call.runtime.pools.of_module(mod)
            ]
        }

    async def form(call: RouteCall) -> JSON:
        spec = module.create_form()
        if spec is None:
            raise NotFound(f"module {mod} registers no create form; use /api/pools/compose")
        return spec.to_json()

    async def create(call: RouteCall) -> JSON:
        params = call.params
        config, errors = module.form_to_compose(params)
        action = params.get("action", "")
        errors = dict(errors)
        if action not in ("", "validate", "create"):
            errors["action"] = f"unknown action '{action}' (use validate, or leave it out)"
        body: JSON = await call.runtime.compose(
            mod,
            params.get("pool_name", ""),
            params.get("pool_id", ""),
            config,
            pool_query=params.get("pool_query", "") or "local",
            validate_only=action == "validate",
            errors=errors,
        )
        extend = getattr(module, "create_result", None)  # modules may add success fields
        if action != "validate" and callable(extend):
            body = extend(body, config)
        return body

    routes = [ModuleRoute("GET", "pools", pools, f"this node's {mod} pools")]
    if has_create_form(module):
        routes.append(ModuleRoute("GET", "create", form, f"the {mod} create form spec"))
        routes.append(ModuleRoute("POST", "create", create, f"validate or create a {mod} pool"))
    return routes


def _view(runtime: Runtime, route: ModuleRoute) -> Any:
    async def view(**path_args: str) -> JSON:
        params = await request_params()
        return await route.handler(RouteCall(runtime, params, path_args))

    view.__doc__ = route.doc
    return view


def add_module_routes(bp: Blueprint, runtime: Runtime, module: Module) -> None:
    """Register ``module``'s routes (its own, then the conventional ones) on ``bp``."""
    prefix = f"/api/mod/{module.mod_name}/"
    own = list(module.routes())
    taken = {(r.method.upper(), r.path.strip("/")) for r in own}
    extra = [r for r in _conventional(module) if (r.method, r.path) not in taken]
    for route in [*own, *extra]:
        method = route.method.upper()
        path = route.path.strip("/")
        endpoint = re.sub(r"\W", "_", f"mod_{method}_{path}").lower()
        bp.add_url_rule(prefix + to_rule(path), endpoint, _view(runtime, route), methods=[method])


def module_blueprint(runtime: Runtime, module: Module) -> Blueprint:
    """The blueprint of a module other than rt_admin."""
    bp = Blueprint(module.mod_name, __name__)
    add_module_routes(bp, runtime, module)
    return bp
