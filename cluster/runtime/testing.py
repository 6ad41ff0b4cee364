"""Fakes of what the runtime reads and calls, for tests without a cluster: a membership (with
the SWIM statistics the dashboard's ``/metrics`` reads) and the peers.

    rt = Runtime(settings, 0, membership=FakeMembership.of(3))
    peers = FakePeers(rt)          # installs itself as rt.peers
    peers.hang(2)                  # node 2 never answers: forwards to it time out (503)

A real node answers a forwarded monitor by running the admin monitor of its own runtime; the
fake answers with ``answer(node_id, request)``, where ``request`` is the RPC frame the node
would send (by default the same body shape, for that id).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import trio

from cluster.errors import PeerUnreachable

from .membership import MemberLike
from .runtime import Runtime

__all__ = ["FakeMember", "FakeMembership", "FakePeers", "FakeStatistics"]

JSON = dict[str, Any]


@dataclass(slots=True)
class FakeMember:
    node_id: int
    host: str = "127.0.0.1"
    port: int = 9413
    state: str = "alive"
    incarnation: int = 0


@dataclass(frozen=True, slots=True)
class FakeStatistics:
    """The fields of ``swim.SwimStatistics`` the dashboard's ``/metrics`` reads."""

    members_up: int = 0
    members_total: int = 0
    health_score: int = 0
    probes: int = 0
    probe_failures: int = 0
    suspicions: int = 0
    refutations: int = 0
    pushpulls: int = 0
    refused_incarnation: int = 0
    refused_new_member: int = 0
    refused_address: int = 0
    epochs: int = 0
    sent_packets: Mapping[str, int] = field(default_factory=dict)
    recv_packets: Mapping[str, int] = field(default_factory=dict)
    sent_bytes: Mapping[str, int] = field(default_factory=dict)
    recv_bytes: Mapping[str, int] = field(default_factory=dict)
    dropped: Mapping[str, int] = field(default_factory=dict)


class FakeMembership:
    """A host table the test edits directly; the leader is the alive member with lowest id."""

    def __init__(self, members: list[FakeMember], stats: FakeStatistics | None = None) -> None:
        self.table = {m.node_id: m for m in members}
        self.stats = stats

    @classmethod
    def of(cls, n: int, *, dead: tuple[int, ...] = ()) -> FakeMembership:
        return cls(
            [FakeMember(i, port=9413 + i, state="dead" if i in dead else "alive") for i in range(n)]
        )

    def members(self) -> list[Any]:
        return [self.table[k] for k in sorted(self.table)]

    def leader_id(self) -> int | None:
        alive = [m.node_id for m in self.members() if m.state == "alive"]
        return alive[0] if alive else None

    def statistics(self) -> FakeStatistics:
        if self.stats is None:
            up = sum(m.state == "alive" for m in self.table.values())
            return FakeStatistics(members_up=up, members_total=len(self.table))
        return self.stats


class FakePeers:
    """The peers as seen by ``Runtime.forward``: per peer, answer, hang or refuse."""

    def __init__(self, runtime: Runtime, answer: Callable[[int, JSON], Any] | None = None) -> None:
        self.runtime = runtime
        self.answer = answer or self._default_answer
        self.calls: list[tuple[int, JSON]] = []
        self.in_flight = 0
        self._hang: set[int] = set()
        self._refuse: set[int] = set()
        self.delay = 0.0  # seconds before an answer
        runtime.peers = self

    def hang(self, node_id: int) -> None:
        self._hang.add(node_id)

    def refuse(self, node_id: int) -> None:
        self._refuse.add(node_id)

    def _default_answer(self, node_id: int, request: JSON) -> Any:
        if request.get("k") == "monitor":
            return {"node_id": node_id, "query": request.get("query"), "params": request["params"]}
        return {"node_id": node_id, "frame": request}

    async def monitor(self, member: MemberLike, query: str, params: Mapping[str, str]) -> JSON:
        request = {"k": "monitor", "query": query, "params": dict(params)}
        answer: JSON = await self._call(member, request)
        return answer

    async def pool_monitor(
        self, member: MemberLike, pool_id: str, query: str, params: Mapping[str, str]
    ) -> Any:
        request = {"k": "pool_monitor", "pool_id": pool_id, "query": query, "params": dict(params)}
        return await self._call(member, request)

    async def _call(self, member: MemberLike, request: JSON) -> Any:
        node_id = member.node_id
        self.calls.append((node_id, request))
        self.in_flight += 1
        try:
            if node_id in self._refuse:
                raise PeerUnreachable("[Errno 111] Connection refused")
            if node_id in self._hang:
                await trio.sleep_forever()
            if self.delay:
                await trio.sleep(self.delay)
            return self.answer(node_id, request)
        finally:
            self.in_flight -= 1
