"""The rt_safe_bdev module: its create form, the validation of a compose entry (every bad
field at once) and the member routes ``{pool}/add_member``, ``replace_member`` and
``remove_member``.

Every module parameter is checked strictly, whatever JSON or YAML type it arrives as:
``max_failures`` a whole number from 0 to 64 (not a bool, not a float, no spaces),
``chunk_size`` a power of two from 512 bytes to 1M, ``members`` and ``parity_members`` a
comma-separated string or a list of names, the periods ``parse_period``'s range (10 ms to 1 h),
``recover_pace_s`` (seconds per step of a recovery, at most 100 steps) a number from 0 to 1.
Any other key is refused (``config_keys``).
The routes' flags (``as_parity``, ``was_faulty``) are ``RouteCall.flag`` booleans: ``maybe``
is refused before anything changes, never read as false.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from cluster.api import (
    ApiParam,
    ApiSpec,
    FormField,
    FormSpec,
    HttpModule,
    ModuleRoute,
    RouteCall,
    apidoc,
    pool_id_field,
    pool_name_field,
)
from cluster.ground.errors import BadRequest
from cluster.ground.parse import ParseError, int_value, parse_int, size_value
from cluster.runtime import parse_period

from ..members import MemberRequest, member_names
from ..remote import split_member
from ..rt_bdev import BdevContainer
from .container import DEFAULT_CHUNK, SafeBdevContainer
from .knobs import auto_replace_of, pace_of
from .member_ops import member_of

__all__ = ["SafeBdevModule"]

JSON = dict[str, Any]


MAX_FAILURES = 64
MAX_SEED = (1 << 63) - 1
MIN_CHUNK, MAX_CHUNK = 512, 1 << 20  # bytes

# The documented parameters and answers of the member routes (``/openapi.json``).
_OK, _TEXT = {"const": True}, apidoc.STRING
_POOL_ID = apidoc.POOL_ID
_FLAG = apidoc.one_of("", "true", "false", "1", "0", "yes", "no", "on", "off")  # any case
_NEW_MEMBER = (
    ApiParam(
        "member_name",
        apidoc.POOL_NAME,
        "an existing free rt_bdev pool, or the name of one to make",
        True,
    ),
    ApiParam("capacity", apidoc.SIZE, "size of a device made for the member"),
    ApiParam("bdev_type", apidoc.one_of("", "file", "ram"), "type of a made device (file)"),
    ApiParam(
        "node_id",
        doc="the node that holds the member (default: this one); a peer's rt_bdev pool is "
        "found there by name, or made there with capacity and bdev_type",
    ),
)
_MEMBER_SPECS = {
    "add_member": ApiSpec(
        params=(
            apidoc.POOL_PARAM,
            *_NEW_MEMBER,
            ApiParam("as_parity", _FLAG, "a parity member (else data)"),
        ),
        body=apidoc.obj(
            {
                "ok": _OK,
                "member_name": _TEXT,
                "member_pool_id": _POOL_ID,
                "as_parity": apidoc.BOOLEAN,
            }
        ),
        errors=apidoc.POOL_ERRORS,
        fields=True,
    ),
    "replace_member": ApiSpec(
        params=(
            apidoc.POOL_PARAM,
            ApiParam("failed_pool_id", _POOL_ID, required=True),
            *_NEW_MEMBER,
        ),
        body=apidoc.obj(
            {"ok": _OK, "failed_pool_id": _TEXT, "member_name": _TEXT, "member_pool_id": _POOL_ID}
        ),
        errors=apidoc.POOL_ERRORS,
        fields=True,
    ),
    "durability": ApiSpec(
        params=(
            apidoc.POOL_PARAM,
            ApiParam("op", apidoc.one_of("write", "check"), "write records, or check them", True),
            ApiParam("count", doc="records to write (write)"),
            ApiParam("size", doc="bytes of each record (write)"),
            ApiParam("seed", doc="the records' bytes are drawn from it (write)"),
        ),
        body=apidoc.obj(
            {},
            {
                "acknowledged": apidoc.INTEGER,
                "failed": apidoc.INTEGER,
                "records": apidoc.INTEGER,
                "checked": apidoc.INTEGER,
                "lost_count": apidoc.INTEGER,
                "lost": {"type": "array"},
            },
        ),
        errors=apidoc.POOL_ERRORS,
    ),
    "remove_member": ApiSpec(
        params=(
            apidoc.POOL_PARAM,
            ApiParam("member_pool_id", _POOL_ID, required=True),
            ApiParam("was_faulty", _FLAG, "mark it faulty (else removed)"),
        ),
        body=apidoc.obj({"ok": _OK, "member_pool_id": _TEXT}),
        errors=apidoc.POOL_ERRORS,
    ),
}


def _int_field(raw: Any, low: int, high: int) -> int | None:
    try:
        return int_value(raw, low=low, high=high)
    except ParseError:
        return None


def _names(config: Mapping[str, Any], key: str, errors: dict[str, str]) -> list[str]:
    try:
        return member_names(config.get(key))
    except ValueError as exc:
        errors[key] = str(exc)
        return []


def _chunk(config: Mapping[str, Any], errors: dict[str, str]) -> int:
    try:
        chunk = size_value(config.get("chunk_size", DEFAULT_CHUNK), low=MIN_CHUNK, high=MAX_CHUNK)
    except ParseError:
        chunk = 0
    if chunk == 0 or chunk & (chunk - 1):
        errors["chunk_size"] = "must be a power of two from 512 bytes to 1M"
        return DEFAULT_CHUNK
    return chunk


class SafeBdevModule(HttpModule):
    mod_name = "rt_safe_bdev"
    title = "Safe block device (EC array)"
    container_class = SafeBdevContainer
    suggest_base = 850
    api_fields = {
        "max_failures": ApiParam(
            "max_failures",
            {"type": "string", "pattern": "^(0|[1-9][0-9]?)$"},
            f"member failures the array survives, 0 to {MAX_FAILURES} (1)",
        ),
        "members": ApiParam(
            "members",
            {"type": "string", "pattern": "^[^,]+(,[^,]+)*$"},
            "comma-separated names of existing rt_bdev pools; name@node is node's pool",
            True,
        ),
    }
    config_keys = (
        "members",
        "parity_members",
        "max_failures",
        "chunk_size",
        "recover_period_s",
        "scrub_period_s",
        "recover_pace_s",
        "auto_replace_after_s",
    )

    def create_form(self) -> FormSpec:
        return FormSpec(
            self.mod_name,
            self.title,
            (
                pool_name_field(),
                pool_id_field(self.suggestion()),
                FormField(
                    "max_failures",
                    "Max failures",
                    default="1",
                    help="simultaneous member failures the array survives",
                ),
                FormField(
                    "members",
                    "Data members",
                    required=True,
                    placeholder="bdev_a, bdev_b, bdev_c",
                    help="comma-separated names of EXISTING bdev pools (create them with the "
                    "Block device form first; name@node for another node's pool); max_failures "
                    "parity members are created for them here",
                ),
            ),
        )

    def form_to_compose(self, params: Mapping[str, str]) -> tuple[JSON, dict[str, str]]:
        """The form's fields; ``recover_pace_s`` too when the request gives it (the form
        leaves it out: the default suits a person watching)."""
        config = {
            "members": params.get("members", ""),
            "max_failures": params.get("max_failures", "") or "1",
        }
        if params.get("recover_pace_s", "") != "":
            config["recover_pace_s"] = params["recover_pace_s"]
        return config, {}

    def _member_errors(self, names: list[str], chunk: int) -> list[str]:
        msgs: list[str] = []
        for i, name in enumerate(names):
            try:
                local, node_id = split_member(name)
            except BadRequest as exc:
                msgs.append(exc.message)
                continue
            found = self.runtime.pools.by_name(local)
            if name in names[:i]:
                msgs.append(f"'{name}' is listed twice")
            elif node_id is not None and node_id != self.runtime.node_id:
                continue  # a peer's device: found when the array starts (``devices`` rule 1)
            elif found is None:
                msgs.append(f"no pool named '{name}' exists")
            elif not isinstance(found, BdevContainer) or found.closed:
                msgs.append(f"'{name}' exists but is not a rt_bdev pool")
            elif (array := member_of(self.runtime, found.info.pool_id)) is not None:
                msgs.append(f"'{name}' is a member of array '{array}' already")
            elif found.largest_free < chunk:
                msgs.append(f"'{name}' has no free space left")
        return msgs

    def validate_config(self, config: Mapping[str, Any]) -> dict[str, str]:
        errors: dict[str, str] = {}
        max_failures = _int_field(config.get("max_failures", 1), 0, MAX_FAILURES)
        if max_failures is None:
            errors["max_failures"] = f"must be a whole number from 0 to {MAX_FAILURES}"
        chunk = _chunk(config, errors)
        names = _names(config, "members", errors)
        parity = _names(config, "parity_members", errors)
        if "members" in errors:
            pass
        elif msgs := self._member_errors(names, chunk):
            errors["members"] = "; ".join(msgs)
        elif not names:
            errors["members"] = "at least one existing bdev pool name is required"
        if "parity_members" in errors:
            pass
        elif msgs := self._member_errors(parity, chunk):
            errors["parity_members"] = "; ".join(msgs)
        elif set(parity) & set(names):
            errors["parity_members"] = "a pool cannot be a data and a parity member"
        elif max_failures is not None and len(parity) > max_failures:
            errors["parity_members"] = f"more parity members than max_failures ({max_failures})"
        for key in ("recover_period_s", "scrub_period_s"):
            try:
                parse_period(config.get(key, 1.0))
            except ValueError as exc:
                errors[key] = str(exc)
        try:
            pace_of(config)
        except ValueError as exc:
            errors["recover_pace_s"] = str(exc)
        try:
            auto_replace_of(config)
        except ValueError as exc:
            errors["auto_replace_after_s"] = str(exc)
        if not errors and max_failures is not None and len(names) <= max_failures:
            errors["max_failures"] = "needs more data members than tolerated failures"
        return errors

    def create_api(self) -> ApiSpec:
        """The form's fields, ``recover_pace_s``, and ``data_members`` in the answer."""
        spec = super().create_api()
        pace = ApiParam("recover_pace_s", doc="seconds per recovery step, 0 to 1 (0.05)")
        composed = apidoc.obj(
            {"ok": _OK}, {"pool_name": _TEXT, "pool_id": _POOL_ID, "data_members": apidoc.INTEGER}
        )
        return replace(spec, params=(*spec.params, pace), body=composed)

    def create_result(self, body: JSON, config: Mapping[str, Any]) -> JSON:
        return {**body, "data_members": len(member_names(config.get("members")))}

    def action_routes(self) -> list[ModuleRoute]:
        return [
            ModuleRoute(
                "POST",
                "{pool}/add_member",
                self._add_member,
                "Add a data or parity member bdev (fields: member_name[, capacity, bdev_type, "
                "node_id, as_parity])",
                _MEMBER_SPECS["add_member"],
            ),
            ModuleRoute(
                "POST",
                "{pool}/replace_member",
                self._replace_member,
                "Replace a failed member with a fresh bdev and recover onto it (fields: "
                "failed_pool_id, member_name, capacity[, bdev_type, node_id])",
                _MEMBER_SPECS["replace_member"],
            ),
            ModuleRoute(
                "POST",
                "{pool}/durability",
                self._durability,
                "Write checksummed records and keep the acknowledged ones (op=write, count, "
                "size, seed), or read every one back (op=check): lost writes are named",
                _MEMBER_SPECS["durability"],
            ),
            ModuleRoute(
                "POST",
                "{pool}/remove_member",
                self._remove_member,
                "Take a member out of service (fields: member_pool_id[, was_faulty])",
                _MEMBER_SPECS["remove_member"],
            ),
        ]

    async def _durability(self, call: RouteCall) -> JSON:
        array = self.pool_of(call, SafeBdevContainer)
        op = call.require("op")
        if op == "check":
            return await array.ledger.check(array)
        if op != "write":
            raise BadRequest(f"op is 'write' or 'check', not '{op[:40]}'")
        try:
            count, size, seed = (
                parse_int(call.params.get(k, d), low=0, high=MAX_SEED, what=k)
                for k, d in (("count", "100"), ("size", "4096"), ("seed", "0"))
            )
        except ParseError as exc:
            raise BadRequest(str(exc)) from None
        return await array.ledger.write(array, count, size, seed)

    async def _add_member(self, call: RouteCall) -> JSON:
        array = self.pool_of(call, SafeBdevContainer)
        as_parity = call.flag("as_parity")
        return await array.add_member(MemberRequest.from_params(call.params), as_parity)

    async def _replace_member(self, call: RouteCall) -> JSON:
        array = self.pool_of(call, SafeBdevContainer)
        failed = call.params.get("failed_pool_id", "")
        return await array.replace_member(failed, MemberRequest.from_params(call.params))

    async def _remove_member(self, call: RouteCall) -> JSON:
        array = self.pool_of(call, SafeBdevContainer)
        member = call.require("member_pool_id")
        return await array.remove_member(member, call.flag("was_faulty"))

    def demo_entries(self) -> list[JSON]:
        return [
            {
                "mod_name": self.mod_name,
                "pool_name": "demo_array",
                "members": "demo_m0,demo_m1,demo_m2",
                "parity_members": "demo_m3",
                "max_failures": 1,
            }
        ]
