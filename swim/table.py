"""The member table of one machine: entries, the round-robin probe order, random picks.

Rules:
1. Entries are not removed: dead and left members stay listed (the API shows them dead) and
   keep their incarnation, so a stale ``alive`` cannot resurrect them. The one exception is
   a full table (``membership`` rule 7): ``remove`` forgets the member held down the longest
   (``longest_down``, O(1)) to make room.
2. Probing walks a shuffled list of member ids; a full pass reshuffles, a newcomer is inserted
   at a random position of the rest of the current pass, so one member is probed at least
   once every 2n - 1 periods and a newcomer within the pass it joined in.
3. Randomness comes from the ``random.Random`` the machine was given; nothing global.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Container, Iterator
from dataclasses import dataclass

from .lifeguard import Suspicion
from .members import Member, MemberState

__all__ = ["Entry", "MemberTable"]


@dataclass(slots=True)
class Entry:
    """The live, mutable row of one member (only the machine mutates it)."""

    node_id: int
    host: str
    port: int
    incarnation: int
    state: MemberState
    boot: int
    changed: float
    suspicion: Suspicion | None = None

    def snapshot(self) -> Member:
        return Member(self.node_id, self.host, self.port, self.state, self.incarnation)


class MemberTable:
    """All members known to one machine, itself included."""

    def __init__(self, me: Entry, rng: random.Random) -> None:
        self.me = me
        self._rng = rng
        self._entries: dict[int, Entry] = {me.node_id: me}
        self._ids: list[int] = []  # every other member, for random picks
        self._slot: dict[int, int] = {}  # id -> its index in _ids (removal swaps in the last)
        self._down: dict[int, None] = {}  # members held down, in the order they went down
        self._order: list[int] = []  # probe order
        self._pos = 0
        self._up = 1  # members not dead or left, self included
        self._addr: dict[tuple[str, int], int] = {(me.host, me.port): me.node_id}

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._entries

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries.values())

    def get(self, node_id: int) -> Entry | None:
        return self._entries.get(node_id)

    @property
    def up_count(self) -> int:
        """Members believed up (alive, probe_failed or suspected), self included."""
        return self._up

    def add(self, entry: Entry) -> None:
        """Insert a member not yet known (at a random place in the probe order)."""
        assert entry.node_id not in self._entries
        self._entries[entry.node_id] = entry
        self._slot[entry.node_id] = len(self._ids)
        self._ids.append(entry.node_id)
        self._addr[(entry.host, entry.port)] = entry.node_id
        if entry.state.is_up:
            self._up += 1
            # Somewhere in what is left of this pass, so a newcomer is probed within it.
            self._order.insert(self._rng.randint(self._pos, len(self._order)), entry.node_id)
        else:
            self._down[entry.node_id] = None

    def remove(self, entry: Entry) -> None:
        """Forget a member held down (rule 1: only to make room in a full table)."""
        assert entry is not self.me
        assert entry.state.is_down
        i = entry.node_id
        del self._entries[i]
        self._down.pop(i, None)
        slot, last = self._slot.pop(i), self._ids.pop()
        if last != i:
            self._ids[slot] = last
            self._slot[last] = slot
        if self._addr.get((entry.host, entry.port)) == i:
            del self._addr[(entry.host, entry.port)]

    def longest_down(self) -> Entry | None:
        """The member held down (dead or left) the longest, if any."""
        for i in self._down:
            return self._entries[i]
        return None

    def note_transition(self, entry: Entry, old: MemberState) -> None:
        """Keep the up count and the probe order in step with a state change."""
        if old.is_up == entry.state.is_up:
            return
        if entry.state.is_up:
            self._up += 1
            self._down.pop(entry.node_id, None)
            if entry is not self.me and entry.node_id not in self._order[self._pos :]:
                self._order.insert(self._rng.randint(self._pos, len(self._order)), entry.node_id)
        else:
            self._up -= 1
            if entry is not self.me:
                self._down[entry.node_id] = None

    def next_probe_target(self) -> Entry | None:
        """The next up member in the shuffled round-robin order, or None if alone."""
        for _ in range(2):
            while self._pos < len(self._order):
                e = self._entries.get(self._order[self._pos])  # None: removed
                self._pos += 1
                if e is not None and e.state.is_up and e is not self.me:
                    return e
            self._order = [i for i in self._ids if self._entries[i].state.is_up]
            self._rng.shuffle(self._order)
            self._pos = 0
        return None

    def random_up(self, k: int, exclude: Container[int] = ()) -> list[Entry]:
        """Up to ``k`` distinct random up members other than self and ``exclude``."""
        return self._pick(k, lambda e: e.state.is_up and e.node_id not in exclude)

    def gossip_targets(self, k: int, now: float, dead_time: float) -> list[Entry]:
        """Up to ``k`` random members to gossip to: up ones, and the recently dead."""

        def ok(e: Entry) -> bool:
            if e.state.is_up:
                return True
            return e.state is MemberState.DEAD and now - e.changed <= dead_time

        return self._pick(k, ok)

    def _pick(self, k: int, ok: Callable[[Entry], bool]) -> list[Entry]:
        ids = self._ids
        if k <= 0 or not ids:
            return []
        chosen: dict[int, Entry] = {}
        # Rejection sampling is O(k) when most members qualify (the usual case)...
        for _ in range(4 * k + 8):
            e = self._entries[ids[self._rng.randrange(len(ids))]]
            if e.node_id not in chosen and ok(e):
                chosen[e.node_id] = e
                if len(chosen) == k:
                    return list(chosen.values())
        # ...and a full scan keeps it correct when few do.
        pool = [self._entries[i] for i in ids if i not in chosen and ok(self._entries[i])]
        need = min(k - len(chosen), len(pool))
        return [*chosen.values(), *self._rng.sample(pool, need)]

    def set_addr(self, entry: Entry, host: str, port: int) -> None:
        """Move a member to a new address (a restart elsewhere)."""
        if self._addr.get((entry.host, entry.port)) == entry.node_id:
            del self._addr[(entry.host, entry.port)]
        entry.host, entry.port = host, port
        self._addr[(host, port)] = entry.node_id

    def id_at(self, host: str, port: int) -> int | None:
        """The id of the member that holds host:port, if any (``membership`` rule 8)."""
        return self._addr.get((host, port))

    def holder(self, host: str, port: int) -> Entry | None:
        """The member that holds host:port, if any."""
        i = self._addr.get((host, port))
        return None if i is None else self._entries.get(i)

    def snapshot(self) -> list[Member]:
        return [self._entries[i].snapshot() for i in sorted(self._entries)]
