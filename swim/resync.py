"""Resync: when a member pushes and pulls its whole state (anti-entropy) and re-joins seeds.

The seeds are the hostfile's entries in its order, ours among them or not: every address of
the cluster a member was started with, not a chosen few, so a member that comes back while
some of them are down still finds whoever lives. The simulator hands its nodes the same list
(every node's address in id order, one tuple shared by all).

Rules:
1. Every ``pushpull_interval`` (stretched by log2 N above 32 members) a push/pull with one
   random member held up; the first falls at a random point of 0.5..1.5 intervals, so
   members started together do not sync together.
2. Every ``rejoin_interval`` a push/pull with up to ``JOIN_SEEDS`` seeds not held up (never
   our own), drawn at random: it heals partitions that outlived ``gossip_to_the_dead_time``.
   While alone (the initial join found no seed listening, or we came back while the seeds
   we joined through are down) every period instead, so a member that restarts alone finds
   any live member its hostfile names within a few periods, and a cluster launched all at
   once converges at once. The first comes one period after start. Several at once, so a
   seed that is down for good does not hold the heal back by whole intervals: one re-join
   reaches a live seed unless ``JOIN_SEEDS`` of the missing ones are down. Up to
   ``SCAN_MAX`` seeds the draw is from every seed not held up; above, from ``DRAWS`` seeds
   picked at random, those not held up kept: at any size a re-join costs at most ``DRAWS``
   table look-ups (1,000 members: a lone member's re-joins ask 3 seeds a period, a member at
   rest does 12 look-ups every 20 s), and a member alone or cut off from most seeds still
   finds ``JOIN_SEEDS`` to ask.
3. Catch-up: the next push/pull comes early, a period later when newcomers were refused for
   the budget (``newcomers`` rule 1: a large join converges), ``CATCH_UP`` periods after a
   member held dead came back (``machine`` rule 9: a member that missed a refutation across a
   healed partition is not heard from while we hold it dead).
4. Only asks: ``Outbox.sync`` records the exchange, the driver or simnet runs it over TCP.
5. The initial join pushes and pulls with the first ``JOIN_SEEDS`` seeds other than us only.
   One exchange is enough to enter (its state names everyone the seed knows, and the seed
   gossips our alive on); a few more guard against seeds that are down, and rule 2 tries the
   others, a few a period, while we are alone. Every seed would cost node k of a cluster
   launched in order k full-state exchanges, N^3/6 entries in all.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence

from .config import SwimConfig
from .membership import Membership
from .outbox import Outbox
from .table import MemberTable, below

__all__ = ["CATCH_UP", "DRAWS", "JOIN_SEEDS", "SCAN_MAX", "Resync"]

CATCH_UP = 2  # periods from a member coming back to our next push/pull (rule 3)
JOIN_SEEDS = 3  # seeds the initial join pushes and pulls with (rule 5)
SCAN_MAX = 64  # rule 2: up to this many seeds, a re-join looks at each
DRAWS = 4 * JOIN_SEEDS  # rule 2: above it, seeds drawn at random a re-join
_NEVER = math.inf


class Resync:
    """The push/pull and re-join timers of one member."""

    def __init__(
        self,
        config: SwimConfig,
        table: MemberTable,
        outbox: Outbox,
        seeds: Sequence[tuple[str, int]],
        rng: random.Random,
        now: float,
    ) -> None:
        self.config = config
        self.table = table
        self.outbox = outbox
        self.seeds = seeds if isinstance(seeds, tuple) else tuple(seeds)  # shared, not copied
        self._me = (table.me.host, table.me.port)
        # A list of only ourselves is no seed at all (two entries hold at least one other).
        n = len(self.seeds)
        self._has_seeds = n > 1 or (n == 1 and self.seeds[0] != self._me)
        self._rng = rng
        self._next_pushpull = now + config.pushpull_interval * (0.5 + rng.random())
        self._next_rejoin = now + min(config.probe_interval, config.rejoin_interval)

    def join(self) -> None:
        """Push/pull with the first ``JOIN_SEEDS`` seeds other than us (rule 5)."""
        others = (s for s in self.seeds if s != self._me)
        for host, port in itertools.islice(others, JOIN_SEEDS):
            self.outbox.sync(host, port, join=True)

    def next_deadline(self) -> float:
        c = self.config
        t = self._next_pushpull if c.pushpull_interval > 0 else _NEVER
        if c.rejoin_interval > 0 and self._has_seeds:
            t = min(t, self._next_rejoin)
        return t

    def tick(self, now: float) -> None:
        c = self.config
        if c.pushpull_interval > 0 and now >= self._next_pushpull:
            self._next_pushpull = now + c.pushpull_interval * self._scale()
            peer = self.table.random_up(1)
            if peer:
                self.outbox.sync(peer[0].host, peer[0].port, join=False)
        if c.rejoin_interval > 0 and self._has_seeds and now >= self._next_rejoin:
            alone = self.table.up_count <= 1
            self._next_rejoin = now + (
                min(c.probe_interval, c.rejoin_interval) if alone else c.rejoin_interval
            )
            self._rejoin()

    def catch_up(self, membership: Membership, now: float) -> None:
        """Rule 3, for what ``membership`` noted since the last call."""
        soon = None
        if membership.newcomers.crowded:
            soon = now + self.config.probe_interval
        elif membership.rejoined:
            soon = now + CATCH_UP * self.config.probe_interval
        membership.newcomers.crowded = membership.rejoined = False
        if soon is not None:
            self._next_pushpull = min(self._next_pushpull, soon)

    def _rejoin(self) -> None:
        seeds, rng = self.seeds, self._rng
        if len(seeds) <= SCAN_MAX:
            missing = [s for s in seeds if self._missing(s)]
            picks = rng.sample(missing, min(JOIN_SEEDS, len(missing)))
        else:
            picks = []
            for _ in range(DRAWS):
                s = seeds[below(rng, len(seeds))]  # rng.randrange, unwrapped
                if s not in picks and self._missing(s):
                    picks.append(s)
                    if len(picks) == JOIN_SEEDS:
                        break
        for host, port in picks:
            self.outbox.sync(host, port, join=True)

    def _missing(self, seed: tuple[str, int]) -> bool:
        """Is ``seed`` another member's address that no member we hold up holds?"""
        if seed == self._me:
            return False
        i = self.table.id_at(*seed)
        e = None if i is None else self.table.peek(i)
        return e is None or not e.state.is_up

    def _scale(self) -> float:
        n = self.table.up_count
        return 1.0 if n <= 32 else math.ceil(math.log2(n) - math.log2(32)) + 1.0
