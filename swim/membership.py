"""Membership: updates applied to the table under SWIM's precedence rules.

``alive``, ``suspect`` and ``dead`` updates (from gossip, push/pull or our own probes) are
applied here; this is where suspicions start, get confirmed and expire, and where a member
refutes what is said about itself.

Rules:
1. Validate, then mutate: ``members.overrides`` decides, and a rejected update leaves the
   table untouched.
2. Every accepted update is queued for gossip again, and every change of a member's state or
   incarnation yields exactly one event.
3. Only a member raises its own incarnation (a refutation), and only when it hears a current
   accusation or a conflicting alive from another boot of itself. A stale accusation is
   answered directly to its author with our newer ``alive``, and a refutation is also sent
   straight to the accuser: neither waits for gossip to reach them.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import wire
from .config import SwimConfig
from .lifeguard import Awareness, Suspicion, suspicion_bounds
from .members import MemberState, overrides
from .outbox import Outbox
from .outputs import Counters
from .table import Entry, MemberTable
from .wire import Alive, Dead, StateEntry, Suspect

__all__ = ["Membership"]

_ALIVE, _SUSPECTED, _DEAD, _LEFT = (
    MemberState.ALIVE,
    MemberState.SUSPECTED,
    MemberState.DEAD,
    MemberState.LEFT,
)


class Membership:
    """The rules that change a member table."""

    def __init__(
        self,
        config: SwimConfig,
        table: MemberTable,
        outbox: Outbox,
        awareness: Awareness,
        counters: Counters,
        boot: int,
    ) -> None:
        self.config = config
        self.table = table
        self.me = table.me
        self.out = outbox
        self.awareness = awareness
        self.counters = counters
        self.boot = boot
        self.left = False
        self.suspects: set[int] = set()  # ids with a running suspicion

    def apply(self, m: Alive | Suspect | Dead, cause: str, now: float) -> None:
        """Apply one update (``cause`` labels the event: gossip, pushpull, ...)."""
        if m.node == self.me.node_id:
            self._about_me(m, now)
        elif isinstance(m, Alive):
            self._alive(m, cause, now)
        elif isinstance(m, Suspect):
            self._suspect(m, cause, now)
        else:
            self._dead(m, cause, now)

    def merge(self, entries: Iterable[StateEntry], now: float, accuser: int) -> None:
        """Merge a push/pull state; remote suspect/dead count as suspicions by ``accuser``."""
        me = self.me.node_id
        for s in entries:
            known = s.node == me or s.node in self.table
            alive = Alive(s.incarnation, s.node, s.host, s.port, s.boot)
            if s.state is _ALIVE:
                self.apply(alive, "pushpull", now)
            elif not known and s.state.is_down:
                # Listed for display only; a live one refutes when it hears of it.
                e = Entry(s.node, s.host, s.port, s.incarnation, s.state, s.boot, now)
                self.table.add(e)
                self.out.event(now, e, None, "pushpull")
            elif s.state is _LEFT:
                self.apply(Dead(s.incarnation, s.node, s.node), "pushpull", now)
            else:
                if not known:  # learn it first, so the suspicion has something to apply to
                    self.apply(alive, "pushpull", now)
                self.apply(Suspect(s.incarnation, s.node, accuser), "pushpull", now)

    def leave(self, now: float) -> None:
        self.left = True
        self.set_state(self.me, _LEFT, "leave", now)
        self.out.broadcast(
            self.me.node_id, Dead(self.me.incarnation, self.me.node_id, self.me.node_id)
        )

    def expire(self, now: float) -> None:
        """Declare dead every member whose suspicion timed out."""
        for i in list(self.suspects):
            e = self.table.get(i)
            if e is None or e.suspicion is None:
                self.suspects.discard(i)
            elif now >= e.suspicion.deadline():
                self._dead(Dead(e.incarnation, i, self.me.node_id), "suspicion_timeout", now)

    def next_expiry(self) -> float:
        t = float("inf")
        for i in self.suspects:
            e = self.table.get(i)
            if e is not None and e.suspicion is not None:
                t = min(t, e.suspicion.deadline())
        return t

    def suspicion_of(self, node_id: int) -> list[bytes]:
        """The suspicion we hold about ``node_id``, encoded to hand to it (empty if none)."""
        e = self.table.get(node_id)
        if e is None or e.state is not _SUSPECTED:
            return []
        return [wire.encode_part(Suspect(e.incarnation, node_id, self.me.node_id))]

    def longest_suspected(self, exclude: int) -> Entry | None:
        best: tuple[float, int] | None = None
        for i in self.suspects:
            e = self.table.get(i)
            if e is not None and e.suspicion is not None and i != exclude:
                key = (e.suspicion.start, i)
                best = key if best is None or key < best else best
        return None if best is None else self.table.get(best[1])

    def answered(self, e: Entry, now: float) -> None:
        """An answered probe makes a probe_failed or suspected member alive again."""
        if e.state in (MemberState.PROBE_FAILED, _SUSPECTED):
            self._clear_suspicion(e)
            self.set_state(e, _ALIVE, "ack", now)

    def set_state(
        self, e: Entry, new: MemberState, cause: str, now: float, *, force_event: bool = False
    ) -> None:
        old = e.state
        if old is new and not force_event:
            return
        if old is not new:
            e.state = new
            e.changed = now
            self.table.note_transition(e, old)
        self.out.event(now, e, old, cause)

    # ---- the three updates ----------------------------------------------------------------

    def _about_me(self, m: Alive | Suspect | Dead, now: float) -> None:
        if self.left:
            return
        me, inc = self.me, self.me.incarnation
        if isinstance(m, Alive):
            # A claim from another boot of us (a predecessor's ghost) at our incarnation or
            # beyond must be outbid; our own alive coming back is not news.
            if m.incarnation < inc or (m.boot == self.boot and m.incarnation <= inc):
                return
        elif m.incarnation < inc:
            self._answer(m.src, Alive(inc, me.node_id, me.host, me.port, self.boot))
            return
        me.incarnation = max(inc, m.incarnation) + 1
        self.awareness.apply(1)
        self.counters.refutations += 1
        self.out.event(now, me, _ALIVE, "refute")
        alive = Alive(me.incarnation, me.node_id, me.host, me.port, self.boot)
        self.out.broadcast(me.node_id, alive)
        if isinstance(m, Suspect | Dead):
            self._answer(m.src, alive)

    def _answer(self, node_id: int, alive: Alive) -> None:
        e = self.table.get(node_id)
        if e is not None and e.state.is_up and e is not self.me:
            self.out.send((e.host, e.port), e.node_id, "refute", alive)

    def _alive(self, m: Alive, cause: str, now: float) -> None:
        e = self.table.get(m.node)
        if e is None:
            e = Entry(m.node, m.host, m.port, m.incarnation, _ALIVE, m.boot, now)
            self.table.add(e)
            self.out.event(now, e, None, "join" if cause == "gossip" else cause)
            self.out.broadcast(m.node, m)
            return
        # A different boot nonce for a member held down is a new instance of it (a restart):
        # it comes back at whatever incarnation it starts with, so precedence does not apply.
        restarted = e.state.is_down and m.boot != e.boot
        if not restarted and not overrides(_ALIVE, m.incarnation, e.state, e.incarnation):
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
        self.set_state(e, _ALIVE, cause, now, force_event=True)
        self.out.broadcast(m.node, m)

    def _suspect(self, m: Suspect, cause: str, now: float) -> None:
        e = self.table.get(m.node)
        if e is None:
            return
        if e.state is _SUSPECTED and e.suspicion is not None and m.incarnation == e.incarnation:
            if e.suspicion.confirm(m.src):
                self.out.broadcast(m.node, m)  # pass the confirmation on
            return
        if not overrides(_SUSPECTED, m.incarnation, e.state, e.incarnation):
            return
        c = self.config
        n = self.table.up_count
        lo, hi = suspicion_bounds(
            c.suspicion_mult, c.suspicion_max_timeout_mult, n, c.probe_interval
        )
        k = c.suspicion_mult - 2
        if n - 2 < k:  # too few members to ever confirm: go straight to Min
            k = 0
        e.incarnation = m.incarnation
        e.suspicion = Suspicion(m.incarnation, now, lo, hi, k, m.src)
        self.suspects.add(e.node_id)
        self.counters.suspicions += 1
        self.set_state(e, _SUSPECTED, cause, now, force_event=True)
        self.out.broadcast(m.node, m)

    def _dead(self, m: Dead, cause: str, now: float) -> None:
        e = self.table.get(m.node)
        if e is None or not overrides(_DEAD, m.incarnation, e.state, e.incarnation):
            return
        new = _LEFT if m.src == m.node else _DEAD
        if new is _LEFT and cause == "gossip":
            cause = "leave"
        e.incarnation = m.incarnation
        self._clear_suspicion(e)
        self.set_state(e, new, cause, now, force_event=True)
        self.out.broadcast(m.node, m)

    def _clear_suspicion(self, e: Entry) -> None:
        e.suspicion = None
        self.suspects.discard(e.node_id)
