"""Checking a compose request: every field at once, before anything is created.

Rules:
1. ``check_compose`` is synchronous and changes nothing: it returns a ``ComposePlan`` or
   raises ``ValidationFailed`` with every failing field (generic fields here, module
   parameters by the module's ``config_errors``: an unknown key, then ``validate_config``).
2. A pool id or name is taken while its pool is starting, too (``PoolManager.reserve``), so
   two requests for the same id cannot both pass.
3. Module parameters given as YAML text are read by ``cluster.ground.safeyaml`` within
   ``CONFIG_LIMITS`` (64 KiB, no aliases): small enough to parse on the event loop in a few
   milliseconds, and a refusal is a ``config`` field error (``ValidationFailed``), never a
   hang. Every YAML
   complaint says where: a parse error its line and column, a module parameter's error the
   line and column its key was written at (``line 2, column 1: unknown parameter ...``).
4. Every identity field is text, checked as written (nothing is stripped): a pool id by
   ``PoolId.parse``, a pool query by ``parse_routing``, a pool name by ``name_error``: 1 to
   ``MAX_NAME`` printable characters (``str.isprintable``: no control, format or separator
   character but the ASCII space), no space at either end (names are looked up as written),
   no comma (member lists are comma-separated). A field the caller found bad already is
   reported with the caller's reason and not checked again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cluster.ground.errors import BadRequest, ValidationFailed
from cluster.ground.ids import ADMIN_POOL_ID, PoolId
from cluster.ground.safeyaml import KeyMarks, Limits, YamlError, load_marked

from .module import Module
from .peers import parse_routing
from .pools import PoolManager

__all__ = ["CONFIG_LIMITS", "MAX_NAME", "ComposePlan", "check_compose", "name_error"]

CONFIG_LIMITS = Limits(max_bytes=64 << 10, max_depth=16, max_nodes=10_000)
MAX_NAME = 64  # characters of a pool name (and of a core's target name)


def name_error(name: object) -> str | None:
    """Why ``name`` cannot name a pool (rule 4), or None when it can."""
    if not isinstance(name, str):
        return "must be text"
    if name == "":
        return "required"
    if len(name) > MAX_NAME:
        return f"at most {MAX_NAME} characters, not {len(name)}"
    if not name.isprintable():
        return "printable characters only (no control, format or line characters)"
    if name != name.strip():
        return "no space at the start or the end"
    if "," in name:
        return "no comma (member lists are comma-separated)"
    return None


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
    bad = set(errs)  # checked by the caller already (rule 4)
    module = None if "mod_name" in bad else _check_module(modules, request["mod_name"], errs)
    if "pool_name" not in bad:
        _check_name(pools, request["pool_name"], errs)
    pid = None if "pool_id" in bad else _check_pool_id(pools, request["pool_id"], errs)
    if "pool_query" not in bad:
        try:
            parse_routing(request["pool_query"])
        except BadRequest as exc:
            errs["pool_query"] = exc.message
    cfg, marks = _config(request["config"], errs)
    if module is not None and "config" not in errs:
        errs.update(_placed(module.config_errors(cfg), marks))
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
        shown = mod_name if len(mod_name) <= 40 else f"{mod_name[:40]}..."
        errs["mod_name"] = f"module '{shown}' is not loaded (loaded: {', '.join(modules)})"
    elif mod_name == "rt_admin":
        errs["mod_name"] = "rt_admin has one pool, the admin pool 1.0: the runtime itself"
    return module


def _check_name(pools: PoolManager, pool_name: str, errs: dict[str, str]) -> None:
    if (why := name_error(pool_name)) is not None:
        errs["pool_name"] = why
    elif (other := pools.name_owner(pool_name)) is not None:
        errs["pool_name"] = f"a pool named '{pool_name}' exists already ({other})"


def _check_pool_id(pools: PoolManager, pool_id: str, errs: dict[str, str]) -> PoolId | None:
    if pool_id == "":
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


def _config(
    config: Mapping[str, Any] | str | None, errs: dict[str, str]
) -> tuple[Mapping[str, Any], KeyMarks]:
    """Module parameters: a mapping as given, or parsed from YAML text (with where each key
    was written)."""
    if config is None:
        return {}, {}
    if not isinstance(config, str):
        return config, {}
    try:
        parsed, marks = load_marked(config, CONFIG_LIMITS)
    except YamlError as exc:
        errs["config"] = f"not valid YAML: {exc}"
        return {}, {}
    if parsed is None:
        return {}, {}
    if not isinstance(parsed, Mapping):
        errs["config"] = "must be a YAML mapping of module parameters"
        return {}, {}
    return parsed, {str(k): v for k, v in marks.items()}


def _placed(errors: Mapping[str, str], marks: KeyMarks) -> dict[str, str]:
    """Module errors by key, each prefixed with where its key was written in the YAML."""
    out = {}
    for key, why in errors.items():
        if key in marks:
            line, column = marks[key]
            why = f"line {line}, column {column}: {why}"
        out[key] = why
    return out
