"""SwimMachine: memberlist's SWIM with Lifeguard, as a sans-IO state machine.

Messages and time go in (``receive_messages(msgs, addr, now, size)``, ``tick(now)``); an
``Output`` comes back: datagrams (as messages) to send, TCP push/pulls to start, membership
events. ``next_deadline()`` says when to call ``tick`` again. Bytes are a wire format's: the
driver's door for it (``swim.rtsimdoor``, ``swim.memberlist``) decodes and encodes.

Rules:
1. No clocks, sockets or global randomness here: ``now`` (seconds, any monotonic origin) and a
   ``random.Random`` are passed in, so the simulated network replays a run exactly.
2. Validate, then mutate: untrusted bytes pass ``Intake`` (size, rate limits per source,
   the keyring) and are decoded by the door (one ``BadMessage``, counted as a drop) before
   anything in the table changes; the intake's size limit is the wire format's read limit.
3. Every change of a member's state or incarnation yields one ``MemberEvent``.
4. Only a member raises its own incarnation, when it hears it is suspected or dead (refutation).
5. Updates (alive, suspect, dead) in a packet are applied before the ping they ride on, so a
   suspected member refutes in the very ack that answers the probe carrying the suspicion.
6. A live member hears every accusation against it, loss or not: the accuser tells it
   directly; each (unscaled) period we ping the member suspected the longest, the suspicion
   attached (its ack makes it alive again); every ack or relayed ping to a member we suspect
   or hold dead carries that verdict (``membership`` rules 3 and 6). None of this costs
   traffic while nobody is suspected. Our own unanswered buddy pings (``buddies``) confirm a
   suspicion as a failed probe does; an accuser never confirms its own suspicion, members
   holding the suspect dead do (``membership`` rule 3).
7. The gossip tick is rate-limited, not phase-locked: at most one gossip per GossipInterval,
   and a member quiet for a whole interval passes a fresh update on at once.
8. A member that was alone and learns of others (a join, a restart, a re-join after being cut
   off) tells up to ``ANNOUNCE_MAX`` of them its ``alive`` directly, after the merge (so a
   refutation it needed is already in it): a newcomer is known to every member at once,
   without waiting on gossip's retransmit budget or a push/pull.
9. A member we held dead coming back (a healed partition) brings our next push/pull forward
   (``resync`` rule 3): a member that missed a refutation across the split is not heard from
   while we hold it dead, so only a push/pull can tell it.
10. Work done for others is bounded (``relays`` rule 3).

Who owns what: ``MemberTable`` the rows and probe order, ``Membership`` the update rules,
``Outbox`` the packets and events, ``Resync`` the push/pull and re-join timers, ``Prober`` our
probes and buddy pings (``probes``), ``Relays`` the ping-reqs done for others (``relays``),
this module the answers to pings, the gossip tick and the sequence numbers.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from .config import SwimConfig
from .intake import Intake
from .lifeguard import Awareness
from .members import Member, MemberState
from .membership import MAX_INCARNATION, Membership, ordered_boot
from .messages import (
    MAX_NODE_ID,
    Ack,
    Alive,
    Dead,
    Message,
    Nack,
    Ping,
    PingReq,
    StateEntry,
    Suspect,
    type_name,
)
from .outbox import Outbox
from .outputs import Counters, Output
from .probes import Prober
from .relays import Relays
from .resync import Resync
from .table import Entry, MemberTable, Roster

__all__ = ["SwimMachine"]

_DIRECT_KINDS = frozenset({"ping", "ping_req", "ack", "nack"})
ANNOUNCE_MAX = 64  # members told directly of a newcomer's alive (rule 8)


class SwimMachine:
    """One member's protocol state. All methods are synchronous and never block.

    ``now`` arguments are seconds on any monotonic clock, the same one for every call.
    ``roster``: the rows a simulated cluster starts with, shared by all its machines and
    listing this one with its ``boot`` (``table`` rule 4). ``read_limit``: the biggest packet
    the member's wire format reads (bytes; default ``max_packet_bytes``, our own format's).
    """

    def __init__(
        self,
        config: SwimConfig,
        node_id: int,
        host: str,
        port: int,
        *,
        rng: random.Random,
        now: float,
        boot: int | None = None,
        seeds: Sequence[tuple[str, int]] = (),
        incarnation: int = 0,
        roster: Roster | None = None,
        wall_offset: float = 0.0,
        read_limit: int | None = None,
    ) -> None:
        if not 0 <= incarnation <= MAX_INCARNATION:
            raise ValueError(f"incarnation {incarnation} outside 0..{MAX_INCARNATION}")
        self.config = config
        self._rng = rng
        self._wall_offset = wall_offset  # seconds from ``now`` to the wall clock (boots)
        boot = ordered_boot(now + wall_offset, rng) if boot is None else boot
        self.me = Entry(node_id, host, port, incarnation, MemberState.ALIVE, boot, now)
        self.table = MemberTable(self.me, rng, roster)
        self.counters = Counters()
        self.awareness = Awareness(config.awareness_max)
        limit = config.max_packet_bytes if read_limit is None else read_limit
        self.intake = Intake(config, self.table, self.counters, config.keyring, limit)
        self.outbox = Outbox(config, self.table, self.counters)
        self.membership = Membership(
            config,
            self.table,
            self.outbox,
            self.awareness,
            self.counters,
            self._new_boot,
            wall_offset,
        )
        self._seq = rng.getrandbits(20)
        self._reserved_id = -1
        first_probe = now + config.probe_interval * rng.random()
        self.prober = Prober(
            config,
            self.table,
            self.membership,
            self.outbox,
            self.awareness,
            self.counters,
            self._next_seq,
            first_probe,
            now,
        )
        self.relays = Relays(
            config.probe_timeout,
            self.me,
            self.membership,
            self.outbox,
            self.counters,
            self._next_seq,
        )
        self._next_gossip = now
        self.resync = Resync(config, self.table, self.outbox, seeds, rng, now)
        self._now = now
        # Announce ourselves, as memberlist does: our first pings carry our own alive.
        self.outbox.broadcast(node_id, Alive(incarnation, node_id, host, port, boot))

    # ---- public surface -------------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self.me.node_id

    @property
    def boot(self) -> int:
        """This instance's boot nonce (a new one per process start and per boot epoch)."""
        return self.me.boot

    @property
    def address(self) -> tuple[str, int]:
        """Where this member is reached (UDP, and TCP on the same port)."""
        return self.me.host, self.me.port

    @property
    def wall_offset(self) -> float:
        """Seconds from this machine's ``now`` to its wall clock (boots, ``membership`` rule 4)."""
        return self._wall_offset

    def set_wall_offset(self, seconds: float) -> None:
        """Move the wall clock: it reads ``now + seconds`` from here on (a jump of the clock,
        either way: new boots and the check of boots ahead of us use it)."""
        self._wall_offset = float(seconds)
        self.membership.set_wall_offset(seconds)

    @property
    def left(self) -> bool:
        return self.membership.left

    def members(self) -> list[Member]:
        """Snapshot of the table, self included, sorted by id."""
        return self.table.snapshot()

    def leader_id(self) -> int | None:
        """Lowest id among members not declared dead or left (act on dead, never on suspect)."""
        ups = [e.node_id for e in self.table if e.state.is_up]
        return min(ups) if ups else None

    def next_free_id(self) -> int:
        """Reserve and return an id no member known here has (for a node joining without one).

        Above every known id while that is within ``MAX_NODE_ID``; else (a ghost may hold the
        top id: ``newcomers`` rule 1) the next id up from the last one handed out, wrapping
        to 0, that no member holds. The table is far smaller than the range: one is found.
        """
        top = max(max(e.node_id for e in self.table), self._reserved_id) + 1
        if top > MAX_NODE_ID:
            top = self._reserved_id
            for _ in range(len(self.table) + 1):
                top = top + 1 if top < MAX_NODE_ID else 0
                if top not in self.table:
                    break
        self._reserved_id = top
        return top

    def next_deadline(self) -> float:
        """When ``tick`` must next be called."""
        left = self.membership.left
        t = min(self.prober.next_deadline(left), self.relays.next_deadline())
        if len(self.outbox.queue) and self._next_gossip < t:
            t = self._next_gossip
        if not left:
            t = min(t, self.resync.next_deadline())
        if self.membership.suspects:
            t = min(t, self.membership.next_expiry())
        return t

    def preload(self, entries: Iterable[StateEntry]) -> None:
        """Add members silently (no events, no gossip): a simulation's instant bootstrap."""
        for s in entries:
            if s.node != self.me.node_id and s.node not in self.table:
                e = Entry(s.node, s.host, s.port, s.incarnation, s.state, s.boot, self._now)
                self.table.add(e)

    def join(self, now: float) -> Output:
        """Push/pull with every seed (the driver or simnet runs the TCP exchanges)."""
        self._now = now
        self.resync.join()
        return self.outbox.flush()

    def tick(self, now: float) -> Output:
        """Advance every timer to ``now``."""
        self._now = now
        self.prober.timeouts(now)
        self.relays.expire(now)
        if self.membership.suspects:
            self.membership.expire(now)
        if self.membership.newcomers.waiting:
            self.membership.admit_waiting(now)
        if not self.left:
            self.prober.tick(now)
        if now >= self._next_gossip:
            self._next_gossip = now + self.config.gossip_interval
            self.outbox.gossip(now)
        if not self.left:
            self.resync.tick(now)
        return self.outbox.flush()

    def receive_messages(
        self, msgs: Sequence[Message], addr: tuple[str, int], now: float, size: int
    ) -> Output:
        """Handle one packet's messages from ``addr``, admitted and decoded by the door of the
        member's wire format (``size``: the packet's bytes, for the counters)."""
        self._now = now
        kind = type_name(msgs[0])
        self.counters.received(kind if kind in _DIRECT_KINDS else "gossip", size)
        # Rule 5: updates first, then the exchange they rode on.
        via = self.table.id_at(*addr)
        for m in msgs:
            if isinstance(m, Alive | Suspect | Dead):
                self.membership.apply(m, "gossip", now, via)
        for m in msgs:
            if not isinstance(m, Alive | Suspect | Dead):
                self._on_direct(m)
        self.resync.catch_up(self.membership, now)
        return self.outbox.flush()

    def local_state(self) -> list[StateEntry]:
        """Every member as sent in a push/pull (``probe_failed`` travels as ``alive``)."""
        return [
            StateEntry(e.node_id, e.host, e.port, e.incarnation, e.state.wire, e.boot)
            for e in self.table
        ]

    def merge_state(
        self, entries: Iterable[StateEntry], now: float, peer: int | None = None
    ) -> Output:
        """Merge ``peer``'s push/pull state (memberlist's rules: remote dead counts as suspect).

        Suspicions learned this way are attributed to ``peer``, so they are not taken for
        independent confirmations by the member that raised them.
        """
        self._now = now
        self.counters.pushpulls += 1
        alone = self.table.up_count <= 1
        self.membership.merge(entries, now, self.me.node_id if peer is None else peer)
        if alone and not self.left:
            self._announce()
        self.resync.catch_up(self.membership, now)
        return self.outbox.flush()

    def leave(self, now: float) -> Output:
        """Leave gracefully: gossip dead(self, from self) at once and stop probing."""
        self._now = now
        if not self.left:
            self.membership.leave(now)
            self.prober.stop()
            self._next_gossip = now + self.config.gossip_interval
            self.outbox.gossip(now)
        return self.outbox.flush()

    # ---- direct messages ------------------------------------------------------------------

    def _on_direct(self, m: Message) -> None:
        me = self.me.node_id
        if isinstance(m, Ping):
            if m.target != me:
                self.counters.drop("misdirected")
                return
            parts: list[Message] = [Ack(m.seq, me), *self.membership.accusation_of(m.src)]
            self.outbox.send_parts((m.src_host, m.src_port), m.src, "ack", parts)
        elif isinstance(m, PingReq):
            self.relays.relay(m, self._now)
        elif isinstance(m, Ack):
            answered = self.prober.on_ack(m.seq)
            if answered is None:
                self.relays.on_ack(m.seq)
                return
            t = self.table.get(answered)
            if t is not None:
                self.membership.answered(t, self._now)
        elif isinstance(m, Nack):
            self.prober.on_nack(m.seq)

    # ---- helpers --------------------------------------------------------------------------

    def _announce(self) -> None:
        """Rule 8: our alive, straight to up to ``ANNOUNCE_MAX`` members we now know."""
        me = self.me
        alive = Alive(me.incarnation, me.node_id, me.host, me.port, me.boot)
        for e in self.table.random_up(ANNOUNCE_MAX):
            self.outbox.send((e.host, e.port), e.node_id, "gossip", alive)

    def _new_boot(self, floor: int) -> int:
        """A boot for a new epoch (``membership`` rule 5): from our wall clock, at least
        ``floor`` (past ours and any claimed for us, unless more than a day ahead of our clock),
        so every member that could hold an earlier boot takes it as the later boot it is."""
        return max(ordered_boot(self._now + self._wall_offset, self._rng), floor)

    def _next_seq(self) -> int:
        self._seq = (self._seq + 1) & 0xFFFFFFFF
        return self._seq
