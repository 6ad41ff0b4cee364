"""A module's HTTP face: its create form, its routes and how they describe themselves.

Rules:
1. ``HttpModule`` is a ``cluster.runtime.Module`` with its HTTP half: the runtime loads it
   like any module (the registry's dotted paths) and never calls what is here; the dashboard
   mounts ``routes_of(module)`` and the API document reads each route's ``ApiSpec``.
2. Every module has the conventional ``GET pools``; one with a create form also
   ``GET create`` (the form spec) and ``POST create`` (validate or create, through the
   runtime's ``compose``, so validation stays in one place); its own ``action_routes``
   follow. ``POST create``'s fields are the create form's (``create_api``), its links lead to
   the pool's monitor, its destroy and the module's own ``{pool}`` routes.
3. A module that is only a ``cluster.runtime.Module`` (an add-on written without this half)
   has the conventional ``GET pools`` alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from cluster.ground.errors import NotFound
from cluster.ground.ids import PoolId
from cluster.runtime import Container, Module

from . import answers
from .apidoc import ACTION_PARAM, ApiParam, ApiSpec, Link, form_params
from .forms import FormSpec
from .routes import ModuleRoute, RouteCall, answering_pool_gone

__all__ = ["HttpModule", "routes_of"]

JSON = dict[str, Any]
C = TypeVar("C", bound=Container)
MONITOR_LINK = "GET /api/pools/{pool}/monitor"
DESTROY_LINK = "POST /api/pools/{pool}/destroy"


def _pools_route(module: Module) -> ModuleRoute:
    """``GET pools``: this node's pools of ``module``."""
    mod_name, ctx = module.mod_name, module.runtime

    async def pools(call: RouteCall) -> JSON:
        return {
            "pools": [
                {"pool_id": str(c.info.pool_id), "pool_name": c.info.pool_name}
                for c in ctx.pools.of_module(mod_name)
            ]
        }

    return ModuleRoute(
        "GET", "pools", pools, f"this node's {mod_name} pools", ApiSpec(body=answers.MODULE_POOLS)
    )


def routes_of(module: Module) -> list[ModuleRoute]:
    """Every route of ``module`` (rule 3 for a module without an HTTP half)."""
    if isinstance(module, HttpModule):
        return module.routes()
    return [answering_pool_gone(_pools_route(module))]


class HttpModule(Module):
    """A loadable module with its create form and routes. Subclasses override what they need."""

    # Create-form fields as /openapi.json describes them, where the form alone does not say
    # enough (others are text, selects enums; see ``apidoc.form_params``)
    api_fields: ClassVar[Mapping[str, ApiParam]] = {}

    def create_form(self) -> FormSpec | None:
        """The typed create form, or None when the module registers none (ask
        ``has_create_form`` to know if there is one). Building it reserves nothing."""
        return None

    @property
    def has_create_form(self) -> bool:
        return type(self).create_form is not HttpModule.create_form

    def form_to_compose(self, params: Mapping[str, str]) -> tuple[JSON, dict[str, str]]:
        """Typed-form parameters -> (module config, errors by field); form modules override."""
        return {}, {}

    def routes(self) -> list[ModuleRoute]:
        """Every route of the module: the conventional ones, then ``action_routes``."""
        mod = self.mod_name
        routes = [_pools_route(self)]
        if self.has_create_form:
            routes += [
                ModuleRoute(
                    "GET",
                    "create",
                    self._create_spec,
                    f"the {mod} form spec",
                    ApiSpec(body=answers.FORM_SPEC),
                ),
                ModuleRoute(
                    "POST",
                    "create",
                    self._create,
                    f"validate or create a {mod} pool",
                    self.create_api(),
                ),
            ]
        return [answering_pool_gone(r) for r in [*routes, *self.action_routes()]]

    def create_api(self) -> ApiSpec:
        """``POST create``'s parameters (the create form's fields, ``action``, ``pool_query``)
        and answers; a module whose ``form_to_compose`` reads more fields adds them here."""
        form = self.create_form()
        extra = (ApiParam("pool_query", doc="routing of the pool (default local)"), ACTION_PARAM)
        return ApiSpec(
            params=form_params(form.fields if form else (), extra, overrides=self.api_fields),
            body=answers.COMPOSED,
            errors={409: "the pool could not start (nothing is left behind)"},
            fields=True,
            links=self.create_links(),
        )

    def create_links(self) -> tuple[Link, ...]:
        """From a created pool to the operations on it: its monitor, its destroy, and the
        module's own ``{pool}`` routes."""
        pool = {"pool": "$response.body#/pool_id"}
        mod = self.mod_name
        links = [
            Link("monitor", MONITOR_LINK, {**pool, "query": "stats"}),
            Link("destroy", DESTROY_LINK, pool),
        ]
        for route in self.action_routes():
            if route.path.startswith("{pool}/"):
                name = route.path.removeprefix("{pool}/")
                links.append(Link(name, f"{route.method} /api/mod/{mod}/{route.path}", pool))
        return tuple(links)

    def action_routes(self) -> list[ModuleRoute]:
        """The module's own routes, e.g. ``{pool}/add_member``."""
        return []

    def create_result(self, body: JSON, config: Mapping[str, Any]) -> JSON:
        """The success body of ``POST create``; modules may add fields."""
        return body

    def pool_of(self, call: RouteCall, cls: type[C]) -> C:
        """The container named by the route's ``{pool}``: 400 unparseable, 404 not ours."""
        text = call.path_args.get("pool", "")
        container = self.runtime.pools.find(PoolId.parse(text))
        if not isinstance(container, cls) or container.info.mod_name != self.mod_name:
            raise NotFound(f"no {self.mod_name} pool with id {text}")
        return container

    async def _create_spec(self, call: RouteCall) -> JSON:
        form = self.create_form()
        if form is None:
            raise NotFound(
                f"module {self.mod_name} registers no create form; use /api/pools/compose"
            )
        return form.to_json()

    async def _create(self, call: RouteCall) -> JSON:
        params = call.params
        config, errors = self.form_to_compose(params)
        action = params.get("action", "")
        if action not in ("", "validate", "create"):
            errors = {
                **errors,
                "action": f"unknown action '{action}' (use validate, or leave it out)",
            }
        validate = action == "validate"
        body = await self.runtime.compose(
            self.mod_name,
            params.get("pool_name", ""),
            params.get("pool_id", ""),
            config,
            pool_query=params.get("pool_query", "") or "local",
            validate_only=validate,
            errors=errors,
        )
        return body if validate else self.create_result(body, config)
