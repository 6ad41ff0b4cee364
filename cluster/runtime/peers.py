"""How the runtime reaches other nodes, and the one decision of where a query is answered.

Rules:
1. ``target(node, own_id)`` is the only place that decides "answer here or forward": the
   dashboard's admission (before a request is parsed), its per-node routes and the runtime's
   monitor all call it. ``local``, ``self`` and the node's own id are here; anything else is
   a peer (checked against the host table later).
2. The runtime asks peers through a ``Peers`` (the node implements it over the node RPC;
   ``cluster.runtime.testing.FakePeers`` in tests). A transport failure is a
   ``PeerUnreachable``; a remote ``ApiError`` comes back as itself. The runtime alone bounds
   every call by its forward timeout (5 s), so no wait on a peer is longer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from cluster.errors import BadRequest

from .membership import MemberLike

__all__ = [
    "FORWARD_TIMEOUT",
    "LOCAL_NAMES",
    "Peers",
    "is_local",
    "routing_forwards",
    "routing_targets",
]

FORWARD_TIMEOUT = 5.0  # seconds: the bound on every forward
LOCAL_NAMES = ("local", "self")
LOCAL_ROUTINGS = ("", "local", "dynamic")


def is_local(node: str, own_id: int) -> bool:
    """Whether a per-node query addressed to ``node`` is answered by this node."""
    return node in LOCAL_NAMES or node == str(own_id)


def routing_forwards(routing: str) -> bool:
    """Whether a pool monitor with this routing may ask other nodes."""
    return routing.partition(":")[0] not in LOCAL_ROUTINGS


def routing_targets(
    routing: str, own_id: int, alive: Sequence[int], resolve: Callable[[str], int]
) -> list[int]:
    """The node ids a pool monitor with ``routing`` asks (``alive``: live members' ids;
    ``resolve`` turns a node argument into an id or raises BadRequest)."""
    alive = sorted(alive)
    kind, _, arg = routing.partition(":")
    try:
        if kind in ("local", "dynamic"):
            return [own_id]
        if kind == "broadcast":
            return alive
        if kind in ("direct_id", "physical"):
            return [resolve(arg)]
        if kind == "direct_hash":
            return [alive[int(arg) % len(alive)]]
        if kind == "range":
            off, cnt = arg.split(":")
            return alive[int(off) : int(off) + int(cnt)]
    except (ValueError, IndexError, ZeroDivisionError):
        pass
    raise BadRequest(
        f"bad routing '{routing}' (use local, broadcast, dynamic, direct_id:N, "
        "direct_hash:N, range:OFF:CNT or physical:N)"
    )


class Peers(Protocol):
    """The node RPC as the runtime sees it: one admin monitor task, or one pool monitor, on
    ``member``. Raises ``PeerUnreachable`` when the transport fails, the remote ``ApiError``
    when the peer refuses."""

    async def monitor(
        self, member: MemberLike, query: str, params: Mapping[str, str]
    ) -> dict[str, Any]: ...

    async def pool_monitor(
        self, member: MemberLike, pool_id: str, query: str, params: Mapping[str, str]
    ) -> Any: ...
