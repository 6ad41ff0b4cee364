"""Checking a compose request: every field at once, before anything is created.

Rules:
1. ``check_compose`` is synchronous and changes nothing: it returns a ``ComposePlan`` or
   raises ``ValidationFailed`` with every failing field (generic fields here, module
   parameters by the module's ``validate_config``).
2. A pool id or name is taken while its pool is starting, too (``PoolManager.reserve``), so
   two requests for the same id cannot both pass.
3. Module parameters given as YAML text are read by ``cluster.safeyaml`` within
   ``CONFIG_LIMITS`` (64 KiB, no aliases): small enough to parse on the event loop in a few
   milliseconds, and a refusal is a ``config`` field error (400), never a hang.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cluster.errors import BadRequest, ValidationFailed
from cluster.ids import ADMIN_POOL_ID, PoolId
from cluster.safeyaml import Limits, YamlError, load

from .module import Module
from .pools import PoolManager

__all__ = ["CONFIG_LIMITS", "ROUTINGS", "ComposePlan", "check_compose"]

CONFIG_LIMITS = Limits(max_bytes=64 << 10, max_depth=16, max_nodes=10_000)

ROUTINGS = ("local", "broadcast", "dynamic", "direct_id", "direct_hash", "range", "physical")


@dataclass(frozen=True, slots=True)
class ComposePlan:
    module: Module
    pool_id: PoolId
    config: Mapping[str, Any]


def check_compose(
    pools: PoolManager,
    modules: Mapping[str, Module],
    request: Mapping[str, Any],
    errors: Mapping[str, str] | None = None,
) -> ComposePlan:
    """``request`` holds mod_name, pool_name, pool_id, pool_query and config (a mapping, or
    YAML text); ``errors`` are failures the caller found already."""
    errs: dict[str, str] = dict(errors or {})
    mod_name = request["mod_name"]
    module = _check_module(modules, mod_name, errs)
    _check_name(pools, request["pool_name"], errs)
    pid = _check_pool_id(pools, request["pool_id"], errs)
    pool_query = request["pool_query"]
    if pool_query and pool_query.partition(":")[0] not in ROUTINGS:
        errs["pool_query"] = f"unknown routing '{pool_query}'"
    cfg = _config(request["config"], errs)
    if module is not None and "config" not in errs:
        errs.update(module.validate_config(cfg))
    if errs:
        raise ValidationFailed(errs)
    assert module is not None
    assert pid is not None
    return ComposePlan(module, pid, cfg)


def _check_module(modules: Mapping[str, Module], mod_name: str, errs: dict[str, str]) -> Any:
    module = modules.get(mod_name)
    if not mod_name:
        errs["mod_name"] = "required"
    elif module is None:
        errs["mod_name"] = f"module '{mod_name}' is not loaded (loaded: {', '.join(modules)})"
    elif mod_name == "rt_admin":
        errs["mod_name"] = "rt_admin has one pool, the admin pool 1.0: the runtime itself"
    return module


def _check_name(pools: PoolManager, pool_name: str, errs: dict[str, str]) -> None:
    if not pool_name.strip():
        errs["pool_name"] = "required"
    elif (other := pools.name_owner(pool_name)) is not None:
        errs["pool_name"] = f"a pool named '{pool_name}' exists already ({other})"


def _check_pool_id(pools: PoolManager, pool_id: str, errs: dict[str, str]) -> PoolId | None:
    if not pool_id.strip():
        errs["pool_id"] = "required (use the suggested id)"
        return None
    try:
        pid = PoolId.parse(pool_id)
    except BadRequest as exc:
        errs["pool_id"] = exc.message
        return None
    if pid.is_null:
        errs["pool_id"] = "0.0 is the null pool id"
    elif pid == ADMIN_POOL_ID:
        errs["pool_id"] = "1.0 is the admin pool's id"
    elif (owner := pools.id_owner(pid)) is not None:
        errs["pool_id"] = f"pool id {pid} is taken by '{owner}'"
    return pid


def _config(config: Mapping[str, Any] | str | None, errs: dict[str, str]) -> Mapping[str, Any]:
    """Module parameters: a mapping as given, or parsed from YAML text."""
    if config is None:
        return {}
    if not isinstance(config, str):
        return config
    try:
        parsed = load(config, CONFIG_LIMITS)
    except YamlError as exc:
        errs["config"] = f"not valid YAML: {exc}"
        return {}
    if parsed is None:
        return {}
    if not isinstance(parsed, Mapping):
        errs["config"] = "must be a YAML mapping of module parameters"
        return {}
    return parsed
