"""The rt_cte_core module: its create form, the validation of a compose entry and the target
routes ``{pool}/targets``, ``register_target`` and ``unregister_target``.

A target's name, in a compose entry or a request, is a pool name (``name_error``) read as
written: a padded name is refused, never stripped to another target's name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster.api import (
    ApiParam,
    ApiSpec,
    FormSpec,
    HttpModule,
    ModuleRoute,
    RouteCall,
    apidoc,
    pool_id_field,
    pool_name_field,
)
from cluster.runtime import MAX_NAME, name_error, parse_period

from .container import CteCoreContainer

__all__ = ["MAX_TARGETS", "CteCoreModule"]

JSON = dict[str, Any]
MAX_TARGETS = 32  # targets of one core's compose entry

# The documented parameters and answers of the target routes (``/openapi.json``).
_NAME = ApiParam("name", apidoc.POOL_NAME, "the target's name (a pool name)", True)
_FIGURE, _COUNT = apidoc.nullable(apidoc.NUMBER), apidoc.INTEGER
_TARGET = apidoc.obj(
    {
        "name": apidoc.STRING,
        "score": _FIGURE,
        "remaining_space": _COUNT,
        "bytes_read": _COUNT,
        "bytes_written": _COUNT,
        "ops_read": _COUNT,
        "ops_written": _COUNT,
    },
    {
        "capacity": _COUNT,
        "bdev_pool_id": apidoc.POOL_ID,
        "attached": apidoc.BOOLEAN,
        "draining": apidoc.BOOLEAN,
    },
)
_TARGET_SPECS = {
    "targets": ApiSpec(
        params=(apidoc.POOL_PARAM,),
        body=apidoc.obj({"pool_id": apidoc.POOL_ID, "targets": apidoc.array(_TARGET)}),
        errors=apidoc.POOL_ERRORS,
    ),
    "register_target": ApiSpec(
        params=(
            apidoc.POOL_PARAM,
            _NAME,
            ApiParam("attach_pool_id", apidoc.POOL_ID, "an existing block-device-like pool"),
            ApiParam(
                "bdev_type",
                apidoc.one_of("", "ram", "file", "hbm", "pinned", "noop"),
                "type of a device made for the target (ram)",
            ),
            ApiParam("capacity", apidoc.SIZE, "size of a device made for the target"),
        ),
        body=apidoc.obj(
            {
                "ok": {"const": True},
                "name": apidoc.STRING,
                "bdev_pool_id": apidoc.POOL_ID,
                "attached": apidoc.BOOLEAN,
            }
        ),
        errors=apidoc.POOL_ERRORS,
        fields=True,
    ),
    "unregister_target": ApiSpec(
        params=(apidoc.POOL_PARAM, _NAME),
        body=apidoc.obj({"ok": {"const": True}, "name": apidoc.STRING}),
        errors={**apidoc.POOL_ERRORS, 404: "no such pool, or no target of that name"},
    ),
}


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _targets_ok(targets: Any) -> bool:
    """A list of at most ``MAX_TARGETS`` mappings with a name, every value text or a number."""
    return (
        isinstance(targets, list)
        and len(targets) <= MAX_TARGETS
        and all(
            isinstance(t, Mapping)
            and _scalar(t.get("name"))
            and name_error(str(t.get("name"))) is None
            and all(isinstance(k, str) and _scalar(v) for k, v in t.items())
            for t in targets
        )
    )


class CteCoreModule(HttpModule):
    mod_name = "rt_cte_core"
    title = "Storage-target core"
    container_class = CteCoreContainer
    suggest_base = 700
    config_keys = ("targets", "rescore_period_s")

    def create_form(self) -> FormSpec:
        return FormSpec(
            self.mod_name,
            self.title,
            (pool_name_field(), pool_id_field(self.suggestion())),
            note="Register storage targets on the core's page once it exists.",
        )

    def validate_config(self, config: Mapping[str, Any]) -> dict[str, str]:
        errors: dict[str, str] = {}
        targets = config.get("targets")
        if targets is not None and not _targets_ok(targets):
            errors["targets"] = (
                f"must be a list of at most {MAX_TARGETS} mappings, each with a name (1 to "
                f"{MAX_NAME} printable characters), whose values are text or numbers"
            )
        try:
            parse_period(config.get("rescore_period_s", 1.0))
        except ValueError as exc:
            errors["rescore_period_s"] = str(exc)
        return errors

    def action_routes(self) -> list[ModuleRoute]:
        return [
            ModuleRoute(
                "GET",
                "{pool}/targets",
                self._targets,
                "Registered storage targets with score and capacity",
                _TARGET_SPECS["targets"],
            ),
            ModuleRoute(
                "POST",
                "{pool}/register_target",
                self._register,
                "Register a storage target (fields: name; bdev_type and capacity, or "
                "attach_pool_id)",
                _TARGET_SPECS["register_target"],
            ),
            ModuleRoute(
                "POST",
                "{pool}/unregister_target",
                self._unregister,
                "Remove a target from placement (fields: name)",
                _TARGET_SPECS["unregister_target"],
            ),
        ]

    async def _targets(self, call: RouteCall) -> JSON:
        core = self.pool_of(call, CteCoreContainer)
        return await core.monitor("targets", {})  # type: ignore[no-any-return]

    async def _register(self, call: RouteCall) -> JSON:
        return await self.pool_of(call, CteCoreContainer).register_target(call.params)

    async def _unregister(self, call: RouteCall) -> JSON:
        return await self.pool_of(call, CteCoreContainer).unregister_target(
            call.params.get("name", "")
        )

    def demo_entries(self) -> list[JSON]:
        return [
            {
                "mod_name": self.mod_name,
                "pool_name": "demo_cte",
                "targets": [
                    {"name": "ram0", "bdev_type": "ram", "capacity": "1M"},
                    {"name": "array", "attach_pool_name": "demo_array"},
                ],
            }
        ]
