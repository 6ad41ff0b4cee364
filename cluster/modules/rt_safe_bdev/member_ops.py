"""Member changes on a running array: add a data or parity member, take one out of service,
replace a failed one and let the ``recover`` task rebuild onto it.

Rules:
1. Every field is checked before anything changes; a refused request changes nothing.
2. A change that would leave more members out of service than the parity level is refused
   (409, ``Conflict``).
3. A replaced member's region is freed on its old device when that device still answers; a
   broken device keeps its space.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from cluster.errors import BadRequest, Conflict, NotFound, ValidationFailed
from cluster.ids import PoolId
from cluster.runtime import ModuleContext
from cluster.storage import ArrayMember, Extent, MemberState, StripeArray

from ..members import MemberRequest, find_block_store

if TYPE_CHECKING:
    from .container import SafeBdevContainer

__all__ = ["add_member", "member_of", "remove_member", "replace_member"]

log = logging.getLogger(__name__)
JSON = dict[str, Any]


def member_of(ctx: ModuleContext, pool_id: PoolId) -> str | None:
    """The name of the open array ``pool_id`` is a member of, if any."""
    for c in ctx.pools.of_module("rt_safe_bdev"):
        array = getattr(c, "array", None)
        if (
            isinstance(array, StripeArray)
            and not c.closed
            and array.position_of(pool_id) is not None
        ):
            return str(c.info.pool_name)
    return None


def _position(array: StripeArray, text: str) -> int:
    pool_id = PoolId.parse(text)
    position = array.position_of(pool_id)
    if position is None:
        raise NotFound(f"no member with pool id {pool_id} in array {array.name}")
    return position


def _check_tolerance(array: StripeArray, extra_out: int, what: str) -> None:
    if array.out_of_service() + extra_out > array.m:
        raise Conflict(
            f"{what} would leave {array.out_of_service() + extra_out} members out of service; "
            f"array {array.name} tolerates {array.m}"
        )


async def add_member(c: SafeBdevContainer, req: MemberRequest, as_parity: bool) -> JSON:
    """A parity member raises the parity level and recovers; a data member widens an empty
    array."""
    array = c.require_array()
    bdev = await c.resolve_member(req, array.slots * c.chunk)
    member = await c.claim(bdev, array.slots)
    if as_parity:
        array.add_parity(member)
        c.max_failures = max(c.max_failures, array.m)
    else:
        try:
            array.add_data(member)
        except Conflict:
            await bdev.free(Extent(member.base, array.slots * c.chunk))
            raise
        c.allocator.grow(array.capacity)
    return {
        "ok": True,
        "member_name": bdev.info.pool_name,
        "member_pool_id": str(bdev.info.pool_id),
        "as_parity": as_parity,
    }


async def remove_member(c: SafeBdevContainer, member_pool_id: str, was_faulty: bool) -> JSON:
    """Mark a member ``faulty`` (``was_faulty``) or ``removed``."""
    array = c.require_array()
    try:
        position = _position(array, member_pool_id)
    except BadRequest as exc:
        if isinstance(exc, NotFound):
            raise
        raise BadRequest(f"bad member_pool_id '{member_pool_id}': {exc.message}") from None
    active = array.member(position).state == MemberState.ACTIVE
    _check_tolerance(array, int(active), f"removing {array.member(position).pool_name}")
    array.set_state(position, MemberState.FAULTY if was_faulty else MemberState.REMOVED)
    return {"ok": True, "member_pool_id": member_pool_id}


async def replace_member(c: SafeBdevContainer, failed_pool_id: str, req: MemberRequest) -> JSON:
    """Put a fresh device in the failed member's position; it recovers from the others."""
    array = c.require_array()
    errors: dict[str, str] = {}
    position = None
    try:
        position = _position(array, failed_pool_id)
    except NotFound as exc:
        errors["failed_pool_id"] = exc.message
    except BadRequest as exc:
        errors["failed_pool_id"] = f"unparseable: {exc.message}"
    if position is None:
        raise ValidationFailed(errors)
    old = array.member(position)
    _check_tolerance(array, int(old.state == MemberState.ACTIVE), f"replacing {old.pool_name}")
    bdev = await c.resolve_member(req, array.slots * c.chunk)
    member = await c.claim(bdev, array.slots)
    array.set_member(
        position,
        ArrayMember(member.pool_name, member.pool_id, member.base, MemberState.RECOVERING),
    )
    array.recovery.generation += 1
    gone = find_block_store(c.runtime, old.pool_id)
    if gone is not None:
        try:
            await gone.free(Extent(old.base, array.slots * c.chunk))
        except Exception as exc:  # the old device may be broken: its space is its own
            log.info(
                "array %s: could not free %s on %s: %s", array.name, old.base, old.pool_name, exc
            )
    return {
        "ok": True,
        "failed_pool_id": failed_pool_id,
        "member_name": bdev.info.pool_name,
        "member_pool_id": str(bdev.info.pool_id),
    }
