"""Newcomers: who may enter a member table, and at what pace.

Messages about members nobody knows (ghosts) can neither grow the table without bound nor take
a live member's address; these hold without a keyring too.

Rules:
1. Bounded growth. A member we do not know enters the table (from gossip or push/pull) only
   within a budget: at most ``new_members_per_period`` per protocol period. The rest are
   refused for now (``new_member_rate``): their alives wait for the next periods' budgets in
   a room of ``WAITING`` budgets (the oldest forgotten when it is full), and a refusal sets
   ``crowded``, which brings the next push/pull forward to the next period (``resync`` rule
   3), so a large join still converges, a budget a period.
2. At most ``max_members`` entries in all: at the cap, the member held down the longest makes
   room if it has been down longer than ``gossip_to_the_dead_time``, else the newcomer is
   refused (``table_full``). Both refusals count as ``refused_new_member``. Below the cap
   nothing is removed: every dead member stays shown.
3. One address, one live member. A member may not take a host:port (joining there, or moving
   there) that the table holds for another member we hold up (alive, probe_failed,
   suspected), us included: refused and counted (``refused_address``), so a ghost cannot take
   over the address lookup (intake, fault injection) of a live member. A holder held dead or
   left gives its address up: a new id on a reused port (a restarted or inducted node) takes
   it once the old one is known to be down.
"""

from __future__ import annotations

from collections.abc import Iterator

from .config import SwimConfig
from .messages import Alive
from .outputs import Counters
from .table import MemberTable

__all__ = ["WAITING", "Newcomers"]

WAITING = 4  # rule 1: newcomers over budget wait in a room of this many periods' budgets


class Newcomers:
    """The door of a member table: the budget, the waiting room and the address check."""

    def __init__(self, config: SwimConfig, table: MemberTable, counters: Counters) -> None:
        self.config = config
        self.table = table
        self.counters = counters
        self._budget_ends = float("-inf")  # the budget's protocol period
        self._budget = 0
        self._waiting: dict[int, tuple[Alive, str]] = {}  # newcomers over budget, oldest first
        self.crowded = False  # a newcomer was refused for the budget since the last push/pull

    def admit(
        self, node_id: int, host: str, port: int, now: float, wait: tuple[Alive, str] | None
    ) -> bool:
        """May a member we do not know enter the table? Counted if not.

        ``wait`` (the newcomer's alive and its cause) waits for the next period's budget
        if this one is spent, in a room of ``WAITING`` that forgets the oldest when full.
        """
        if not self.address_free(node_id, host, port):
            return False
        if self._refill(now) <= 0:
            self.counters.drop("new_member_rate")
            self.crowded = True
            if wait is not None:
                self._waiting.pop(node_id, None)
                if len(self._waiting) >= WAITING * self.config.new_members_per_period:
                    del self._waiting[next(iter(self._waiting))]
                self._waiting[node_id] = wait
            return False
        if len(self.table) >= self.config.max_members:
            old = self.table.longest_down()
            if old is None or now - old.changed <= self.config.gossip_to_the_dead_time:
                self.counters.drop("table_full")
                return False
            self.table.remove(old)
            self.counters.evicted += 1
        self._budget -= 1
        return True

    @property
    def waiting(self) -> bool:
        """Does a newcomer wait for a later period's budget?"""
        return bool(self._waiting)

    def due(self, now: float) -> Iterator[tuple[Alive, str]]:
        """The newcomers that waited, oldest first, while this period's budget lasts (each
        one the caller lets in draws on it)."""
        while self._waiting and self._refill(now) > 0:
            yield self._waiting.pop(next(iter(self._waiting)))

    def address_free(self, node_id: int, host: str, port: int) -> bool:
        """Rule 3: is host:port free for ``node_id`` (held by nobody up but it)? Counted if not."""
        holder = self.table.holder(host, port)
        if holder is None or holder.node_id == node_id or holder.state.is_down:
            return True
        self.counters.drop("refused_address")
        return False

    def _refill(self, now: float) -> int:
        if now >= self._budget_ends:
            self._budget_ends = now + self.config.probe_interval
            self._budget = self.config.new_members_per_period
        return self._budget
