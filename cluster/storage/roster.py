"""Who serves an array: its member records, their states and the progress of a recovery.

Rules:
1. A member record is frozen: a change of state is a new record put in the member's position
   (``StripeArray.set_state``), so a reader never sees a half-changed member.
2. ``active`` members are read and written; ``recovering`` ones are written only (they are
   being rebuilt); ``faulty`` and ``removed`` ones are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from cluster.ground.ids import PoolId

__all__ = ["ArrayMember", "DeviceState", "RecoveryProgress"]


class DeviceState(StrEnum):
    """The state of a device that is one member of an array (a node's state in the membership
    is ``swim.MemberState``)."""

    ACTIVE = "active"
    FAULTY = "faulty"
    REMOVED = "removed"
    RECOVERING = "recovering"


@dataclass(frozen=True, slots=True)
class ArrayMember:
    pool_name: str
    pool_id: PoolId
    base: int  # byte offset of the array's region on the member device
    state: DeviceState = DeviceState.ACTIVE
    node_id: int | None = None  # the node that holds the device; None: the array's own


@dataclass(slots=True)
class RecoveryProgress:
    active: bool = False
    total: int = 0  # slots to rebuild in the current run
    completed: int = 0
    in_flight: int = 0
    generation: int = 0  # bumped whenever a member starts recovering
    rebuilt: int = 0  # written slots the current (or last) run rebuilds: all, or a resync's

    @property
    def remaining(self) -> int:
        return max(0, self.total - self.completed)
