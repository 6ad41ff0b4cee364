"""The member table of one machine: entries, the round-robin probe order, random picks.

Rules:
1. Entries are not removed: dead and left members stay listed (the API shows them dead) and
   keep their incarnation, so a stale ``alive`` cannot resurrect them. The one exception is
   a full table (``newcomers`` rule 2): ``remove`` forgets the member held down the longest
   (``longest_down``, O(1)) to make room.
2. Probing walks a shuffled order of member ids, drawn lazily (Fisher-Yates one step per
   probe, so a pass costs nothing up front); a full pass starts a new one, and a newcomer, or
   a member that comes back up after its turn, joins the rest of the current pass at a random
   place, so one member is probed at least once every 2n - 1 periods and a newcomer within
   the pass it joined in.
3. Randomness comes from the ``random.Random`` the machine was given; nothing global.
4. A table may start from a shared ``Roster`` (a simulated cluster's instant bootstrap): the
   roster's rows are read in place and copied into this table the first time ``get`` hands
   one out, so N members cost one roster, not N tables of N rows. Rows yielded by iterating
   a table are for reading only; ``get`` is the one way to a row that may be changed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from dataclasses import dataclass

from .lifeguard import Suspicion
from .members import Member, MemberState

__all__ = ["Entry", "MemberTable", "Roster", "below"]

_GONE = -1  # an address given up that the roster still lists


def below(rng: random.Random, n: int) -> int:
    """``rng.randrange(n)`` for ``n > 0``: the same draw (getrandbits of n's bit length, drawn
    again while it is n or more, as CPython draws it), without the library's Python frames,
    which cost the compiled simulator more than the draw (``native`` rule 1)."""
    k = n.bit_length()
    r = rng.getrandbits(k)
    while r >= n:
        r = rng.getrandbits(k)
    return r


@dataclass(slots=True, init=False)
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
    retired: tuple[int, ...] = ()  # boots a restart replaced here (``membership`` rule 4)

    def __init__(  # its own, so that it runs compiled (``native`` rule 4)
        self,
        node_id: int,
        host: str,
        port: int,
        incarnation: int,
        state: MemberState,
        boot: int,
        changed: float,
        suspicion: Suspicion | None = None,
        retired: tuple[int, ...] = (),
    ) -> None:
        self.node_id, self.host, self.port = node_id, host, port
        self.incarnation, self.state, self.boot = incarnation, state, boot
        self.changed, self.suspicion, self.retired = changed, suspicion, retired

    def snapshot(self) -> Member:
        return Member(self.node_id, self.host, self.port, self.state, self.incarnation)

    def copy(self) -> Entry:
        e = self
        c = Entry(e.node_id, e.host, e.port, e.incarnation, e.state, e.boot, e.changed)
        c.retired = e.retired
        return c


class Roster:
    """Rows shared by every table of a simulated cluster at its start (rule 4): all alive,
    never changed once built."""

    __slots__ = ("addrs", "ids", "rows")

    def __init__(self, rows: Iterable[Entry]) -> None:
        self.rows: dict[int, Entry] = {}
        for e in rows:
            if not e.state.is_up or e.suspicion is not None or e.node_id in self.rows:
                raise ValueError(f"a roster lists each member once, alive: {e.node_id}")
            self.rows[e.node_id] = e.copy()
        self.ids: tuple[int, ...] = tuple(self.rows)
        self.addrs: dict[tuple[str, int], int] = {(e.host, e.port): i for i, e in self.rows.items()}


class MemberTable:
    """All members known to one machine, itself included."""

    def __init__(self, me: Entry, rng: random.Random, roster: Roster | None = None) -> None:
        self.me = me
        self._rng = rng
        base = roster or _EMPTY
        if roster is not None and roster.rows.get(me.node_id, me).boot != me.boot:
            raise ValueError("the roster lists another boot of this member")
        self._base: Mapping[int, Entry] = base.rows
        self._base_ids = base.ids
        self._base_addr = base.addrs
        self._entries: dict[int, Entry] = {me.node_id: me}  # own rows (rule 4's copies too)
        self._extra: list[int] = []  # ids after the roster's, in the order they came
        self._gone: set[int] = set()  # removed ids whose place in the id sequence stays
        self._count = max(1, len(self._base) + (me.node_id not in self._base))
        self._down: dict[int, None] = {}  # members held down, in the order they went down
        self._up = self._count  # members not dead or left, self included (roster: all alive)
        self._addr: dict[tuple[str, int], int] = {(me.host, me.port): me.node_id}
        # Rule 2: the pass covers sequence places [_pos, _end); _swaps holds moved ones.
        self._end = self._pos = 0
        self._swaps: dict[int, int] = {}
        self._drawn: set[int] = set()

    def __len__(self) -> int:
        return self._count

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._entries or (node_id in self._base and node_id not in self._gone)

    def __iter__(self) -> Iterator[Entry]:
        """Every member, for reading (rule 4)."""
        own, gone = self._entries, self._gone
        yield from own.values()
        for i, e in self._base.items():
            if i not in own and i not in gone:
                yield e

    def get(self, node_id: int) -> Entry | None:
        e = self._entries.get(node_id)
        if e is None:
            b = self._base.get(node_id)
            if b is None or node_id in self._gone:
                return None
            e = self._entries[node_id] = b.copy()
        return e

    def peek(self, node_id: int) -> Entry | None:
        """A row for reading only, without copying it in (rule 4)."""
        e = self._entries.get(node_id)
        if e is None and node_id not in self._gone:
            return self._base.get(node_id)
        return e

    def own_ids(self) -> list[int]:
        """Ids of the rows this table holds itself (rule 4: changed, or handed out by get)."""
        return list(self._entries)

    def changed_ids(self) -> list[int]:
        """Ids of the members whose rows differ from the roster's (all without a roster):
        what a push/pull must carry besides the roster (rule 4)."""
        base = self._base
        if not base:
            return list(self._entries)
        out = []
        for i, e in self._entries.items():
            b = base.get(i)
            if (
                b is None
                or e.incarnation != b.incarnation
                or e.state.wire is not b.state
                or e.boot != b.boot
                or e.host != b.host
                or e.port != b.port
            ):
                out.append(i)
        return out

    def removed(self) -> frozenset[int]:
        """Roster members this table removed (rule 1), whose roster rows no longer count."""
        return frozenset(i for i in self._gone if i in self._base) if self._gone else frozenset()

    @property
    def roster(self) -> Mapping[int, Entry]:
        """The shared roster's rows (empty without one), for reading."""
        return self._base

    @property
    def up_count(self) -> int:
        """Members believed up (alive, probe_failed or suspected), self included."""
        return self._up

    def add(self, entry: Entry) -> None:
        """Insert a member not yet known (at a random place in the rest of the probe pass)."""
        i = entry.node_id
        assert i not in self
        self._entries[i] = entry
        self._count += 1
        if i in self._gone:
            self._gone.discard(i)  # its place in the id sequence is still there
        elif i not in self._base:
            self._extra.append(i)
        self._addr[(entry.host, entry.port)] = i
        if entry.state.is_up:
            self._up += 1
            self._join_pass(i)
        else:
            self._down[i] = None

    def remove(self, entry: Entry) -> None:
        """Forget a member held down (rule 1: only to make room in a full table)."""
        assert entry is not self.me
        assert entry.state.is_down
        i = entry.node_id
        del self._entries[i]
        self._count -= 1
        self._gone.add(i)
        self._down.pop(i, None)
        if self.id_at(entry.host, entry.port) == i:
            self._drop_addr((entry.host, entry.port))

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
            if entry is not self.me and entry.node_id in self._drawn:
                self._join_pass(entry.node_id)
        else:
            self._up -= 1
            if entry is not self.me:
                self._down[entry.node_id] = None

    # ---- probe order (rule 2) -------------------------------------------------------------

    def next_probe_target(self) -> Entry | None:
        """The next up member in the shuffled round-robin order, or None if alone."""
        for _ in range(2):
            while self._pos < self._end:
                e = self.get(self._draw())  # None: removed
                if e is not None and e.state.is_up and e is not self.me:
                    return e
            self._new_pass()
        return None

    def _draw(self) -> int:
        """One Fisher-Yates step: a random id of the rest of the pass."""
        pos, swaps = self._pos, self._swaps
        j = pos + below(self._rng, self._end - pos)
        picked = swaps.get(j)
        if picked is None:
            picked = self._id_at(j)
        if j != pos:
            here = swaps.pop(pos, None)
            swaps[j] = self._id_at(pos) if here is None else here
        else:
            swaps.pop(pos, None)
        self._pos = pos + 1
        self._drawn.add(picked)
        return picked

    def _join_pass(self, node_id: int) -> None:
        """Put ``node_id`` at the end of the pass: the draw places it at random in the rest."""
        if self._end > self._pos:
            self._swaps[self._end] = node_id
            self._end += 1
            self._drawn.discard(node_id)

    def _new_pass(self) -> None:
        if 2 * len(self._gone) > self._seq_len():
            # Drop the places of removed ids (between passes: no pass refers to them); the
            # roster's places stay, and so does the mark of a removed roster member.
            gone = self._gone
            self._extra = [i for i in self._extra if i not in gone]
            self._gone = {i for i in gone if i in self._base}
        self._swaps.clear()
        self._drawn.clear()
        self._pos, self._end = 0, self._seq_len()

    def _seq_len(self) -> int:
        return len(self._base_ids) + len(self._extra)

    def _id_at(self, k: int) -> int:
        nb = len(self._base_ids)
        return self._base_ids[k] if k < nb else self._extra[k - nb]

    # ---- random picks ---------------------------------------------------------------------

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
        n, me = self._seq_len(), self.me.node_id
        if k <= 0 or n == 0:
            return []
        chosen: dict[int, Entry] = {}
        # Rejection sampling is O(k) when most members qualify (the usual case)...
        for _ in range(4 * k + 8):
            i = self._id_at(below(self._rng, n))
            e = self.peek(i)
            if e is not None and i != me and i not in chosen and ok(e):
                chosen[i] = e
                if len(chosen) == k:
                    return self._own(chosen.values())
        # ...and a full scan keeps it correct when few do.
        pool = [e for e in self if e is not self.me and e.node_id not in chosen and ok(e)]
        need = min(k - len(chosen), len(pool))
        return self._own([*chosen.values(), *self._rng.sample(pool, need)])

    def _own(self, rows: Iterable[Entry]) -> list[Entry]:
        out = []
        for e in rows:
            got = self.get(e.node_id)
            assert got is not None
            out.append(got)
        return out

    # ---- addresses ------------------------------------------------------------------------

    def set_addr(self, entry: Entry, host: str, port: int) -> None:
        """Move a member to a new address (a restart elsewhere)."""
        if self.id_at(entry.host, entry.port) == entry.node_id:
            self._drop_addr((entry.host, entry.port))
        entry.host, entry.port = host, port
        self._addr[(host, port)] = entry.node_id

    def _drop_addr(self, addr: tuple[str, int]) -> None:
        if addr in self._base_addr:
            self._addr[addr] = _GONE
        else:
            self._addr.pop(addr, None)

    def id_at(self, host: str, port: int) -> int | None:
        """The id of the member that holds host:port, if any (``newcomers`` rule 3)."""
        i = self._addr.get((host, port))
        if i is None:
            return self._base_addr.get((host, port))
        return None if i == _GONE else i

    def holder(self, host: str, port: int) -> Entry | None:
        """The member that holds host:port, if any (for reading: rule 4)."""
        i = self.id_at(host, port)
        return None if i is None else self.peek(i)

    def snapshot(self) -> list[Member]:
        return sorted((e.snapshot() for e in self), key=lambda m: m.node_id)


_EMPTY = Roster(())
