"""Relays: the ping-reqs a member carries out for others (indirect probes of a third member).

Rules:
1. A ping-req makes us ping its target, what we hold against the target attached; the
   target's ack goes back to the asker as ours, under the asker's sequence number.
2. With no ack by the probe timeout the asker gets a nack, when it asked for one (memberlist):
   it then knows the helper is fine and the target silent.
3. Work done for others is bounded: at most ``MAX_RELAYS`` ping-reqs are relayed at a time;
   more are dropped and counted (``relay_full``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from .membership import Membership
from .messages import Ack, Nack, PingReq
from .outbox import Outbox
from .outputs import Counters
from .probes import send_ping
from .table import Entry

__all__ = ["MAX_RELAYS", "Relays"]

MAX_RELAYS = 32  # ping-reqs relayed at once (rule 3)


@dataclass(slots=True)
class _Relay:
    addr: tuple[str, int]
    dest: int
    seq: int
    deadline: float
    nack: bool


class Relays:
    """Ping-reqs in flight, by the sequence number of our ping to their target."""

    def __init__(
        self,
        probe_timeout: float,
        me: Entry,
        membership: Membership,
        outbox: Outbox,
        counters: Counters,
        next_seq: Callable[[], int],
    ) -> None:
        self._timeout = probe_timeout
        self._me = me
        self._membership = membership
        self._outbox = outbox
        self._counters = counters
        self._next_seq = next_seq
        self._relays: dict[int, _Relay] = {}

    def next_deadline(self) -> float:
        if not self._relays:
            return math.inf
        return min(r.deadline for r in self._relays.values())

    def expire(self, now: float) -> None:
        """Rule 2: a nack for each relay past its deadline that asked for one."""
        if not self._relays:
            return
        for seq in [s for s, r in self._relays.items() if now >= r.deadline]:
            r = self._relays.pop(seq)
            if r.nack:
                self._outbox.send(r.addr, r.dest, "nack", Nack(r.seq, self._me.node_id))

    def relay(self, m: PingReq, now: float) -> None:
        """Rules 1 and 3: ping ``m``'s target for its sender."""
        if len(self._relays) >= MAX_RELAYS:
            self._counters.drop("relay_full")
            return
        seq = self._next_seq()
        deadline = now + self._timeout
        self._relays[seq] = _Relay((m.src_host, m.src_port), m.src, m.seq, deadline, m.nack)
        to = (m.target, m.target_host, m.target_port)
        send_ping(self._outbox, self._membership, self._me, seq, to, "relay_ping")

    def on_ack(self, seq: int) -> None:
        """An ack for a relayed ping goes back to the asker (rule 1)."""
        r = self._relays.pop(seq, None)
        if r is not None:
            self._outbox.send(r.addr, r.dest, "relay_ack", Ack(r.seq, self._me.node_id))
