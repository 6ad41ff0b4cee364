"""How the runtime reaches other nodes, and the one decision of where a query is answered.

Rules:
1. ``target(node, own_id)`` is the only place that decides "answer here or forward": the
   dashboard's admission (before a request is parsed), its per-node routes and the runtime's
   monitor all call it. ``local``, ``self`` and the node's own id are here; anything else is
   a peer (checked against the host table later).
2. The runtime asks peers through a ``Peers`` (the node implements it over the node RPC;
   ``cluster.runtime.testing.FakePeers`` in tests), which bounds every call, once, by its
   ``timeout`` (the forward timeout, 5 s), so no wait on a peer is longer: silence is
   ``timed_out`` (``<what> timed out after 5s``), a transport failure ``unreachable`` (a
   ``PeerUnreachable`` naming the node); a remote ``ApiError`` comes back as itself.
3. A routing (a monitor's ``routing``, a pool's ``pool_query``) is parsed once, strictly, by
   ``parse_routing``: its forms are fixed, every number is canonical ASCII and ranged, and
   anything else (``range:-5:10``, ``dynamic:x``, `` broadcast``) is a BadRequest before
   any node is asked.
4. A node named that is neither local nor in the host table is an ``UnknownNode`` (a
   ``BadRequest`` that keeps the name as written, so the HTTP layer can say where to look).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cluster.ground.bounds import FORWARD_TIMEOUT
from cluster.ground.errors import BadRequest, PeerUnavailable, PeerUnreachable
from cluster.ground.parse import MAX_NODE_ID, ParseError, parse_int, shown

from .membership import MemberLike

__all__ = [
    "BLOCK_IO",
    "BLOCK_OPS",
    "FORWARD_TIMEOUT",
    "LOCAL_NAMES",
    "MAX_RANGE_COUNT",
    "MAX_WRITER",
    "BlockCall",
    "Peers",
    "Routing",
    "UnknownNode",
    "is_local",
    "parse_routing",
    "routing_forwards",
    "routing_targets",
    "timed_out",
    "unreachable",
]

BLOCK_IO = 1 << 20  # bytes one block read or write between nodes moves (an array's run)
BLOCK_OPS = ("info", "allocate", "free", "read", "write", "destroy")  # a peer's device serves
MAX_WRITER = 128  # characters of an array's writer name (a device's ``made_for`` too)
LOCAL_NAMES = ("local", "self")
LOCAL_ROUTINGS = ("", "local", "dynamic")
MAX_RANGE_COUNT = 4096  # nodes one range names: more than a cluster holds (rt_cluster: 1024)
MAX_HASH = (1 << 64) - 1  # a direct_hash is a 64-bit hash
ROUTING_FORMS = "local, broadcast, dynamic, direct_id:N, direct_hash:N, range:OFF:CNT or physical:N"


@dataclass(frozen=True, slots=True)
class BlockCall:
    """One operation on a node's block device ``pool`` (an id, or a name), for an array
    member there: ``op`` one of ``BLOCK_OPS``; ``offset``, ``size`` and ``data`` place it.
    ``writer`` names the array that asks (at most ``MAX_WRITER`` characters) and ``epoch`` its
    fence: a device refuses a write of a writer at an epoch below one it has seen (a write that
    lay in a paused node's socket must not land over a newer one). ``destroy`` gives back a
    device made for the writer's array, once nothing is allocated on it."""

    pool: str
    op: str
    offset: int = 0
    size: int = 0
    data: bytes = b""
    writer: str = ""
    epoch: int = 0


class UnknownNode(BadRequest):
    """A node id that is malformed or not in the host table (rule 4); ``node`` as written."""

    def __init__(self, node: str) -> None:
        super().__init__(
            f"unknown or malformed node id: {node} (use a node id from the host table, or 'local')"
        )
        self.node = node


def is_local(node: str, own_id: int) -> bool:
    """Whether a per-node query addressed to ``node`` is answered by this node."""
    return node in LOCAL_NAMES or node == str(own_id)


@dataclass(frozen=True, slots=True)
class Routing:
    """A parsed routing (a pool query): ``kind`` and its numbers. ``number`` is the node id of
    ``direct_id`` and ``physical``, the hash of ``direct_hash``, the offset of ``range`` (into
    the live members sorted by id); ``count`` is the range's number of nodes."""

    kind: str
    number: int = 0
    count: int = 0


def _number(text: str, routing: str, high: int, what: str, low: int = 0) -> int:
    try:
        return parse_int(text, low=low, high=high, what=what)
    except ParseError as exc:
        raise BadRequest(f"bad routing {shown(routing)}: {exc} (use {ROUTING_FORMS})") from None


def parse_routing(text: str) -> Routing:
    """The routing ``text`` names, strictly: one of the forms in ``ROUTING_FORMS`` (the empty
    text is ``local``), node ids from 0 to ``MAX_NODE_ID``, a hash from 0 to 2^64-1, a range's
    offset a node index and its count from 1 to ``MAX_RANGE_COUNT``; BadRequest otherwise."""
    kind, _, arg = text.partition(":")
    if text in ("", "local", "dynamic", "broadcast"):
        return Routing(text or "local")
    if kind in ("direct_id", "physical"):
        return Routing(kind, _number(arg, text, MAX_NODE_ID, "node id"))
    if kind == "direct_hash":
        return Routing(kind, _number(arg, text, MAX_HASH, "hash"))
    if kind == "range":
        off, _, cnt = arg.partition(":")
        offset = _number(off, text, MAX_NODE_ID, "range offset")
        return Routing(kind, offset, _number(cnt, text, MAX_RANGE_COUNT, "range count", 1))
    raise BadRequest(f"bad routing {shown(text)} (use {ROUTING_FORMS})")


def routing_forwards(routing: str) -> bool:
    """Whether a pool monitor with this routing may ask other nodes. Never raises: it reads
    the kind only (a malformed routing of a forwarding kind counts as a forward until its
    handler refuses it as a BadRequest, so nothing that reaches a peer escapes the count)."""
    return routing.partition(":")[0] not in LOCAL_ROUTINGS


def routing_targets(
    routing: str, own_id: int, alive: Sequence[int], resolve: Callable[[str], int]
) -> list[int]:
    """The node ids a pool monitor with ``routing`` asks (``alive``: live members' ids;
    ``resolve`` turns a node id into a known member's id or raises BadRequest). A routing
    that is malformed or names no live node is a BadRequest."""
    r = parse_routing(routing)
    alive = sorted(alive)
    if r.kind in ("local", "dynamic"):
        return [own_id]
    if r.kind in ("direct_id", "physical"):
        return [resolve(str(r.number))]
    if r.kind == "broadcast":
        return alive
    if r.kind == "direct_hash":
        targets = [alive[r.number % len(alive)]] if alive else []
    else:
        targets = alive[r.number : r.number + r.count]
    if not targets:
        raise BadRequest(f"routing {shown(routing)} names none of the {len(alive)} live nodes")
    return targets


def timed_out(what: str, timeout: float) -> PeerUnavailable:
    """The error of a call to a peer (``what``: ``monitor 'workers'``, ...) that got no answer
    within ``timeout`` seconds (rule 2)."""
    return PeerUnavailable(f"{what} timed out after {timeout:g}s")


def unreachable(node_id: int, what: str, exc: Exception) -> PeerUnreachable:
    """The error of a call to node ``node_id`` whose transport failed with ``exc`` (rule 2)."""
    return PeerUnreachable(f"node {node_id} did not answer {what}: {exc}")


class Peers(Protocol):
    """The node RPC as the runtime sees it: one admin monitor task, or one pool monitor, on
    ``member``, each call within ``timeout`` seconds (rule 2). Raises ``timed_out`` when the
    peer is silent, ``unreachable`` when the transport fails, the remote ``ApiError`` when
    the peer refuses."""

    @property
    def timeout(self) -> float:
        """Seconds: the one bound on every call (the forward timeout)."""
        ...

    async def monitor(
        self, member: MemberLike, query: str, params: Mapping[str, str]
    ) -> dict[str, Any]: ...

    async def observe(
        self, member: MemberLike, query: str, params: Mapping[str, str]
    ) -> dict[str, Any]:
        """``monitor`` on the observer's own channel, which injected faults do not cut: how
        the views matrix (``cluster.runtime.views``) reads what a peer behind a partition
        believes."""
        ...

    async def pool_monitor(
        self, member: MemberLike, pool_id: str, query: str, params: Mapping[str, str]
    ) -> Any: ...

    async def block(self, member: MemberLike, call: BlockCall) -> Any:
        """One operation on ``member``'s block device: an array member on a peer."""
        ...

    async def compose(self, member: MemberLike, entries: Sequence[Mapping[str, Any]]) -> Any:
        """Compose pools on ``member`` (a compose section's entries): ``{"results": [...]}``."""
        ...
