"""Member changes on a running array: add a data or parity member, take one out of service,
replace a failed one and let the ``recover`` task rebuild onto it.

Rules:
1. One member change at a time per array (``SafeBdevContainer.member_change``): a request
   that arrives while another runs is refused (409) and changes nothing.
2. Every field is checked before anything changes; a refused request changes nothing.
3. A change that would leave more members out of service than the parity level is refused
   (409, ``Conflict``). The check is made again after the new device is made and claimed (a
   member may have failed meanwhile), right before the roster changes, with no checkpoint in
   between; a change refused then gives back the region and the device it made, on this
   node or on a peer (``devices`` rule 5).
4. A replaced member's region is freed on its old device when that device still answers; a
   broken device keeps its space.
5. The changes work on a ``MemberHost`` (what they use of the array's container, which
   ``SafeBdevContainer`` satisfies), so this module does not import the container's.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from typing import Any, Protocol

from cluster.ground.errors import BadRequest, Conflict, NotFound, ValidationFailed
from cluster.ground.ids import PoolId
from cluster.runtime import ModuleContext
from cluster.storage import Allocator, ArrayMember, BlockStore, DeviceState, StripeArray

from ..members import MemberRequest

__all__ = ["MemberHost", "add_member", "member_of", "remove_member", "replace_member"]

log = logging.getLogger(__name__)
JSON = dict[str, Any]


class MemberHost(Protocol):
    """What a member change uses of its array's container (rule 5)."""

    max_failures: int
    allocator: Allocator

    @property
    def chunk(self) -> int:
        """Bytes of one chunk of the array."""

    def member_change(self, what: str) -> AbstractContextManager[StripeArray]:
        """The started array, while this change is the only one running (rule 1)."""

    def require_array(self) -> StripeArray: ...
    async def resolve_member(self, req: MemberRequest, needed: int) -> BlockStore: ...
    async def claim(self, bdev: BlockStore, slots: int) -> ArrayMember: ...
    def device_id(self, bdev: BlockStore) -> PoolId: ...
    async def release(self, pool_id: PoolId) -> bool: ...
    async def give_back(self, pool_id: PoolId) -> None: ...


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


async def _new_member(c: MemberHost, req: MemberRequest, slots: int) -> ArrayMember:
    """Make or find the device ``req`` names and claim the array's region on it."""
    bdev = await c.resolve_member(req, slots * c.chunk)
    try:
        return await c.claim(bdev, slots)
    except Exception:
        await c.give_back(c.device_id(bdev))
        raise


async def add_member(c: MemberHost, req: MemberRequest, as_parity: bool) -> JSON:
    """A parity member raises the parity level and recovers; a data member widens an empty
    array."""
    with c.member_change(f"add_member {req.member_name}") as array:
        if not as_parity and array.written:
            raise Conflict(f"array {array.name} holds data; a data member can only join it empty")
        member = await _new_member(c, req, array.slots)
        try:
            array = c.require_array()
            if as_parity:
                array.add_parity(member)
                c.max_failures = max(c.max_failures, array.m)
            else:
                array.add_data(member)
                c.allocator.grow(array.capacity)
        except Exception:
            await c.give_back(member.pool_id)
            raise
    return {
        "ok": True,
        "member_name": member.pool_name,
        "member_pool_id": str(member.pool_id),
        "as_parity": as_parity,
    }


async def remove_member(c: MemberHost, member_pool_id: str, was_faulty: bool) -> JSON:
    """Mark a member ``faulty`` (``was_faulty``) or ``removed``."""
    with c.member_change(f"remove_member {member_pool_id}") as array:
        try:
            position = _position(array, member_pool_id)
        except BadRequest as exc:
            if isinstance(exc, NotFound):
                raise
            raise BadRequest(f"bad member_pool_id '{member_pool_id}': {exc.message}") from None
        active = array.member(position).state == DeviceState.ACTIVE
        _check_tolerance(array, int(active), f"removing {array.member(position).pool_name}")
        array.set_state(position, DeviceState.FAULTY if was_faulty else DeviceState.REMOVED)
    return {"ok": True, "member_pool_id": member_pool_id}


def _failed_position(array: StripeArray, failed_pool_id: str) -> int:
    try:
        return _position(array, failed_pool_id)
    except NotFound as exc:
        raise ValidationFailed({"failed_pool_id": exc.message}) from None
    except BadRequest as exc:
        raise ValidationFailed({"failed_pool_id": f"unparseable: {exc.message}"}) from None


def _check_replace(array: StripeArray, position: int, old: ArrayMember) -> None:
    """Refuse when ``old`` left its position or replacing it would go below the parity."""
    current = array.member(position)
    if current.pool_id != old.pool_id:
        raise Conflict(f"member {old.pool_name} of array {array.name} was replaced meanwhile")
    active = int(current.state == DeviceState.ACTIVE)
    _check_tolerance(array, active, f"replacing {old.pool_name}")


async def replace_member(c: MemberHost, failed_pool_id: str, req: MemberRequest) -> JSON:
    """Put a fresh device in the failed member's position; it recovers from the others."""
    with c.member_change(f"replace_member of {failed_pool_id}") as array:
        position = _failed_position(array, failed_pool_id)
        old = array.member(position)
        _check_replace(array, position, old)
        member = await _new_member(c, req, array.slots)
        try:  # validate again, then change the roster: no checkpoint in between
            array = c.require_array()
            _check_replace(array, position, old)
        except Exception:
            await c.give_back(member.pool_id)
            raise
        array.join_fresh(position, member)
        array.recovery.generation += 1
        await c.release(old.pool_id)
    return {
        "ok": True,
        "failed_pool_id": failed_pool_id,
        "member_name": member.pool_name,
        "member_pool_id": str(member.pool_id),
    }
