"""Block devices of this node: finding one by pool id, and picking the device for a new array
member: an existing rt_bdev pool by name, or a new one created from a name, a capacity and a
type (the reference's add/replace member fields).

Every field is checked before anything is created, and all bad fields are reported at once
(``ValidationFailed``). Fields are read as written, never stripped: a member name is a pool name
(``cluster.runtime.name_error``), a capacity strict size text (``bdev_config.size_bytes``), a
node id canonical digits. A created device gets a pool id suggested from 900; the caller is told it
created it, so it can destroy it again with the pool that asked for it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from cluster.ground.errors import ValidationFailed
from cluster.ground.ids import PoolId, parse_node_id
from cluster.runtime import ModuleContext, name_error
from cluster.storage import BlockStore

from .bdev_config import size_bytes
from .rt_bdev import BdevContainer

__all__ = [
    "MAX_MEMBERS",
    "MEMBER_BASE",
    "MemberRequest",
    "check_new_device",
    "find_block_store",
    "member_names",
    "resolve_member",
]

MEMBER_BASE = 900  # pool-id suggestions for auto-created member and target devices
MEMBER_TYPES = ("file", "ram")
MAX_MEMBERS = 128  # names in one list (an array has at most 128 data and 128 parity members)


def member_names(value: Any) -> list[str]:
    """Names from a comma-separated string or a list of names, blanks dropped; ValueError for
    any other value or more than ``MAX_MEMBERS`` names."""
    if value is None:
        return []
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list | tuple) and all(
        isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)) for v in value
    ):
        items = [str(v) for v in value]
    else:
        raise ValueError("must be a comma-separated string or a list of pool names")
    names = [n.strip() for n in items if n.strip()]
    if len(names) > MAX_MEMBERS:
        raise ValueError(f"at most {MAX_MEMBERS} names")
    return names


@dataclass(frozen=True, slots=True)
class MemberRequest:
    member_name: str
    capacity: str = ""
    bdev_type: str = ""
    node_id: str = ""

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> MemberRequest:
        return cls(
            params.get("member_name", ""),
            params.get("capacity", ""),
            params.get("bdev_type", ""),
            params.get("node_id", ""),
        )


async def resolve_member(
    runtime: ModuleContext,
    req: MemberRequest,
    needed: int,
    member_of: Callable[[PoolId], str | None],
    avoid: Collection[PoolId] = (),
) -> tuple[BdevContainer, bool]:
    """The device for ``req`` with ``needed`` free bytes, and whether it was created for it;
    ``member_of`` names the array a pool already belongs to; a device made here takes a pool
    id not in ``avoid`` (the array's members on other nodes)."""
    errors: dict[str, str] = {}
    if req.node_id != "" and parse_node_id(req.node_id) is None:
        errors["node_id"] = f"not a node id: '{req.node_id[:40]}'"
    elif req.node_id not in ("", str(runtime.node_id)):  # a peer's: the array asks it
        errors["node_id"] = f"node {req.node_id} is not this node ({runtime.node_id})"
    name = req.member_name
    why = name_error(name) if name else "required"
    existing = runtime.pools.by_name(name) if why is None else None
    bdev_type = req.bdev_type or "file"
    if why is not None:
        errors["member_name"] = why
    elif existing is not None:
        if not isinstance(existing, BdevContainer) or existing.closed:
            errors["member_name"] = f"'{name}' exists but is not a rt_bdev pool"
        elif (array := member_of(existing.info.pool_id)) is not None:
            errors["member_name"] = f"'{name}' is a member of array '{array}' already"
        elif existing.largest_free < needed:
            errors["member_name"] = (
                f"'{name}' has {existing.largest_free} bytes free; the array needs {needed}"
            )
    elif not req.capacity:
        errors["member_name"] = f"no pool named '{name}' exists; give a capacity to create it here"
    else:
        check_new_device(req, bdev_type, needed, errors)
    if errors:
        raise ValidationFailed(errors)
    if existing is not None:
        assert isinstance(existing, BdevContainer)
        return existing, False
    pool_id = runtime.pools.suggest(MEMBER_BASE)
    while pool_id in avoid:
        pool_id = runtime.pools.suggest(pool_id.major + 1)
    body = await runtime.compose(
        "rt_bdev",
        name,
        str(pool_id),
        {"bdev_type": bdev_type, "capacity": req.capacity},
    )
    created = runtime.pools.get(PoolId.parse(body["pool_id"]))
    assert isinstance(created, BdevContainer)
    return created, True


def check_new_device(
    req: MemberRequest, bdev_type: str, needed: int, errors: dict[str, str]
) -> None:
    """The type and capacity of a device to be made for ``req`` (here or on a peer), into
    ``errors`` by field."""
    if bdev_type not in MEMBER_TYPES:
        errors["bdev_type"] = "member bdevs here are 'file' or 'ram'"
    try:
        capacity = size_bytes(req.capacity)
    except ValueError as exc:
        errors["capacity"] = str(exc)
        return
    if capacity == 0:
        errors["capacity"] = "must be > 0"
    elif capacity < needed:
        errors["capacity"] = f"too small: the array needs {needed} bytes on each member"


def find_block_store(runtime: ModuleContext, pool_id: PoolId) -> BlockStore | None:
    """The open block-device-like container of ``pool_id`` on this node, or None."""
    container = runtime.pools.find(pool_id)
    if isinstance(container, BlockStore) and not container.closed:
        return container
    return None
