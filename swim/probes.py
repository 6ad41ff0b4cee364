"""Probes: how a member checks the others, directly, through helpers, and its suspects.

Rules:
1. One probe at a time, once per (Lifeguard-scaled) period, of the next member in the table's
   probe order: a direct ping, after the scaled probe timeout ``indirect_checks`` ping-reqs
   through helpers, and at the period's end a failed probe that raises a suspicion.
2. A probe that missed blames us for each nack that did not come back (memberlist), or once
   without helpers: Lifeguard's awareness slows a sick member's accusations.
3. The suspect is told at once of the suspicion a failed probe raised, so it can refute
   before the timeout (``machine`` rule 6).
4. Each (unscaled) period the member suspected the longest gets a buddy ping with the
   suspicion attached; our unanswered buddy pings confirm a suspicion as a failed probe does
   (``buddies``), and a confirmation that is ours alone is gossiped.
5. Every ping to a member carries what we hold against it (``Membership.accusation_of``).
Sequence numbers come from the machine, one counter for probes and relays alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from .buddies import BuddyPings
from .config import SwimConfig
from .lifeguard import Awareness
from .members import MemberState
from .membership import Membership
from .messages import Message, Ping, PingReq, Suspect
from .outbox import Outbox
from .outputs import Counters
from .table import Entry, MemberTable

__all__ = ["Prober", "send_ping"]

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


def send_ping(
    outbox: Outbox,
    membership: Membership,
    me: Entry,
    seq: int,
    to: tuple[int, str, int],
    kind: str,
) -> None:
    """A ping of member ``to`` (id, host, port), what we hold against it attached (rule 5)."""
    node_id, host, port = to
    parts: list[Message] = [Ping(seq, node_id, me.node_id, me.host, me.port)]
    parts += membership.accusation_of(node_id)
    outbox.send_parts((host, port), node_id, kind, parts)


class Prober:
    """This member's own probes: the one in flight, the next one due, and the buddy pings."""

    def __init__(
        self,
        config: SwimConfig,
        table: MemberTable,
        membership: Membership,
        outbox: Outbox,
        awareness: Awareness,
        counters: Counters,
        next_seq: Callable[[], int],
        first: float,
        now: float,
    ) -> None:
        self.config = config
        self.table = table
        self.membership = membership
        self.outbox = outbox
        self.awareness = awareness
        self.counters = counters
        self._next_seq = next_seq
        self.probe: _Probe | None = None
        self.buddies = BuddyPings()
        self.next_probe = first
        self.next_buddy = now

    def next_deadline(self, left: bool) -> float:
        """When a probe or a buddy ping is next due (nothing after we left, but a probe's end)."""
        t = self.next_probe if not left else _NEVER
        p = self.probe
        if p is not None and not p.done:
            t = min(t, p.end if p.indirect else p.direct_deadline)
        if self.membership.suspects and not left:
            t = min(t, self.next_buddy)
        return t

    def timeouts(self, now: float) -> None:
        """The probe in flight: ping-reqs after the probe timeout, a suspicion at its end."""
        p = self.probe
        if p is not None and not p.done:
            if not p.indirect and now >= p.direct_deadline:
                self._probe_indirect(p, now)
            if now >= p.end:
                self._probe_missed(p, now)

    def tick(self, now: float) -> None:
        """Start the probe and the buddy ping that are due (the member has not left)."""
        if now >= self.next_probe:
            self._start_probe(now)
        if now >= self.next_buddy and self.membership.suspects:
            self._buddy_probe(now)

    def stop(self) -> None:
        """We leave: the probe in flight is forgotten."""
        self.probe = None

    def on_nack(self, seq: int) -> None:
        p = self.probe
        if p is not None and p.seq == seq:
            p.nacks += 1

    def on_ack(self, seq: int) -> int | None:
        """The member an ack of ours came from (a probe or a buddy ping), else None."""
        p = self.probe
        if p is not None and p.seq == seq and not p.done:
            p.done = True
            self.awareness.apply(-1)
            return p.target
        if seq in self.buddies:
            return self.buddies.answered(seq)
        return None

    def _start_probe(self, now: float) -> None:
        c = self.config
        interval = self.awareness.scale(c.probe_interval)
        self.next_probe = now + interval
        target = self.table.next_probe_target()
        if target is None:
            return
        seq = self._next_seq()
        timeout = self.awareness.scale(c.probe_timeout)
        self.probe = _Probe(target.node_id, seq, now + timeout, now + interval)
        self.counters.probes += 1
        self._ping(target, seq)

    def _buddy_probe(self, now: float) -> None:
        """Rule 4: ping the member suspected the longest, with the suspicion attached.

        Paced by the unscaled period: Lifeguard slows a sick member's accusations, and a
        buddy ping can only clear one.
        """
        me = self.table.me.node_id
        self.next_buddy = now + self.config.probe_interval
        for node_id in self.buddies.period_over(self.membership.suspects):
            e = self.table.get(node_id)
            if e is not None and e.state is MemberState.SUSPECTED:
                confirm = Suspect(e.incarnation, node_id, me)
                self.membership.apply(confirm, "indirect_failed", now)
                if e.suspicion is not None and e.suspicion.accuser == me:
                    self.outbox.broadcast(node_id, confirm)  # ours alone: ask around
        p = self.probe
        busy = p.target if p is not None and not p.done else -1
        buddy = self.membership.longest_suspected(exclude=busy)
        if buddy is not None:
            seq = self._next_seq()
            self.buddies.sent(seq, buddy.node_id)
            self._ping(buddy, seq)

    def _ping(self, target: Entry, seq: int) -> None:
        # Lifeguard buddy system: a suspect's probe carries the suspicion, so it refutes now.
        to = (target.node_id, target.host, target.port)
        send_ping(self.outbox, self.membership, self.table.me, seq, to, "ping")

    def _probe_indirect(self, p: _Probe, now: float) -> None:
        p.indirect = True
        t = self.table.get(p.target)
        if t is None or t.state.is_down:
            p.done = True
            return
        if t.state is MemberState.ALIVE:
            self.membership.set_state(t, MemberState.PROBE_FAILED, "probe_timeout", now)
        helpers = self.table.random_up(self.config.indirect_checks, {t.node_id})
        p.expected_nacks = len(helpers)
        me = self.table.me
        for h in helpers:
            msg = PingReq(p.seq, t.node_id, t.host, t.port, True, me.node_id, me.host, me.port)
            self.outbox.send((h.host, h.port), h.node_id, "ping_req", msg)

    def _probe_missed(self, p: _Probe, now: float) -> None:
        p.done = True
        self.counters.probe_failures += 1
        # Rule 2 (memberlist): with helpers, blame ourselves for each nack that did not come back.
        missing = p.expected_nacks - p.nacks
        self.awareness.apply(missing if p.expected_nacks > 0 else 1)
        t = self.table.get(p.target)
        if t is not None and t.state.is_up:
            suspect = Suspect(t.incarnation, t.node_id, self.table.me.node_id)
            self.membership.apply(suspect, "indirect_failed", now)
            # Rule 3: tell the suspect itself at once, so it can refute before the timeout.
            self.outbox.send((t.host, t.port), t.node_id, "suspect", suspect)
