"""Corrections: what a member sends straight to another that holds a stale view.

``membership`` rule 3 says a correction never waits for gossip; this is how each is sent.

Rules:
1. An ``alive`` goes straight to the member that needs it: the author of a stale accusation
   of us, the accuser we refute, and a member that passes on a stale suspicion or death of a
   third member we hold alive at a newer incarnation (``correct``).
2. A member still suspecting one we hold dead at that incarnation gets our own suspicion
   (``confirm_to``), the confirmation a lone accuser lacks (``machine`` rule 6), never the
   death itself, so a member wrongly held dead can still refute.
3. At most one confirmation a protocol period per asker and subject: two members that both
   hold the subject dead would otherwise answer each other's confirmation for ever. The pairs
   remembered are bounded (``CONFIRMED_MAX``).
4. Only members we hold up, and never ourselves, are sent a correction.
"""

from __future__ import annotations

from .members import MemberState
from .messages import Alive, Dead, Suspect
from .outbox import Outbox
from .table import Entry, MemberTable

__all__ = ["CONFIRMED_MAX", "Corrections"]

CONFIRMED_MAX = 4096  # rule 3: (asker, subject) pairs remembered to pace confirmations


class Corrections:
    """The corrections one member sends (see the module docstring)."""

    def __init__(self, table: MemberTable, outbox: Outbox, probe_interval: float) -> None:
        self.table = table
        self.out = outbox
        self._period = probe_interval
        self._confirmed: dict[tuple[int, int], float] = {}  # rule 3: (asker, subject) -> when

    def answer(self, node_id: int, alive: Alive, kind: str = "refute") -> None:
        """Rules 1 and 4: ``alive``, straight to ``node_id``."""
        e = self.table.get(node_id)
        if e is not None and e.state.is_up and e is not self.table.me:
            self.out.send((e.host, e.port), e.node_id, kind, alive)

    def correct(self, via: int | None, m: Suspect | Dead, e: Entry) -> None:
        """Rule 1: ``via`` passed on a stale accusation of ``e``, which we hold alive at a
        newer incarnation: our ``alive`` for it, straight back."""
        if via is None or via == e.node_id or e.state is not MemberState.ALIVE:
            return
        if m.incarnation < e.incarnation:
            alive = Alive(e.incarnation, e.node_id, e.host, e.port, e.boot)
            self.answer(via, alive, "correct")

    def confirm_to(self, node_id: int, dead: Entry, now: float) -> None:
        """Rules 2 and 3: ``node_id`` still suspects ``dead``, a member we hold dead."""
        key, seen = (node_id, dead.node_id), self._confirmed
        last = seen.get(key)
        if last is not None and now - last < self._period:
            return
        if len(seen) >= CONFIRMED_MAX:
            recent = now - self._period
            self._confirmed = seen = {k: t for k, t in seen.items() if t > recent}
            if len(seen) >= CONFIRMED_MAX:
                seen.clear()
        seen[key] = now
        e = self.table.get(node_id)
        me = self.table.me
        if e is not None and e.state.is_up and e is not me:
            confirm = Suspect(dead.incarnation, dead.node_id, me.node_id)
            self.out.send((e.host, e.port), e.node_id, "suspect", confirm)
