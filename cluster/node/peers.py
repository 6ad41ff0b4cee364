"""How this node's runtime reaches its peers: ``cluster.runtime.Peers`` over the node RPC.

Rules:
1. Every call goes through the one client, ``rpc_call``: a transport failure is a
   ``PeerUnreachable``, a remote refusal is the remote ``ApiError``.
2. A peer this node's fault injection blocks is cut off: the request is dropped, as a
   partition would drop it, so the call waits out its timeout (the runtime's own bound
   usually ends the wait first) and then fails with ``PeerUnavailable``.
3. Each call is bounded by ``timeout`` seconds (the forward timeout) as a backstop; the
   runtime bounds every forward itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

import trio

import swim
from cluster.ground.errors import PeerUnavailable, PeerUnreachable
from cluster.rpc import Block, Call, Compose, Monitor, PoolMonitor, rpc_call
from cluster.runtime import FORWARD_TIMEOUT, BlockCall, MemberLike

__all__ = ["RpcPeers"]


class RpcPeers:
    """The runtime's ``Peers``, and the node's way to send any request to a member."""

    def __init__(self, faults: swim.Faults | None = None, timeout: float = FORWARD_TIMEOUT) -> None:
        self.faults = faults
        self.timeout = timeout  # seconds

    async def call(self, member: MemberLike, request: Call, *, through_faults: bool = False) -> Any:
        """Send ``request`` to ``member``; the body of its reply. A peer this node's injected
        faults block gets nothing (the caller times out) unless ``through_faults``."""
        if (
            not through_faults
            and self.faults is not None
            and self.faults.is_blocked(member.node_id)
        ):
            await trio.sleep(self.timeout)  # a partition drops the request: the caller times out
            raise PeerUnavailable(f"node {member.node_id} is cut off")
        return await rpc_call(member.host, member.port, request, self.timeout)

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
        body = await self.call(member, Monitor(query, dict(params)), through_faults=through_faults)
        if not isinstance(body, dict):
            raise PeerUnreachable(f"node {member.node_id} answered a monitor that is not a map")
        return body

    async def pool_monitor(
        self, member: MemberLike, pool_id: str, query: str, params: Mapping[str, str]
    ) -> Any:
        """The monitor answer of ``member``'s container of ``pool_id``."""
        return await self.call(member, PoolMonitor(pool_id, query, dict(params)))

    async def block(self, member: MemberLike, call: BlockCall) -> Any:
        """One block operation on ``member``'s device."""
        return await self.call(
            member, Block(**{f.name: getattr(call, f.name) for f in fields(call)})
        )

    async def compose(self, member: MemberLike, entries: Sequence[Mapping[str, Any]]) -> Any:
        """Compose pools on ``member``."""
        return await self.call(member, Compose(tuple(dict(e) for e in entries)))
