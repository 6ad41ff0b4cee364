"""SwimMachine: memberlist's SWIM with Lifeguard, as a sans-IO state machine.

Bytes and time go in (``receive(data, addr, now)``, ``tick(now)``); an ``Output`` comes back:
datagrams to send, TCP push/pulls to start, membership events. ``next_deadline()`` says when
to call ``tick`` again.

Rules:
1. No clocks, sockets or global randomness here: ``now`` (seconds, any monotonic origin) and a
   ``random.Random`` are passed in, so the simulated network replays a run exactly.
2. Validate, then mutate: untrusted bytes pass ``Intake`` (size, rate limits per source,
   the keyring) and are decoded by ``wire.decode_untrusted`` (one ``BadMessage`` door,
   counted as a drop) before anything in the table changes.
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
10. Work done for others is bounded: at most ``MAX_RELAYS`` ping-reqs are relayed at a time
   (each makes us probe a third member); more are dropped and counted (``relay_full``).

Who owns what: ``MemberTable`` the rows and probe order, ``Membership`` the update rules,
``Outbox`` the packets and events, ``Resync`` the push/pull and re-join timers, this module
the probes and the other timers.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from . import wire
from .buddies import BuddyPings
from .config import SwimConfig
from .exchange import MAX_NODE_ID
from .intake import Intake
from .lifeguard import Awareness
from .members import Member, MemberState
from .membership import MAX_INCARNATION, Membership, ordered_boot
from .outbox import Outbox
from .outputs import DROPPED, Counters, Output
from .resync import Resync
from .table import Entry, MemberTable, Roster
from .wire import Ack, Alive, Dead, Message, Nack, Ping, PingReq, StateEntry, Suspect

__all__ = ["SwimMachine"]

_NEVER = math.inf
_DIRECT_KINDS = frozenset({"ping", "ping_req", "ack", "nack"})
MAX_RELAYS = 32  # ping-reqs relayed at once (rule 10)
ANNOUNCE_MAX = 64  # members told directly of a newcomer's alive (rule 8)


@dataclass(slots=True)
class _Probe:
    target: int
    seq: int
    direct_deadline: float
    end: float
    indirect: bool = False
    done: bool = False
    expected_nacks: int = 0
    nacks: int = 0


@dataclass(slots=True)
class _Relay:
    addr: tuple[str, int]
    dest: int
    seq: int
    deadline: float
    nack: bool


class SwimMachine:
    """One member's protocol state. All methods are synchronous and never block.

    ``now`` arguments are seconds on any monotonic clock, the same one for every call.
    ``roster``: the rows a simulated cluster starts with, shared by all its machines and
    listing this one with its ``boot`` (``table`` rule 4).
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
        self.intake = Intake(config, self.table, self.counters, config.keyring)
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
        self._probe: _Probe | None = None
        self._relays: dict[int, _Relay] = {}
        self._buddies = BuddyPings()
        self._reserved_id = -1
        self._next_probe = now + config.probe_interval * rng.random()
        self._next_gossip = now
        self._next_buddy = now
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
        t = self._next_probe if not self.left else _NEVER
        p = self._probe
        if p is not None and not p.done:
            t = min(t, p.end if p.indirect else p.direct_deadline)
        if len(self.outbox.queue):
            t = min(t, self._next_gossip)
        if self.membership.suspects and not self.left:
            t = min(t, self._next_buddy)
        if not self.left:
            t = min(t, self.resync.next_deadline())
        for r in self._relays.values():
            t = min(t, r.deadline)
        return min(t, self.membership.next_expiry())

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
        c = self.config
        p = self._probe
        if p is not None and not p.done:
            if not p.indirect and now >= p.direct_deadline:
                self._probe_indirect(p)
            if now >= p.end:
                self._probe_missed(p)
        for seq in [s for s, r in self._relays.items() if now >= r.deadline]:
            r = self._relays.pop(seq)
            if r.nack:
                self.outbox.send(r.addr, r.dest, "nack", Nack(r.seq, self.me.node_id))
        self.membership.expire(now)
        self.membership.admit_waiting(now)
        if now >= self._next_probe and not self.left:
            self._start_probe()
        if now >= self._next_buddy and self.membership.suspects and not self.left:
            self._buddy_probe()
        if now >= self._next_gossip:
            self._next_gossip = now + c.gossip_interval
            self.outbox.gossip(now)
        if not self.left:
            self.resync.tick(now)
        return self.outbox.flush()

    def receive(self, data: bytes, addr: tuple[str, int], now: float) -> Output:
        """Handle one UDP packet from ``addr``; refused input is counted and dropped.

        Returns ``DROPPED`` (nothing changed) for a packet refused before it was decoded.
        """
        self._now = now
        plain = self.intake.admit(data, addr, now)
        if plain is None:
            return DROPPED
        try:
            msgs = wire.decode_untrusted(plain, self.config.max_packet_bytes)
        except wire.BadMessage as exc:
            self.counters.drop(exc.reason)
            return DROPPED
        return self.receive_messages(msgs, addr, now, len(data))

    def receive_messages(
        self, msgs: Sequence[Message], addr: tuple[str, int], now: float, size: int
    ) -> Output:
        """Handle messages admitted and decoded by another wire format's edge."""
        self._now = now
        kind = wire.type_name(msgs[0])
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
            self._probe = None
            self._next_gossip = now + self.config.gossip_interval
            self.outbox.gossip(now)
        return self.outbox.flush()

    # ---- probing --------------------------------------------------------------------------

    def _start_probe(self) -> None:
        c, now = self.config, self._now
        interval = self.awareness.scale(c.probe_interval)
        self._next_probe = now + interval
        target = self.table.next_probe_target()
        if target is None:
            return
        seq = self._next_seq()
        timeout = self.awareness.scale(c.probe_timeout)
        self._probe = _Probe(target.node_id, seq, now + timeout, now + interval)
        self.counters.probes += 1
        self._ping(target, seq, "ping")

    def _buddy_probe(self) -> None:
        """Rule 6: ping the member suspected the longest, with the suspicion attached.

        Paced by the unscaled period: Lifeguard slows a sick member's accusations, and a
        buddy ping can only clear one.
        """
        self._next_buddy = self._now + self.config.probe_interval
        for node_id in self._buddies.period_over(self.membership.suspects):
            e = self.table.get(node_id)
            if e is not None and e.state is MemberState.SUSPECTED:
                confirm = Suspect(e.incarnation, node_id, self.me.node_id)
                self.membership.apply(confirm, "indirect_failed", self._now)
                if e.suspicion is not None and e.suspicion.accuser == self.me.node_id:
                    self.outbox.broadcast(node_id, confirm)  # ours alone: ask around
        p = self._probe
        busy = p.target if p is not None and not p.done else -1
        buddy = self.membership.longest_suspected(exclude=busy)
        if buddy is not None:
            seq = self._next_seq()
            self._buddies.sent(seq, buddy.node_id)
            self._ping(buddy, seq, "ping")

    def _ping(self, target: Entry, seq: int, kind: str) -> None:
        # Lifeguard buddy system: a suspect's probe carries the suspicion, so it refutes now.
        parts = [wire.encode_part(Ping(seq, target.node_id, *self._me_addr()))]
        parts += self.membership.accusation_of(target.node_id)
        self.outbox.send_parts((target.host, target.port), target.node_id, kind, parts)

    def _probe_indirect(self, p: _Probe) -> None:
        p.indirect = True
        t = self.table.get(p.target)
        if t is None or t.state.is_down:
            p.done = True
            return
        if t.state is MemberState.ALIVE:
            self.membership.set_state(t, MemberState.PROBE_FAILED, "probe_timeout", self._now)
        helpers = self.table.random_up(self.config.indirect_checks, {t.node_id})
        p.expected_nacks = len(helpers)
        for h in helpers:
            msg = PingReq(p.seq, t.node_id, t.host, t.port, True, *self._me_addr())
            self.outbox.send((h.host, h.port), h.node_id, "ping_req", msg)

    def _probe_missed(self, p: _Probe) -> None:
        p.done = True
        self.counters.probe_failures += 1
        # memberlist: with helpers, blame ourselves for each nack that did not come back.
        missing = p.expected_nacks - p.nacks
        self.awareness.apply(missing if p.expected_nacks > 0 else 1)
        t = self.table.get(p.target)
        if t is not None and t.state.is_up:
            suspect = Suspect(t.incarnation, t.node_id, self.me.node_id)
            self.membership.apply(suspect, "indirect_failed", self._now)
            # Tell the suspect itself at once, so it can refute before the timeout.
            self.outbox.send((t.host, t.port), t.node_id, "suspect", suspect)

    def _on_direct(self, m: Message) -> None:
        me = self.me.node_id
        if isinstance(m, Ping):
            if m.target != me:
                self.counters.drop("misdirected")
                return
            parts = [wire.encode_part(Ack(m.seq, me)), *self.membership.accusation_of(m.src)]
            self.outbox.send_parts((m.src_host, m.src_port), m.src, "ack", parts)
        elif isinstance(m, PingReq):
            if len(self._relays) >= MAX_RELAYS:
                self.counters.drop("relay_full")
                return
            seq = self._next_seq()
            deadline = self._now + self.config.probe_timeout
            self._relays[seq] = _Relay((m.src_host, m.src_port), m.src, m.seq, deadline, m.nack)
            parts = [wire.encode_part(Ping(seq, m.target, *self._me_addr()))]
            parts += self.membership.accusation_of(m.target)
            self.outbox.send_parts((m.target_host, m.target_port), m.target, "relay_ping", parts)
        elif isinstance(m, Ack):
            self._on_ack(m)
        elif isinstance(m, Nack):
            p = self._probe
            if p is not None and p.seq == m.seq:
                p.nacks += 1

    def _on_ack(self, m: Ack) -> None:
        p = self._probe
        answered: int | None = None
        if p is not None and p.seq == m.seq and not p.done:
            p.done = True
            self.awareness.apply(-1)
            answered = p.target
        elif m.seq in self._buddies:
            answered = self._buddies.answered(m.seq)
        elif m.seq in self._relays:
            r = self._relays.pop(m.seq)
            self.outbox.send(r.addr, r.dest, "relay_ack", Ack(r.seq, self.me.node_id))
        t = None if answered is None else self.table.get(answered)
        if t is not None:
            self.membership.answered(t, self._now)

    # ---- helpers --------------------------------------------------------------------------

    def _announce(self) -> None:
        """Rule 8: our alive, straight to up to ``ANNOUNCE_MAX`` members we now know."""
        me = self.me
        alive = Alive(me.incarnation, me.node_id, me.host, me.port, me.boot)
        for e in self.table.random_up(ANNOUNCE_MAX):
            self.outbox.send((e.host, e.port), e.node_id, "gossip", alive)

    def _me_addr(self) -> tuple[int, str, int]:
        return self.me.node_id, self.me.host, self.me.port

    def _new_boot(self) -> int:
        """A boot for a new epoch (``membership`` rule 5): later than ours and than any claimed
        for us, so every member takes it as the later boot it is."""
        floor = max(self.me.boot, self.membership.claimed) + 1
        return max(ordered_boot(self._now + self._wall_offset, self._rng), floor)

    def _next_seq(self) -> int:
        self._seq = (self._seq + 1) & 0xFFFFFFFF
        return self._seq
