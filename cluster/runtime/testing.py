"""Fakes of what the runtime reads and calls, for tests without a cluster: a membership (with
the SWIM statistics the dashboard's ``/metrics`` reads, a history and faults) and the peers.

    rt = Runtime(settings, 0, membership=FakeMembership.of(3))
    rt.membership.change(2, "dead", cause="test")   # table and history change together
    rt.membership.faults.blocked.add(1)             # what the faults query shows
    peers = FakePeers(rt)          # installs itself as rt.peers
    peers.hang(2)                  # node 2 never answers: forwards to it time out

A real node answers a forwarded monitor by running the admin monitor of its own runtime; the
fake answers with ``answer(node_id, request)``, where ``request`` is the RPC frame the node
would send (by default the same body shape, for that id). An answer may be awaitable (another
runtime's own handler, say): the fake awaits it within the same bound.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from cluster.ground.errors import PeerUnreachable

from .membership import MemberLike
from .peers import FORWARD_TIMEOUT, BlockCall, Peers, timed_out, unreachable

__all__ = [
    "FakeEvent",
    "FakeFaults",
    "FakeMember",
    "FakeMembership",
    "FakePeers",
    "FakeStatistics",
]

JSON = dict[str, Any]


class Wired(Protocol):
    """A runtime whose peers can be set (``Runtime`` is one)."""

    peers: Peers | None


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
    incarnation: int = 0
    health_score: int = 0
    loop_lag: float = 0.0  # seconds
    loop_lag_max: float = 0.0
    probes: int = 0
    probe_failures: int = 0
    suspicions: int = 0
    refutations: int = 0
    pushpulls: int = 0
    refused_incarnation: int = 0
    refused_new_member: int = 0
    refused_address: int = 0
    epochs: int = 0
    slow_ticks: int = 0
    sent_packets: Mapping[str, int] = field(default_factory=dict)
    recv_packets: Mapping[str, int] = field(default_factory=dict)
    sent_bytes: Mapping[str, int] = field(default_factory=dict)
    recv_bytes: Mapping[str, int] = field(default_factory=dict)
    dropped: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FakeEvent:
    """One numbered change of the fake table (the shape of ``swim.HistoryEntry.as_dict``)."""

    seq: int
    wall: float
    mono: float
    observer: int
    subject: int
    old: str | None
    new: str
    incarnation: int
    cause: str

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(slots=True)
class FakeFaults:
    """The fields of ``swim.Faults`` the runtime reads; the test sets them directly."""

    loss_pct: float = 0.0
    delay_ms: float = 0.0
    blocked: set[int] = field(default_factory=set)
    peer_loss_pct: dict[int, float] = field(default_factory=dict)
    peer_delay_ms: dict[int, float] = field(default_factory=dict)
    cut: set[int] = field(default_factory=set)
    clock_offset: float = 0.0
    clock_rate: float = 1.0

    @property
    def active(self) -> bool:
        return bool(
            self.loss_pct
            or self.delay_ms
            or self.blocked
            or self.peer_loss_pct
            or self.peer_delay_ms
            or self.cut
            or self.clock_offset
            or self.clock_rate != 1.0
        )


class FakeMembership:
    """A host table the test edits directly; the leader is the alive member with lowest id.

    ``change`` edits a member and records the change in the history (``events``, ``since``)
    as the SWIM handle does; ``capacity`` bounds the history like the real ring."""

    def __init__(
        self,
        members: list[FakeMember],
        stats: FakeStatistics | None = None,
        *,
        observer: int = 0,
        capacity: int = 10_000,
    ) -> None:
        self.table = {m.node_id: m for m in members}
        self.stats = stats
        self.faults = FakeFaults()
        self.observer = observer
        self.capacity = capacity
        self.history: list[FakeEvent] = []
        self.last_seq = 0
        self._since: dict[int, float] = {}  # kept apart from the history, as the real ring does
        self.described: dict[int, dict[str, Any]] = {}  # memberlist names, as a test sets them

    def change(
        self, node_id: int, state: str, *, cause: str = "test", wall: float = 0.0, mono: float = 0.0
    ) -> FakeEvent:
        """Set ``node_id``'s state (adding the member if new) and record the change."""
        m = self.table.get(node_id)
        old = None if m is None else m.state
        if m is None:
            m = self.table[node_id] = FakeMember(node_id, port=9413 + node_id, state=state)
        m.state = state
        self.last_seq += 1
        ev = FakeEvent(
            self.last_seq, wall, mono, self.observer, node_id, old, state, m.incarnation, cause
        )
        self._since[node_id] = wall
        self.history = [*self.history[-(self.capacity - 1) :], ev] if self.capacity > 1 else [ev]
        return ev

    def events(self, after: int, limit: int) -> tuple[Sequence[FakeEvent], int, int]:
        first = self.history[0].seq if self.history else self.last_seq + 1
        page = [e for e in self.history if e.seq > after][:limit]
        return page, page[-1].seq if page else after, max(0, first - 1 - after)

    def since(self, member_id: int) -> float | None:
        return self._since.get(member_id)

    def describe(self, member_id: int) -> dict[str, Any] | None:
        return self.described.get(member_id)

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
    """The peers as the runtime sees them: per peer, answer, hang or refuse; like the node's,
    every call bounded by ``timeout`` seconds (``peers`` rule 2)."""

    def __init__(self, runtime: Wired, answer: Callable[[int, JSON], Any] | None = None) -> None:
        self.runtime = runtime
        self.answer = answer or self._default_answer
        self.calls: list[tuple[int, JSON]] = []
        self.in_flight = 0
        self._hang: dict[int, trio.Event] = {}  # set: the silence ends as the bound would
        self._refuse: set[int] = set()
        self.delay = 0.0  # seconds before an answer
        self.timeout = FORWARD_TIMEOUT  # seconds: the bound on every call
        runtime.peers = self

    def hang(self, node_id: int) -> None:
        """Calls to ``node_id`` get silence: each ends at its ``timeout``."""
        self._hang.setdefault(node_id, trio.Event())

    def time_out_now(self, node_id: int) -> None:
        """Calls to hung ``node_id``, waiting and to come, end now as their bound would end
        them (``timed out after <timeout>s``): a test need not wait out a long bound."""
        self._hang.setdefault(node_id, trio.Event()).set()

    def refuse(self, node_id: int) -> None:
        self._refuse.add(node_id)

    def _default_answer(self, node_id: int, request: JSON) -> Any:
        if request.get("k") == "monitor":
            return {"node_id": node_id, "query": request.get("query"), "params": request["params"]}
        return {"node_id": node_id, "frame": request}

    async def monitor(self, member: MemberLike, query: str, params: Mapping[str, str]) -> JSON:
        request = {"k": "monitor", "query": query, "params": dict(params)}
        answer: JSON = await self._call(member, request, f"monitor '{query}'")
        return answer

    async def observe(self, member: MemberLike, query: str, params: Mapping[str, str]) -> JSON:
        request = {"k": "monitor", "query": query, "params": dict(params), "observe": True}
        answer: JSON = await self._call(member, request, f"monitor '{query}'")
        return answer

    async def pool_monitor(
        self, member: MemberLike, pool_id: str, query: str, params: Mapping[str, str]
    ) -> Any:
        request = {"k": "pool_monitor", "pool_id": pool_id, "query": query, "params": dict(params)}
        return await self._call(member, request, f"monitor '{query}'")

    async def block(self, member: MemberLike, call: BlockCall) -> Any:
        request = {"k": "block", "pool": call.pool, "op": call.op, "offset": call.offset}
        request |= {"size": call.size, "data": call.data, "writer": call.writer}
        request |= {"epoch": call.epoch}
        return await self._call(member, request, f"block {call.op} on {call.pool[:40]}")

    async def compose(self, member: MemberLike, entries: Sequence[Mapping[str, Any]]) -> Any:
        request = {"k": "control", "op": "compose", "entries": entries}
        return await self._call(member, request, f"compose on node {member.node_id}")

    async def _call(self, member: MemberLike, request: JSON, what: str) -> Any:
        node_id = member.node_id
        self.calls.append((node_id, request))
        self.in_flight += 1
        try:
            with trio.move_on_after(self.timeout):
                if node_id in self._refuse:
                    exc = PeerUnreachable("[Errno 111] Connection refused")
                    raise unreachable(node_id, what, exc)
                if (silence := self._hang.get(node_id)) is not None:
                    await silence.wait()
                    raise timed_out(what, self.timeout)
                if self.delay:
                    await trio.sleep(self.delay)
                answer = self.answer(node_id, request)
                return await answer if inspect.isawaitable(answer) else answer
            raise timed_out(what, self.timeout)
        finally:
            self.in_flight -= 1
