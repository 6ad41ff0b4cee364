"""Records of membership: states, the public member view, change events, precedence.

Rules:
1. ``MemberState`` is what a member's table says about another member. ``probe_failed`` is local
   only (a missed direct probe); the other four states travel on the wire.
2. ``Member`` and ``MemberEvent`` are frozen: callers get snapshots, never the live table.
3. The precedence rules of SWIM live here, in one pure function, so the machine and the
   push/pull merge apply exactly the same order.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

__all__ = ["Member", "MemberEvent", "MemberState", "overrides"]


class MemberState(enum.StrEnum):
    """State of a member as seen by one observer (``left`` is shown as dead by the API)."""

    ALIVE = "alive"
    PROBE_FAILED = "probe_failed"
    SUSPECTED = "suspected"
    DEAD = "dead"
    LEFT = "left"

    @property
    def is_down(self) -> bool:
        """Dead or left: no longer probed, not counted in the cluster size."""
        return self in (MemberState.DEAD, MemberState.LEFT)

    @property
    def is_up(self) -> bool:
        """Alive, probe_failed or suspected: still probed and gossiped to."""
        return not self.is_down

    @property
    def wire(self) -> MemberState:
        """The state as gossiped: ``probe_failed`` is local, so it travels as ``alive``."""
        return MemberState.ALIVE if self is MemberState.PROBE_FAILED else self


@dataclass(frozen=True, slots=True)
class Member:
    """One row of a member table: who, where (UDP and TCP share the port), what state."""

    node_id: int
    host: str
    port: int
    state: MemberState
    incarnation: int


@dataclass(frozen=True, slots=True, init=False)
class MemberEvent:
    """One membership change seen by ``observer`` (``mono`` in seconds on its clock)."""

    mono: float
    observer: int
    subject: int
    old: str | None
    new: str
    incarnation: int
    cause: str
    boot: int | None = None  # the subject's boot as the observer holds it (simulations keep it)

    def __init__(  # its own, so that it runs compiled (``native`` rule 4)
        self,
        mono: float,
        observer: int,
        subject: int,
        old: str | None,
        new: str,
        incarnation: int,
        cause: str,
        boot: int | None = None,
    ) -> None:
        object.__setattr__(self, "mono", mono)
        object.__setattr__(self, "observer", observer)
        object.__setattr__(self, "subject", subject)
        object.__setattr__(self, "old", old)
        object.__setattr__(self, "new", new)
        object.__setattr__(self, "incarnation", incarnation)
        object.__setattr__(self, "cause", cause)
        object.__setattr__(self, "boot", boot)

    def as_dict(self, wall: float | None = None) -> dict[str, Any]:
        """The event-log line shape; ``wall`` defaults to ``mono`` (virtual time)."""
        return {
            "mono": self.mono,
            "wall": self.mono if wall is None else wall,
            "observer": self.observer,
            "subject": self.subject,
            "old": self.old,
            "new": self.new,
            "incarnation": self.incarnation,
            "cause": self.cause,
        }


def overrides(new_state: MemberState, new_inc: int, old_state: MemberState, old_inc: int) -> bool:
    """Does gossip ``new_state(new_inc)`` replace what we hold, ``old_state(old_inc)``?

    alive(i) beats alive/suspect(j) iff i > j; suspect(i) beats alive(j) iff i >= j and
    suspect(j) iff i > j; dead/left(i) beats any up state with j <= i. Down states are only
    replaced by a strictly newer alive (a refutation or a restarted member).
    """
    old = old_state.wire
    if old.is_down:
        return new_state is MemberState.ALIVE and new_inc > old_inc
    if new_state is MemberState.ALIVE:
        return new_inc > old_inc
    if new_state is MemberState.SUSPECTED:
        if old is MemberState.ALIVE:
            return new_inc >= old_inc
        return new_inc > old_inc
    # dead or left
    return new_inc >= old_inc
