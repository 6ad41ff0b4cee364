"""The piggyback queue: updates waiting to be gossiped, least-sent first, with a budget.

Rules:
1. One queued update per subject member: a newer update about a member replaces the older one
   (the older one can only be stale under the precedence rules).
2. Each update goes out ``retransmit_mult * ceil(log10(N + 1))`` times, but never fewer than
   one gossip tick's fanout (``gossip_nodes``), then is dropped. Only sends to members held
   alive count: a suspected or dead member cannot pass the news on, so the budget is never
   spent on the failed member a rumour is about.
3. ``take(budget)`` fills a packet: fewest transmissions first, then newest first. A queued
   update is a record with its size in bytes, measured once when it is queued.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["BroadcastQueue", "retransmit_limit"]

P = TypeVar("P", bound=Hashable)  # a queued update (the outbox's: a message record)


def retransmit_limit(retransmit_mult: int, n_members: int, fanout: int = 1) -> int:
    """How many times an update is sent in a cluster of ``n_members``: memberlist's
    ``mult * ceil(log10(N + 1))``, but never less than one gossip tick's ``fanout``
    (rule 2)."""
    return max(fanout, retransmit_mult * max(1, math.ceil(math.log10(n_members + 1))))


@dataclass(slots=True)
class _Item:
    """One queued update (its type is the queue's ``P``; a plain class, so it compiles)."""

    subject: int
    part: Any
    size: int
    order: int
    sent: int = 0


class BroadcastQueue(Generic[P]):
    """Updates keyed by subject, each with its size and a transmission count."""

    __slots__ = ("_items", "_order")

    def __init__(self) -> None:
        self._items: dict[int, _Item] = {}
        self._order = 0

    def __len__(self) -> int:
        return len(self._items)

    def push(self, subject: int, part: P, size: int) -> None:
        """Queue an update of ``size`` bytes about ``subject``, replacing any older one."""
        self._order += 1
        self._items[subject] = _Item(subject, part, size, self._order)

    def has(self, subject: int) -> bool:
        return subject in self._items

    def pending(self, subject: int) -> P | None:
        item = self._items.get(subject)
        return item.part if item else None

    def take(
        self,
        budget: int,
        limit: int,
        per_part_overhead: int = 5,
        skip: frozenset[P] = frozenset(),
        count: bool = True,
    ) -> list[tuple[P, int]]:
        """Parts that fit in ``budget`` bytes, least-sent first, each with its size; each
        counts as sent once (unless ``count`` is false: rule 2).

        Parts sent ``limit`` times are dropped from the queue; parts in ``skip`` (already in
        the packet) are left alone.
        """
        if not self._items or budget <= 0:
            return []
        out: list[tuple[P, int]] = []
        items = sorted(self._items.values(), key=lambda it: (it.sent, -it.order))
        for it in items:
            cost = it.size + per_part_overhead
            if cost > budget or it.part in skip:
                continue
            budget -= cost
            out.append((it.part, it.size))
            it.sent += count
            if it.sent >= limit:
                del self._items[it.subject]
            if budget < 16:
                break
        return out

    def clear(self) -> None:
        self._items.clear()
