"""What a machine asks its driver to do, and the counters it keeps while doing its part.

Rules:
1. ``Output`` is the whole answer of one machine call: datagrams to send, TCP state exchanges
   to start, membership events to record. The driver (or the simulated network) carries it out.
2. ``Counters`` is mutable and owned by one machine; ``SwimStatistics`` is its frozen snapshot.
3. Drops are counted by reason; the reasons fall into a few classes that the statistics sum up:
   shed load (``RATE_REASONS``), failed authentication (``auth``), undecodable input
   (``MALFORMED_REASONS``), refused incarnation jumps (``refused_incarnation``), refused
   newcomers (``NEW_MEMBER_REASONS``: ``newcomers`` rules 1 and 2) and refused addresses
   (``refused_address``: ``newcomers`` rule 3).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .members import MemberEvent
from .messages import Message

__all__ = [
    "DROPPED",
    "MALFORMED_REASONS",
    "NEW_MEMBER_REASONS",
    "RATE_REASONS",
    "Counters",
    "Datagram",
    "Output",
    "SwimStatistics",
    "SyncRequest",
]

RATE_REASONS = frozenset({"rate_member", "rate_source", "rate_strangers", "relay_full"})
MALFORMED_REASONS = frozenset(
    {"oversize", "truncated", "version", "malformed", "unknown_type", "bad_field"}
)
NEW_MEMBER_REASONS = frozenset({"new_member_rate", "table_full"})


@dataclass(frozen=True, slots=True, init=False)
class Datagram:
    """A UDP packet for ``addr``, as the messages it holds (the door encodes them); ``dest``
    is the member id when known, ``kind`` its label, ``size`` its bytes in our own format,
    unsealed (``outbox`` rule 3; 0: not counted)."""

    addr: tuple[str, int]
    messages: tuple[Message, ...]
    dest: int | None
    kind: str
    size: int = 0

    def __init__(  # its own, so that it runs compiled (``native`` rule 4)
        self,
        addr: tuple[str, int],
        messages: tuple[Message, ...],
        dest: int | None,
        kind: str,
        size: int = 0,
    ) -> None:
        object.__setattr__(self, "addr", addr)
        object.__setattr__(self, "messages", messages)
        object.__setattr__(self, "dest", dest)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "size", size)


@dataclass(frozen=True, slots=True)
class SyncRequest:
    """Start a TCP push/pull with host:port (``join``: it is a join or re-join to a seed)."""

    host: str
    port: int
    dest: int | None
    join: bool


@dataclass(frozen=True, slots=True, init=False)
class Output:
    datagrams: tuple[Datagram, ...] = ()
    syncs: tuple[SyncRequest, ...] = ()
    events: tuple[MemberEvent, ...] = ()

    def __init__(  # its own, so that it runs compiled (``native`` rule 4)
        self,
        datagrams: tuple[Datagram, ...] = (),
        syncs: tuple[SyncRequest, ...] = (),
        events: tuple[MemberEvent, ...] = (),
    ) -> None:
        object.__setattr__(self, "datagrams", datagrams)
        object.__setattr__(self, "syncs", syncs)
        object.__setattr__(self, "events", events)


DROPPED = Output()
"""The answer to a packet refused before it was decoded: nothing changed, nothing to do."""


@dataclass(slots=True)
class Counters:
    """Running totals of one machine (and its driver's drops)."""

    sent_packets: Counter[str] = field(default_factory=Counter)
    sent_bytes: Counter[str] = field(default_factory=Counter)
    recv_packets: Counter[str] = field(default_factory=Counter)
    recv_bytes: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    probes: int = 0
    probe_failures: int = 0
    suspicions: int = 0
    refutations: int = 0
    pushpulls: int = 0
    arrived: int = 0  # every packet handed in, before any check
    epochs: int = 0  # new boot epochs taken to refute (membership rule 5)
    evicted: int = 0  # members held down long forgotten to make room (newcomers rule 2)
    slow_ticks: int = 0  # ticks that ran a probe timeout late (the driver's rule 7)

    def sent(self, kind: str, size: int) -> None:
        self.sent_packets[kind] += 1
        self.sent_bytes[kind] += size

    def received(self, kind: str, size: int) -> None:
        self.recv_packets[kind] += 1
        self.recv_bytes[kind] += size

    def drop(self, reason: str) -> None:
        self.dropped[reason] += 1

    def summary(self) -> dict[str, int]:
        """The headline counts: packets received, dropped by class, refused updates."""
        d = self.dropped
        return {
            "received": self.arrived,
            "dropped_rate": sum(d[r] for r in RATE_REASONS),
            "dropped_auth": d["auth"],
            "dropped_malformed": sum(d[r] for r in MALFORMED_REASONS),
            "refused_incarnation": d["refused_incarnation"],
            "refused_new_member": sum(d[r] for r in NEW_MEMBER_REASONS),
            "refused_address": d["refused_address"],
            "epochs": self.epochs,
        }


def _frozen(c: Counter[str]) -> Mapping[str, int]:
    return MappingProxyType(dict(sorted(c.items())))


@dataclass(frozen=True, slots=True)
class SwimStatistics:
    """Snapshot of a member's counters; packet kinds label a packet by its first message."""

    node_id: int
    members_up: int
    members_total: int
    incarnation: int
    health_score: int
    sent_packets: Mapping[str, int]
    sent_bytes: Mapping[str, int]
    recv_packets: Mapping[str, int]
    recv_bytes: Mapping[str, int]
    dropped: Mapping[str, int]
    probes: int
    probe_failures: int
    suspicions: int
    refutations: int
    pushpulls: int
    received: int = 0
    dropped_rate: int = 0
    dropped_auth: int = 0
    dropped_malformed: int = 0
    refused_incarnation: int = 0
    refused_new_member: int = 0
    refused_address: int = 0
    epochs: int = 0
    evicted: int = 0
    slow_ticks: int = 0
    loop_lag: float = 0.0
    loop_lag_max: float = 0.0

    @classmethod
    def build(
        cls,
        c: Counters,
        *,
        node_id: int,
        up: int,
        total: int,
        incarnation: int,
        health: int,
        loop_lag: float = 0.0,
        loop_lag_max: float = 0.0,
    ) -> SwimStatistics:
        return cls(
            node_id=node_id,
            members_up=up,
            members_total=total,
            incarnation=incarnation,
            health_score=health,
            sent_packets=_frozen(c.sent_packets),
            sent_bytes=_frozen(c.sent_bytes),
            recv_packets=_frozen(c.recv_packets),
            recv_bytes=_frozen(c.recv_bytes),
            dropped=_frozen(c.dropped),
            probes=c.probes,
            probe_failures=c.probe_failures,
            suspicions=c.suspicions,
            refutations=c.refutations,
            pushpulls=c.pushpulls,
            **c.summary(),
            evicted=c.evicted,
            slow_ticks=c.slow_ticks,
            loop_lag=loop_lag,
            loop_lag_max=loop_lag_max,
        )

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-able mapping (for the node's stats and the dashboard)."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            v = getattr(self, name)
            out[name] = dict(v) if isinstance(v, Mapping) else v
        return out
