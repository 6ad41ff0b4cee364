"""The push/pull of the simulated network: what one machine hands another, as records.

Rules:
1. A push/pull hands the state over as ``StateEntry`` records, not bytes (``simnet`` rule 2):
   the rows in which the sender's table differs from the roster it shares with others
   (``table`` rule 4), the roster for the rest, less the members it removed. So a push/pull
   between two bootstrapped machines costs what their tables hold apart, not the whole table.
2. Merging a ``SyncState`` gives the receiver every row that may change its table and no other:
   a roster row neither side holds apart says what the receiver holds already.
3. A push/pull goes through only when each side can open what the other seals (both plain, or
   keyrings that hold each other's primary key); UDP packets are really sealed and opened.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .machine import SwimMachine
from .messages import StateEntry
from .table import Entry, MemberTable

__all__ = ["SyncState", "keys_match"]


@dataclass(frozen=True, slots=True)
class SyncState:
    """A member's push/pull state as sent (rule 1): the rows in which its table differs from
    the roster it shares with others, that roster for the rest (``table`` rule 4), less the
    members it removed."""

    rows: tuple[StateEntry, ...]
    ids: frozenset[int]
    roster: Mapping[int, Entry]
    removed: frozenset[int]

    @classmethod
    def of(cls, m: SwimMachine) -> SyncState:
        table = m.table
        rows = tuple(_row(table.peek(i)) for i in table.changed_ids())  # type: ignore[arg-type]
        return cls(rows, frozenset(r.node for r in rows), table.roster, table.removed())

    def rows_for(self, table: MemberTable) -> list[StateEntry]:
        """The rows that may change ``table``: all of ours, and the roster's for members the
        receiver holds apart from the roster. A roster row neither side holds itself says what
        the receiver holds already, so merging it would change nothing."""
        out = list(self.rows)
        skip, roster = self.ids | self.removed, self.roster
        if roster is table.roster:
            wanted: Iterable[int] = (*table.changed_ids(), *table.removed())
        else:
            wanted = roster
        out += [_row(roster[i]) for i in wanted if i in roster and i not in skip]
        return out


def _row(e: Entry) -> StateEntry:
    return StateEntry(e.node_id, e.host, e.port, e.incarnation, e.state.wire, e.boot)


def keys_match(a: SwimMachine, b: SwimMachine) -> bool:
    """Can each of the two open what the other seals? (Both plain counts as a match.)"""
    ka, kb = a.config.keyring, b.config.keyring
    if ka is None or kb is None:
        return ka is None and kb is None
    return ka.can_open_from(kb) and kb.can_open_from(ka)
