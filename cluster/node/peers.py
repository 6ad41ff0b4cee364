"""How this node's runtime reaches its peers: ``cluster.runtime.Peers`` over the node RPC.

Rules:
1. Every call goes through the one client, ``rpc_call``, bounded by ``timeout`` seconds (the
   forward timeout): the one bound on a forward (``cluster.runtime.peers`` rule 2). Silence is
   ``timed_out`` (``<what> timed out after 5s``), a transport failure ``unreachable`` (naming
   the node), a remote refusal the remote ``ApiError``.
2. A peer this node's fault injection blocks, or cuts one way (a TCP connection needs both
   ways), is cut off: the request is dropped, as a partition would drop it, so the call waits
   out its timeout and then fails as a silent peer's would. ``observe`` (the views matrix's
   channel) is not cut off. A request from a peer that cuts this node is still answered on
   one host (only the peer knows its cut; in namespaces its route drops the answer).
3. Every call is recorded (``forwards()``): its start and end on trio's clock, the peer, what
   it was and how it ended (``ok``, ``timeout``, ``unreachable``, ``refused``: the peer's own
   error, ``cancelled``: the caller gave up first); the last ``FORWARDS_KEPT`` that ended,
   and those still open (end None). The whole-node simulator's ``forward_bounded`` judges
   them; on a real node they cost one small record per call.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import trio

import swim
from cluster.ground.errors import ApiError, PeerUnreachable
from cluster.rpc import Block, Call, Compose, Monitor, PeerTimeout, PoolMonitor, rpc_call
from cluster.runtime import FORWARD_TIMEOUT, BlockCall, MemberLike, timed_out, unreachable

__all__ = ["FORWARDS_KEPT", "Forward", "RpcPeers"]

FORWARDS_KEPT = 4096  # rule 3: ended calls kept


@dataclass(frozen=True, slots=True)
class Forward:
    """One call to a peer (rule 3); ``end`` None while it is open."""

    start: float
    end: float | None
    peer: int
    what: str
    outcome: str


class RpcPeers:
    """The runtime's ``Peers``, and the node's way to send any request to a member."""

    def __init__(self, faults: swim.Faults | None = None, timeout: float = FORWARD_TIMEOUT) -> None:
        self.faults = faults
        self.timeout = timeout  # seconds: the bound on every call (rule 1)
        self._ended: deque[Forward] = deque(maxlen=FORWARDS_KEPT)  # rule 3
        self._open: dict[int, Forward] = {}
        self._numbers = itertools.count()

    def forwards(self) -> list[Forward]:
        """Rule 3: the calls kept that ended, then those still open."""
        return [*self._ended, *self._open.values()]

    async def call(
        self, member: MemberLike, request: Call, what: str, *, through_faults: bool = False
    ) -> Any:
        """Send ``request`` (``what`` names it in errors) to ``member``; the body of its
        reply, within ``timeout`` seconds. A peer this node's injected faults block gets
        nothing (rule 2) unless ``through_faults``. Recorded (rule 3)."""
        number = next(self._numbers)
        started = Forward(trio.current_time(), None, member.node_id, what, "open")
        self._open[number] = started
        outcome = "cancelled"
        try:
            body = await self._call(member, request, what, through_faults)
            outcome = "ok"
            return body
        except ApiError as exc:
            outcome = _outcome(exc)
            raise
        finally:
            del self._open[number]
            self._ended.append(
                Forward(started.start, trio.current_time(), member.node_id, what, outcome)
            )

    async def _call(
        self, member: MemberLike, request: Call, what: str, through_faults: bool
    ) -> Any:
        if (
            not through_faults
            and self.faults is not None
            and (self.faults.is_blocked(member.node_id) or self.faults.is_cut(member.node_id))
        ):
            await trio.sleep(self.timeout)  # a partition drops the request: silence
            raise timed_out(what, self.timeout)
        try:
            return await rpc_call(member.host, member.port, request, self.timeout)
        except PeerTimeout:
            raise timed_out(what, self.timeout) from None
        except PeerUnreachable as exc:
            raise unreachable(member.node_id, what, exc) from None

    async def monitor(
        self, member: MemberLike, query: str, params: Mapping[str, str]
    ) -> dict[str, Any]:
        """One admin monitor task on ``member``."""
        return await self._monitor(member, query, params, through_faults=False)

    async def observe(
        self, member: MemberLike, query: str, params: Mapping[str, str]
    ) -> dict[str, Any]:
        """``monitor`` through this node's injected faults (the views matrix's channel)."""
        return await self._monitor(member, query, params, through_faults=True)

    async def _monitor(
        self, member: MemberLike, query: str, params: Mapping[str, str], *, through_faults: bool
    ) -> dict[str, Any]:
        request = Monitor(query, dict(params))
        body = await self.call(member, request, f"monitor '{query}'", through_faults=through_faults)
        if not isinstance(body, dict):
            raise PeerUnreachable(f"node {member.node_id} answered a monitor that is not a map")
        return body

    async def pool_monitor(
        self, member: MemberLike, pool_id: str, query: str, params: Mapping[str, str]
    ) -> Any:
        """The monitor answer of ``member``'s container of ``pool_id``."""
        request = PoolMonitor(pool_id, query, dict(params))
        return await self.call(member, request, f"monitor '{query}'")

    async def block(self, member: MemberLike, call: BlockCall) -> Any:
        """One block operation on ``member``'s device."""
        request = Block(**{f.name: getattr(call, f.name) for f in fields(call)})
        return await self.call(member, request, f"block {call.op} on {call.pool[:40]}")

    async def compose(self, member: MemberLike, entries: Sequence[Mapping[str, Any]]) -> Any:
        """Compose pools on ``member``."""
        request = Compose(tuple(dict(e) for e in entries))
        return await self.call(member, request, f"compose on node {member.node_id}")


def _outcome(exc: ApiError) -> str:
    """Rule 3: how a failed call ended, from the error ``call`` raised."""
    if isinstance(exc, PeerUnreachable):
        return "unreachable"
    return "timeout" if exc.status == 503 and "timed out" in exc.message else "refused"
