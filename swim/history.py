"""The membership history: a bounded ring of a member's table changes, each with a sequence number.

``History.record(events, wall=..., mono_offset=...)`` numbers every ``MemberEvent`` the machine
emitted (1, 2, 3, ... with no gap) and keeps the newest ``capacity``; ``page(after, limit)``
reads them back oldest first, for a client that polls with the last ``seq`` it saw.

Rules:
1. Pure: no clock, no I/O. The caller passes the wall time (epoch seconds) and the offset that
   moves the machine's clock onto the host's monotonic clock (seconds), so a simulated member
   and a real one keep the same history.
2. ``seq`` starts at 1 and strictly increases by one per event; an entry leaves the ring only
   when ``capacity`` newer ones have arrived. A reader whose cursor is older than the ring is
   told how many events it missed (``dropped``), never silently skipped.
3. ``since(subject)`` is the wall time of the last change of that member, kept apart from the
   ring, so it survives the ring's wraparound (one float per member ever seen).
4. A bad ``after`` or ``limit`` is a ``ValueError``; boundaries parse their own text first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from .members import MemberEvent

__all__ = ["HISTORY_SIZE", "History", "HistoryEntry", "HistoryPage"]

HISTORY_SIZE = 10_000  # entries a member keeps by default


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One recorded change: its ``seq``, ``wall`` (epoch s), and the event with ``mono`` on
    the host's monotonic clock (s)."""

    seq: int
    wall: float
    event: MemberEvent

    @property
    def mono(self) -> float:
        return self.event.mono

    def log_line(self) -> dict[str, Any]:
        """The event-log line: the event, its ``mono`` and ``wall`` (no ``seq``)."""
        return self.event.as_dict(wall=self.wall)

    def as_dict(self) -> dict[str, Any]:
        """The API shape: ``seq``, ``wall``, ``mono``, observer, subject, old, new,
        incarnation, cause."""
        return {"seq": self.seq, **self.log_line()}


class HistoryPage(NamedTuple):
    """What one read returns: ``events`` oldest first, ``next`` (the last ``seq`` returned, or
    the ``after`` asked with when none) and ``dropped`` (events older than the ring that the
    cursor skipped)."""

    events: tuple[HistoryEntry, ...]
    next: int
    dropped: int


class History:
    """The newest ``capacity`` changes of one member's table, numbered from 1."""

    def __init__(self, capacity: int = HISTORY_SIZE) -> None:
        if capacity < 1:
            raise ValueError(f"history capacity must be at least 1, not {capacity}")
        self.capacity = capacity
        self._slots: list[HistoryEntry | None] = [None] * capacity
        self._last = 0  # the seq of the newest entry; 0 before any
        self._since: dict[int, float] = {}

    @property
    def last_seq(self) -> int:
        """The newest entry's ``seq`` (0 before any)."""
        return self._last

    @property
    def first_seq(self) -> int:
        """The oldest ``seq`` still held (1 until the ring wraps; ``last_seq + 1`` when empty)."""
        return max(1, self._last - self.capacity + 1)

    def __len__(self) -> int:
        return min(self._last, self.capacity)

    def record(
        self, events: Iterable[MemberEvent], *, wall: float, mono_offset: float = 0.0
    ) -> list[HistoryEntry]:
        """Number and keep ``events`` (seen at ``wall``, epoch s; ``mono`` moved by
        ``mono_offset`` s); the entries made, in order."""
        made = []
        for ev in events:
            self._last += 1
            entry = HistoryEntry(self._last, wall, replace(ev, mono=ev.mono + mono_offset))
            self._slots[self._last % self.capacity] = entry
            self._since[ev.subject] = wall
            made.append(entry)
        return made

    def page(self, after: int = 0, limit: int = 500) -> HistoryPage:
        """Entries with ``seq > after``, oldest first, at most ``limit`` of them."""
        if after < 0:
            raise ValueError(f"after must be 0 or more, not {after}")
        if limit < 1:
            raise ValueError(f"limit must be 1 or more, not {limit}")
        first = self.first_seq
        dropped = max(0, first - 1 - after)
        start = max(after + 1, first)
        stop = min(self._last, start + limit - 1)
        events = tuple(self._at(seq) for seq in range(start, stop + 1))
        return HistoryPage(events, events[-1].seq if events else after, dropped)

    def since(self, subject: int) -> float | None:
        """Wall time (epoch s) of the last change of ``subject``; None if none was seen."""
        return self._since.get(subject)

    def _at(self, seq: int) -> HistoryEntry:
        entry = self._slots[seq % self.capacity]
        assert entry is not None  # first_seq <= seq <= last_seq: the slot holds it
        return entry
