"""What every storage module's HTTP surface shares: ``pools``, ``create`` and pool lookup.

Rules:
1. ``GET pools`` answers ``{"pools": [{"pool_id", "pool_name"}]}`` for this module's pools.
2. ``GET create`` is the module's form spec; ``POST create`` maps the form to module parameters
   (``form_to_compose``) and goes through ``Runtime.compose`` like every other pool creation,
   with ``action=validate`` checking every field at once and creating nothing.
3. ``{pool}`` that does not parse is 400 (``PoolId.parse``); one that is not this module's open
   pool is 404 ``no <mod> pool with id <p>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from ..errors import NotFound
from ..ids import PoolId
from ..modules.base import Container, FormField, Module, ModuleRoute, RouteCall

__all__ = ["FormModule", "pool_id_field", "pool_name_field"]

JSON = dict[str, Any]
C = TypeVar("C", bound=Container)


def pool_name_field() -> FormField:
    return FormField("pool_name", "Pool name", required=True)


def pool_id_field(suggestion: str) -> FormField:
    return FormField(
        "pool_id",
        "Pool ID",
        required=True,
        default=suggestion,
        placeholder="800.0",
        help="<major>.<minor>; a free id is suggested",
    )


class FormModule(Module):
    """A module with a typed create form and per-pool action routes under ``{pool}/``."""

    def routes(self) -> list[ModuleRoute]:
        return [
            ModuleRoute("GET", "pools", self._pools, f"{self.title} pools on this node"),
            ModuleRoute("GET", "create", self._create_spec, f"Form spec for a new {self.title}"),
            ModuleRoute(
                "POST",
                "create",
                self._create,
                f"Validate (action=validate) or create a {self.title}",
            ),
            *self.action_routes(),
        ]

    def action_routes(self) -> list[ModuleRoute]:
        """The module's own ``{pool}/...`` routes."""
        return []

    def suggestion(self) -> str:
        """A free pool id for the form's default, from this module's base."""
        return str(self.runtime.pools.suggest(self.suggest_base))

    def create_result(self, body: JSON, config: Mapping[str, Any]) -> JSON:
        """The success body of ``POST create``; modules may add fields."""
        return body

    async def _pools(self, call: RouteCall) -> JSON:
        pools = self.runtime.pools.of_module(self.mod_name)
        return {
            "pools": [
                {"pool_id": str(c.info.pool_id), "pool_name": c.info.pool_name} for c in pools
            ]
        }

    async def _create_spec(self, call: RouteCall) -> JSON:
        form = self.create_form()
        if form is None:
            raise NotFound(f"module {self.mod_name} has no create form")
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

    def pool_of(self, call: RouteCall, cls: type[C]) -> C:
        """The container named by the route's ``{pool}``: 400 unparseable, 404 not ours."""
        text = call.path_args.get("pool", "")
        pool_id = PoolId.parse(text)
        container = self.runtime.pools.find(pool_id)
        if not isinstance(container, cls) or container.info.mod_name != self.mod_name:
            raise NotFound(f"no {self.mod_name} pool with id {text}")
        return container
