"""SwimMachine: memberlist's SWIM with Lifeguard, as a sans-IO state machine.

Bytes and time go in (``receive(data, addr, now)``, ``tick(now)``); an ``Output`` comes back:
datagrams to send, TCP push/pulls to start, membership events. ``next_deadline()`` says when
to call ``tick`` again.

Rules:
1. No clocks, sockets or global randomness here: ``now`` (seconds, any monotonic origin) and a
   ``random.Random`` are passed in, so the simulated network replays a run exactly.
2. Validate, then mutate: untrusted bytes are decoded by ``wire.decode_untrusted`` (one
   ``BadMessage`` door, counted as a drop) before anything in the table changes.
3. Every change of a member's state or incarnation yields one ``MemberEvent``.
4. Only a member raises its own incarnation, when it hears it is suspected or dead (refutation).
5. Updates (alive, suspect, dead) in a packet are applied before the ping they ride on, so a
   suspected member refutes in the very ack that answers the probe carrying the suspicion.
6. Beyond memberlist, cheap nudges make refutation robust under loss: the accuser tells the
   suspect directly; every period, each member also pings the member it has suspected the
   longest (with the suspicion attached; an ack makes it alive again, as in the reference);
   an ack or relayed ping to a member we suspect carries the suspicion too; and a member
   hearing a stale accusation about itself answers its author with its newer ``alive``.
   None of them adds traffic while nobody is suspected.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from . import wire
from .broadcast import BroadcastQueue, retransmit_limit
from .config import SwimConfig
from .lifeguard import Awareness, Suspicion, suspicion_bounds
from .members import Member, MemberEvent, MemberState, overrides
from .outputs import Counters, Datagram, Output, SyncRequest
from .table import Entry, MemberTable
from .wire import Ack, Alive, Dead, Message, Nack, Ping, PingReq, StateEntry, Suspect

__all__ = ["SwimMachine"]

_ALIVE, _SUSPECTED, _DEAD, _LEFT = (
    MemberState.ALIVE,
    MemberState.SUSPECTED,
    MemberState.DEAD,
    MemberState.LEFT,
)
_PF = MemberState.PROBE_FAILED
_NEVER = math.inf


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
    """One member's protocol state. All methods are synchronous and never block."""

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
    ) -> None:
        self.config = config
        self._rng = rng
        self.boot = rng.getrandbits(62) if boot is None else boot
        me = Entry(node_id, host, port, incarnation, _ALIVE, self.boot, now)
        self.table = MemberTable(me, rng)
        self.me = me
        self.seeds = tuple(s for s in seeds if s != (host, port))
        self.counters = Counters()
        self.awareness = Awareness(config.awareness_max)
        self.left = False
        self._queue = BroadcastQueue()
        self._seq = rng.getrandbits(20)
        self._probe: _Probe | None = None
        self._relays: dict[int, _Relay] = {}
        self._buddies: dict[int, int] = {}  # seq -> suspect pinged this period
        self._suspects: set[int] = set()
        self._reserved_id = -1
        self._next_probe = now + config.probe_interval * rng.random()
        self._next_gossip = now
        self._next_pushpull = now + config.pushpull_interval * (0.5 + rng.random())
        self._next_rejoin = now + config.rejoin_interval
        self._dgrams: list[Datagram] = []
        self._syncs: list[SyncRequest] = []
        self._events: list[MemberEvent] = []
        self._now = now

    # ---- public surface -------------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self.me.node_id

    @property
    def address(self) -> tuple[str, int]:
        """Where this member is reached (UDP, and TCP on the same port)."""
        return self.me.host, self.me.port

    def members(self) -> list[Member]:
        """Snapshot of the table, self included, sorted by id."""
        return self.table.snapshot()

    def leader_id(self) -> int | None:
        """Lowest id among members not declared dead or left (act on dead, never on suspect)."""
        ups = [e.node_id for e in self.table if e.state.is_up]
        return min(ups) if ups else None

    def next_free_id(self) -> int:
        """Reserve and return an id above every id known here (for a node joining without one)."""
        top = max(max(e.node_id for e in self.table), self._reserved_id)
        self._reserved_id = top + 1
        return self._reserved_id

    def next_deadline(self) -> float:
        """When ``tick`` must next be called (seconds, on the caller's clock)."""
        c = self.config
        t = self._next_probe if not self.left else _NEVER
        p = self._probe
        if p is not None and not p.done:
            t = min(t, p.end if p.indirect else p.direct_deadline)
        if len(self._queue):
            t = min(t, self._next_gossip)
        if not self.left:
            if c.pushpull_interval > 0:
                t = min(t, self._next_pushpull)
            if c.rejoin_interval > 0 and self.seeds:
                t = min(t, self._next_rejoin)
        for r in self._relays.values():
            t = min(t, r.deadline)
        for i in self._suspects:
            s = self.table.get(i)
            if s is not None and s.suspicion is not None:
                t = min(t, s.suspicion.deadline())
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
        for host, port in self.seeds:
            self._syncs.append(SyncRequest(host, port, self.table.id_at(host, port), True))
        return self._flush()

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
                self._send(r.addr, r.dest, "nack", wire.Nack(r.seq, self.me.node_id))
        for i in list(self._suspects):
            e = self.table.get(i)
            if e is None or e.suspicion is None:
                self._suspects.discard(i)
            elif now >= e.suspicion.deadline():
                self._apply_dead(Dead(e.incarnation, i, self.me.node_id), "suspicion_timeout")
        if now >= self._next_probe and not self.left:
            self._start_probe()
        if now >= self._next_gossip:
            self._next_gossip = now + c.gossip_interval
            self._gossip()
        if not self.left and c.pushpull_interval > 0 and now >= self._next_pushpull:
            self._next_pushpull = now + c.pushpull_interval * self._pushpull_scale()
            peer = self.table.random_up(1)
            if peer:
                self._syncs.append(SyncRequest(peer[0].host, peer[0].port, peer[0].node_id, False))
        if not self.left and c.rejoin_interval > 0 and self.seeds and now >= self._next_rejoin:
            self._next_rejoin = now + c.rejoin_interval
            self._rejoin()
        return self._flush()

    def receive(self, data: bytes, addr: tuple[str, int], now: float) -> Output:
        """Handle one UDP packet from ``addr``; malformed input is counted and dropped."""
        self._now = now
        try:
            msgs = wire.decode_untrusted(data, self.config.max_packet_bytes)
        except wire.BadMessage as exc:
            self.counters.drop(exc.reason)
            return self._flush()
        first = msgs[0]
        kind = wire.type_name(first)
        self.counters.received(kind if kind in _DIRECT_KINDS else "gossip", len(data))
        # Rule 5: updates first, then the exchange they rode on.
        for m in msgs:
            if isinstance(m, Alive | Suspect | Dead):
                self._apply(m, "gossip")
        for m in msgs:
            if not isinstance(m, Alive | Suspect | Dead):
                self._on_direct(m)
        return self._flush()

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
        me = self.me.node_id
        accuser = me if peer is None else peer
        for s in entries:
            known = s.node == me or s.node in self.table
            if s.state is _ALIVE:
                self._apply(Alive(s.incarnation, s.node, s.host, s.port, s.boot), "pushpull")
            elif not known and s.state.is_down:
                # Listed for display only; a live one refutes when it hears of it.
                e = Entry(s.node, s.host, s.port, s.incarnation, s.state, s.boot, now)
                self.table.add(e)
                self._event(e, None, "pushpull")
            elif s.state is _LEFT:
                self._apply(Dead(s.incarnation, s.node, s.node), "pushpull")
            else:
                if not known:  # learn it first, so the suspicion has something to apply to
                    self._apply(Alive(s.incarnation, s.node, s.host, s.port, s.boot), "pushpull")
                self._apply(Suspect(s.incarnation, s.node, accuser), "pushpull")
        return self._flush()

    def leave(self, now: float) -> Output:
        """Leave gracefully: gossip dead(self, from self) and stop probing."""
        self._now = now
        if self.left:
            return self._flush()
        self.left = True
        old = self.me.state
        self.me.state = _LEFT
        self.me.changed = now
        self.table.note_transition(self.me, old)
        self._event(self.me, old, "leave")
        self._broadcast(
            self.me.node_id, Dead(self.me.incarnation, self.me.node_id, self.me.node_id)
        )
        self._probe = None
        self._next_gossip = now
        self._gossip()
        return self._flush()

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
        # Lifeguard buddy system: a suspect's probe carries the suspicion, so it refutes now.
        parts = [wire.encode_part(Ping(seq, target.node_id, *self._me_addr()))]
        parts += self._suspicion_of(target.node_id)
        self._send_parts((target.host, target.port), target.node_id, "ping", parts)
        self._buddy_probe(exclude=target.node_id)

    def _buddy_probe(self, exclude: int) -> None:
        """Ping the longest-suspected member too, carrying the suspicion (see module rule 6)."""
        self._buddies.clear()
        best: Entry | None = None
        for i in self._suspects:
            e = self.table.get(i)
            if e is None or e.suspicion is None or i == exclude:
                continue
            if best is None or (e.suspicion.start, i) < (best.suspicion.start, best.node_id):  # type: ignore[union-attr]
                best = e
        if best is None:
            return
        seq = self._next_seq()
        self._buddies[seq] = best.node_id
        parts = [wire.encode_part(Ping(seq, best.node_id, *self._me_addr()))]
        parts += self._suspicion_of(best.node_id)
        self._send_parts((best.host, best.port), best.node_id, "ping", parts)

    def _suspicion_of(self, node_id: int) -> list[bytes]:
        """The suspicion we hold about ``node_id``, to hand to it (empty if none)."""
        e = self.table.get(node_id)
        if e is None or e.state is not _SUSPECTED:
            return []
        return [wire.encode_part(Suspect(e.incarnation, node_id, self.me.node_id))]

    def _probe_indirect(self, p: _Probe) -> None:
        p.indirect = True
        t = self.table.get(p.target)
        if t is None or t.state.is_down:
            p.done = True
            return
        if t.state is _ALIVE:
            self._set_state(t, _PF, "probe_timeout")
        helpers = self.table.random_up(self.config.indirect_checks, {t.node_id})
        p.expected_nacks = len(helpers)
        for h in helpers:
            msg = PingReq(p.seq, t.node_id, t.host, t.port, True, *self._me_addr())
            self._send((h.host, h.port), h.node_id, "ping_req", msg)

    def _probe_missed(self, p: _Probe) -> None:
        p.done = True
        self.counters.probe_failures += 1
        missing = p.expected_nacks - p.nacks
        self.awareness.apply(missing if p.expected_nacks > 0 else 1)
        t = self.table.get(p.target)
        if t is not None and t.state.is_up:
            suspect = Suspect(t.incarnation, t.node_id, self.me.node_id)
            self._apply(suspect, "indirect_failed")
            # Tell the suspect itself at once, so it can refute before the timeout.
            self._send((t.host, t.port), t.node_id, "suspect", suspect)

    def _on_direct(self, m: Message) -> None:
        me = self.me.node_id
        if isinstance(m, Ping):
            if m.target != me:
                self.counters.drop("misdirected")
                return
            parts = [wire.encode_part(Ack(m.seq, me)), *self._suspicion_of(m.src)]
            self._send_parts((m.src_host, m.src_port), m.src, "ack", parts)
        elif isinstance(m, PingReq):
            seq = self._next_seq()
            deadline = self._now + self.config.probe_timeout
            self._relays[seq] = _Relay((m.src_host, m.src_port), m.src, m.seq, deadline, m.nack)
            parts = [wire.encode_part(Ping(seq, m.target, *self._me_addr()))]
            parts += self._suspicion_of(m.target)
            self._send_parts((m.target_host, m.target_port), m.target, "relay_ping", parts)
        elif isinstance(m, Ack):
            p = self._probe
            if p is not None and p.seq == m.seq and not p.done:
                p.done = True
                self.awareness.apply(-1)
                t = self.table.get(p.target)
                if t is not None and t.state in (_PF, _SUSPECTED):
                    self._clear_suspicion(t)
                    self._set_state(t, _ALIVE, "ack")
                return
            buddy = self._buddies.pop(m.seq, None)
            if buddy is not None:
                t = self.table.get(buddy)
                if t is not None and t.state is _SUSPECTED:
                    self._clear_suspicion(t)
                    self._set_state(t, _ALIVE, "ack")
                return
            r = self._relays.pop(m.seq, None)
            if r is not None:
                self._send(r.addr, r.dest, "relay_ack", Ack(r.seq, me))
        elif isinstance(m, Nack):
            p = self._probe
            if p is not None and p.seq == m.seq:
                p.nacks += 1

    # ---- updates and precedence -----------------------------------------------------------

    def _apply(self, m: Alive | Suspect | Dead, cause: str) -> None:
        if m.node == self.me.node_id:
            self._about_me(m)
        elif isinstance(m, Alive):
            self._apply_alive(m, cause)
        elif isinstance(m, Suspect):
            self._apply_suspect(m, cause)
        else:
            self._apply_dead(m, cause)

    def _about_me(self, m: Alive | Suspect | Dead) -> None:
        if self.left:
            return
        inc = self.me.incarnation
        if isinstance(m, Alive):
            # A predecessor's ghost (another boot) or a claim beyond ours: outbid it.
            stale = m.incarnation < inc or (m.incarnation == inc and m.boot == self.boot)
            if stale or (m.boot == self.boot and m.incarnation <= inc):
                return
        elif m.incarnation < inc:
            # A stale accusation: answer its author directly with what supersedes it.
            e = self.table.get(m.src)
            if e is not None and e.state.is_up and e is not self.me:
                alive = Alive(inc, *self._me_addr(), self.boot)
                self._send((e.host, e.port), e.node_id, "refute", alive)
            return
        self.me.incarnation = max(inc, m.incarnation) + 1
        self.awareness.apply(1)
        self.counters.refutations += 1
        self._event(self.me, _ALIVE, "refute")
        alive = Alive(self.me.incarnation, *self._me_addr(), self.boot)
        self._broadcast(self.me.node_id, alive)
        accuser = self.table.get(m.src) if isinstance(m, Suspect | Dead) else None
        if accuser is not None and accuser.state.is_up and accuser is not self.me:
            self._send((accuser.host, accuser.port), accuser.node_id, "refute", alive)

    def _apply_alive(self, m: Alive, cause: str) -> None:
        e = self.table.get(m.node)
        if e is None:
            e = Entry(m.node, m.host, m.port, m.incarnation, _ALIVE, m.boot, self._now)
            self.table.add(e)
            self._event(e, None, "join" if cause == "gossip" else cause)
            self._broadcast(m.node, m)
            return
        if not overrides(_ALIVE, m.incarnation, e.state, e.incarnation):
            return
        old = e.state
        if old.is_down:
            cause = "restart" if m.boot != e.boot else "rejoin"
        elif old is not _ALIVE or cause == "gossip":
            cause = "refute"
        if (m.host, m.port) != (e.host, e.port):
            self.table.set_addr(e, m.host, m.port)
        e.boot = m.boot
        e.incarnation = m.incarnation
        self._clear_suspicion(e)
        self._set_state(e, _ALIVE, cause, force_event=True)
        self._broadcast(m.node, m)

    def _apply_suspect(self, m: Suspect, cause: str) -> None:
        e = self.table.get(m.node)
        if e is None:
            return
        if e.state is _SUSPECTED and e.suspicion is not None and m.incarnation == e.incarnation:
            if e.suspicion.confirm(m.src):
                self._broadcast(m.node, m)  # pass the confirmation on
            return
        if not overrides(_SUSPECTED, m.incarnation, e.state, e.incarnation):
            return
        c = self.config
        n = self.table.up_count
        lo, hi = suspicion_bounds(
            c.suspicion_mult, c.suspicion_max_timeout_mult, n, c.probe_interval
        )
        k = c.suspicion_mult - 2
        if n - 2 < k:
            k = 0
        e.incarnation = m.incarnation
        e.suspicion = Suspicion(m.incarnation, self._now, lo, hi, k, m.src)
        self._suspects.add(e.node_id)
        self.counters.suspicions += 1
        self._set_state(e, _SUSPECTED, cause, force_event=True)
        self._broadcast(m.node, m)

    def _apply_dead(self, m: Dead, cause: str) -> None:
        e = self.table.get(m.node)
        if e is None or not overrides(_DEAD, m.incarnation, e.state, e.incarnation):
            return
        new = _LEFT if m.src == m.node else _DEAD
        if new is _LEFT and cause == "gossip":
            cause = "leave"
        e.incarnation = m.incarnation
        self._clear_suspicion(e)
        self._set_state(e, new, cause, force_event=True)
        self._broadcast(m.node, m)

    def _clear_suspicion(self, e: Entry) -> None:
        e.suspicion = None
        self._suspects.discard(e.node_id)

    def _set_state(
        self, e: Entry, new: MemberState, cause: str, *, force_event: bool = False
    ) -> None:
        old = e.state
        if old is new and not force_event:
            return
        if old is not new:
            e.state = new
            e.changed = self._now
            self.table.note_transition(e, old)
        self._event(e, old, cause)

    def _event(self, e: Entry, old: MemberState | None, cause: str) -> None:
        self._events.append(
            MemberEvent(
                self._now,
                self.me.node_id,
                e.node_id,
                None if old is None else old.value,
                e.state.value,
                e.incarnation,
                cause,
            )
        )

    # ---- gossip and sending ---------------------------------------------------------------

    def _broadcast(self, subject: int, m: Alive | Suspect | Dead) -> None:
        self._queue.push(subject, wire.encode_part(m))

    def _gossip(self) -> None:
        if not len(self._queue):
            return
        c = self.config
        limit = retransmit_limit(c.retransmit_mult, self.table.up_count)
        for t in self.table.gossip_targets(c.gossip_nodes, self._now, c.gossip_to_the_dead_time):
            parts = self._queue.take(c.max_packet_bytes - wire.compound_overhead(0), limit)
            if not parts:
                break
            self._emit((t.host, t.port), t.node_id, "gossip", parts)

    def _rejoin(self) -> None:
        up = {(e.host, e.port) for e in self.table if e.state.is_up and e is not self.me}
        missing = [s for s in self.seeds if s not in up]
        if missing:
            host, port = self._rng.choice(missing)
            self._syncs.append(SyncRequest(host, port, self.table.id_at(host, port), True))

    def _pushpull_scale(self) -> float:
        n = self.table.up_count
        return 1.0 if n <= 32 else math.ceil(math.log2(n) - math.log2(32)) + 1.0

    def _send(self, addr: tuple[str, int], dest: int | None, kind: str, m: Message) -> None:
        self._send_parts(addr, dest, kind, [wire.encode_part(m)])

    def _send_parts(
        self, addr: tuple[str, int], dest: int | None, kind: str, parts: list[bytes]
    ) -> None:
        """Send ``parts`` with as many queued updates piggybacked as the packet cap allows."""
        c = self.config
        used = sum(len(p) + 5 for p in parts) + wire.compound_overhead(0)
        limit = retransmit_limit(c.retransmit_mult, self.table.up_count)
        room = c.max_packet_bytes - used
        if room > 0:
            parts = parts + self._queue.take(room, limit, skip=frozenset(parts))
        self._emit(addr, dest, kind, parts[: wire.MAX_PARTS])

    def _emit(self, addr: tuple[str, int], dest: int | None, kind: str, parts: list[bytes]) -> None:
        data = wire.encode_compound(parts)
        self.counters.sent(kind, len(data))
        self._dgrams.append(Datagram(addr, data, dest, kind))

    def _me_addr(self) -> tuple[int, str, int]:
        return self.me.node_id, self.me.host, self.me.port

    def _next_seq(self) -> int:
        self._seq = (self._seq + 1) & 0xFFFFFFFF
        return self._seq

    def _flush(self) -> Output:
        if not (self._dgrams or self._syncs or self._events):
            return _EMPTY
        out = Output(tuple(self._dgrams), tuple(self._syncs), tuple(self._events))
        self._dgrams.clear()
        self._syncs.clear()
        self._events.clear()
        return out


_EMPTY = Output()
_DIRECT_KINDS = frozenset({"ping", "ping_req", "ack", "nack"})
