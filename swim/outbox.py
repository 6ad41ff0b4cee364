"""Outbox: what one machine sends, with queued updates piggybacked, and what it reports.

Rules:
1. Every datagram is a list of messages filled up to ``max_packet_bytes`` with queued updates
   (least-sent first), so gossip rides on probes for free.
2. The outbox only collects; ``flush()`` hands the lot to the caller as one ``Output``.
3. A datagram holds records, never bytes: the driver's door for the member's wire format
   encodes (and seals, and counts) it. The budget is measured in our own format's bytes
   (``sizes.part_size``, counted without encoding) whichever door carries the packet, so the
   machine packs the same packets under every format (a door may leave out parts it cannot
   say).
4. With a keyring the packet budget is ``max_packet_bytes`` less the seal's overhead, so a
   packet the door seals still fits the cap.
"""

from __future__ import annotations

from . import keyring as _keyring
from . import sizes
from .broadcast import BroadcastQueue, retransmit_limit
from .config import SwimConfig
from .members import MemberEvent, MemberState
from .messages import Alive, Dead, Message, Suspect
from .outputs import Counters, Datagram, Output, SyncRequest
from .table import Entry, MemberTable

__all__ = ["Outbox"]

_EMPTY = Output()
_UPDATES = (Alive, Suspect, Dead)
_NOTHING: frozenset[Message] = frozenset()


class Outbox:
    """Datagrams, TCP exchanges and events produced by one machine call."""

    def __init__(self, config: SwimConfig, table: MemberTable, counters: Counters) -> None:
        self.config = config
        self.table = table
        self.counters = counters
        self.queue: BroadcastQueue[Message] = BroadcastQueue()
        sealed = config.keyring is not None
        self._cap = config.max_packet_bytes - (_keyring.OVERHEAD if sealed else 0)
        self._dgrams: list[Datagram] = []
        self._syncs: list[SyncRequest] = []
        self._events: list[MemberEvent] = []
        self._limit = (-1, 0)  # ``limit()`` for the last up count asked

    def limit(self) -> int:
        """How many times an update is sent in a cluster of the current size."""
        up = self.table.up_count
        if up != self._limit[0]:
            c = self.config
            self._limit = (up, retransmit_limit(c.retransmit_mult, up, c.gossip_nodes))
        return self._limit[1]

    def broadcast(self, subject: int, m: Alive | Suspect | Dead) -> None:
        """Queue an update about ``subject`` for gossip (replacing an older one about it)."""
        self.queue.push(subject, m, _size(m))

    def send(self, addr: tuple[str, int], dest: int | None, kind: str, m: Message) -> None:
        self.send_parts(addr, dest, kind, [m])

    def send_parts(
        self, addr: tuple[str, int], dest: int | None, kind: str, parts: list[Message]
    ) -> None:
        """Send ``parts`` with as many queued updates piggybacked as the packet cap allows."""
        sized = [(p, _size(p)) for p in parts]
        room = self._cap - sum(n + 5 for _, n in sized) - sizes.compound_overhead(0)
        if room > 0 and len(self.queue):
            count = self._relays(dest)
            updates = [p for p in parts if type(p) in _UPDATES]  # the queue holds only these
            skip = frozenset(updates) if updates else _NOTHING
            sized += self.queue.take(room, self.limit(), skip=skip, count=count)
        self._emit(addr, dest, kind, sized[: sizes.MAX_PARTS])

    def gossip(self, now: float) -> None:
        """One gossip tick: queued updates to ``gossip_nodes`` random members (and the dead)."""
        if not len(self.queue):
            return
        c = self.config
        budget = self._cap - sizes.compound_overhead(0)
        for t in self.table.gossip_targets(c.gossip_nodes, now, c.gossip_to_the_dead_time):
            sized = self.queue.take(budget, self.limit(), count=t.state is MemberState.ALIVE)
            if not sized:
                break
            self._emit((t.host, t.port), t.node_id, "gossip", sized)

    def _relays(self, dest: int | None) -> bool:
        """Whether a send to ``dest`` counts toward the retransmit limit (``broadcast``
        rule 2: only members held alive pass news on)."""
        e = None if dest is None else self.table.peek(dest)
        return e is None or e.state is MemberState.ALIVE

    def sync(self, host: str, port: int, join: bool) -> None:
        """Ask the caller for a TCP push/pull with host:port."""
        self._syncs.append(SyncRequest(host, port, self.table.id_at(host, port), join))

    def event(self, now: float, e: Entry, old: MemberState | None, cause: str) -> None:
        self._events.append(
            MemberEvent(
                now,
                self.table.me.node_id,
                e.node_id,
                None if old is None else old.value,
                e.state.value,
                e.incarnation,
                cause,
                e.boot,
            )
        )

    def _emit(
        self, addr: tuple[str, int], dest: int | None, kind: str, sized: list[tuple[Message, int]]
    ) -> None:
        """One datagram of ``sized`` (each message with its size), weighed (rule 3)."""
        size = sizes.packet_size([n for _, n in sized])
        self._dgrams.append(Datagram(addr, tuple(p for p, _ in sized), dest, kind, size))

    def flush(self) -> Output:
        if not (self._dgrams or self._syncs or self._events):
            return _EMPTY
        out = Output(tuple(self._dgrams), tuple(self._syncs), tuple(self._events))
        self._dgrams.clear()
        self._syncs.clear()
        self._events.clear()
        return out


_size = sizes.part_size  # a message's bytes in our own format (rule 3)
