"""Fault injection for one member: per-peer loss, delay and blocks, in both directions; one-way
cuts; and the member's clock.

Rules:
1. ``Faults`` only decides; the driver (or the simulated network) applies its verdict to every
   packet it sends or receives and to its TCP push/pulls.
2. ``peer_id=None`` sets the default for every peer; a per-peer value overrides the default.
3. Randomness is passed in, so a seeded simulation stays deterministic.
4. A cut is one way: what this member *sends* to a peer in ``cut`` is dropped (``outbound``);
   what the peer sends still arrives. A TCP push/pull needs both directions, so it fails
   when either side has cut the other (``is_cut`` on both ends).
5. The clock: the member's wall clock reads ``clock_offset`` seconds from true (a jump, either
   way, within ``MAX_CLOCK_OFFSET_S``), and its clock runs at ``clock_rate`` times real speed
   (``MIN_CLOCK_RATE``..``MAX_CLOCK_RATE``): its timers and its wall clock's progress. Here
   only the setting; the driver or the simulated network makes the member live by it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["MAX_CLOCK_OFFSET_S", "MAX_CLOCK_RATE", "MIN_CLOCK_RATE", "Faults", "checked_clock"]

MAX_CLOCK_OFFSET_S = 31_622_400.0  # rule 5: a year (366 days) either way
MIN_CLOCK_RATE = 0.5  # rule 5: half real speed
MAX_CLOCK_RATE = 2.0  # rule 5: twice real speed


def checked_clock(offset: float, rate: float) -> tuple[float, float]:
    """Rule 5: ``(offset, rate)`` as floats within range; ValueError otherwise."""
    offset, rate = float(offset), float(rate)
    if not (math.isfinite(offset) and abs(offset) <= MAX_CLOCK_OFFSET_S):
        raise ValueError(
            f"clock offset must be a finite number of seconds within "
            f"+-{MAX_CLOCK_OFFSET_S:.0f} (a year), not {offset}"
        )
    if not (math.isfinite(rate) and MIN_CLOCK_RATE <= rate <= MAX_CLOCK_RATE):
        raise ValueError(
            f"clock rate must be a finite number in {MIN_CLOCK_RATE}..{MAX_CLOCK_RATE}, not {rate}"
        )
    return offset, rate


@dataclass(slots=True)
class Faults:
    """Loss (percent), delay (milliseconds), blocked and cut peers, and the clock (offset in
    seconds, rate) of one member."""

    loss_pct: float = 0.0
    delay_ms: float = 0.0
    blocked: set[int] = field(default_factory=set)
    peer_loss_pct: dict[int, float] = field(default_factory=dict)
    peer_delay_ms: dict[int, float] = field(default_factory=dict)
    cut: set[int] = field(default_factory=set)
    clock_offset: float = 0.0
    clock_rate: float = 1.0

    def set_loss(self, peer_id: int | None, pct: float) -> None:
        """Drop ``pct`` percent (0..100) of packets to and from ``peer_id`` (None: all)."""
        pct = float(pct)
        if not 0.0 <= pct <= 100.0:
            raise ValueError(f"loss must be a percentage in 0..100, not {pct}")
        if peer_id is None:
            self.loss_pct = pct
        else:
            self.peer_loss_pct[peer_id] = pct

    def set_delay(self, peer_id: int | None, ms: float) -> None:
        """Delay packets to and from ``peer_id`` (None: all) by ``ms`` milliseconds."""
        ms = float(ms)
        if not 0.0 <= ms <= 600_000.0:
            raise ValueError(f"delay must be in 0..600000 ms, not {ms}")
        if peer_id is None:
            self.delay_ms = ms
        else:
            self.peer_delay_ms[peer_id] = ms

    def block(self, peer_ids: Iterable[int]) -> None:
        """Drop all traffic to and from these peers (a partition, seen from this side)."""
        self.blocked.update(int(p) for p in peer_ids)

    def unblock(self, peer_ids: Iterable[int]) -> None:
        self.blocked.difference_update(int(p) for p in peer_ids)

    def cut_to(self, peer_ids: Iterable[int]) -> None:
        """Rule 4: drop everything this member sends to these peers (one way)."""
        self.cut.update(int(p) for p in peer_ids)

    def set_clock(self, offset: float, rate: float) -> None:
        """Rule 5: the wall clock reads ``offset`` s from true and runs at ``rate``."""
        self.clock_offset, self.clock_rate = checked_clock(offset, rate)

    def heal(self) -> None:
        """Remove every fault, the cuts and the clock's skew included."""
        self.loss_pct = 0.0
        self.delay_ms = 0.0
        self.blocked.clear()
        self.peer_loss_pct.clear()
        self.peer_delay_ms.clear()
        self.cut.clear()
        self.clock_offset, self.clock_rate = 0.0, 1.0

    def is_blocked(self, peer_id: int | None) -> bool:
        return peer_id is not None and peer_id in self.blocked

    def is_cut(self, peer_id: int | None) -> bool:
        """Rule 4: is what this member sends to ``peer_id`` dropped by a cut?"""
        return peer_id is not None and peer_id in self.cut

    @property
    def clocked(self) -> bool:
        """Is the clock set apart from true (an offset or a rate)?"""
        return self.clock_offset != 0.0 or self.clock_rate != 1.0

    @property
    def active(self) -> bool:
        return bool(
            self.loss_pct
            or self.delay_ms
            or self.blocked
            or self.peer_loss_pct
            or self.peer_delay_ms
            or self.cut
            or self.clocked
        )

    def verdict(self, peer_id: int | None, rng: random.Random) -> str | None:
        """Why a packet to/from ``peer_id`` is dropped (``"blocked"``, ``"loss"``), or None."""
        if peer_id is not None and peer_id in self.blocked:
            return "blocked"
        pct = self.loss_pct
        if peer_id is not None:
            pct = self.peer_loss_pct.get(peer_id, pct)
        if pct > 0.0 and rng.random() * 100.0 < pct:
            return "loss"
        return None

    def outbound(self, peer_id: int | None, rng: random.Random) -> str | None:
        """Why a packet this member SENDS to ``peer_id`` is dropped (``"cut"``, rule 4), else
        ``verdict``'s answer (the same draws from ``rng`` as ``verdict``)."""
        if peer_id is not None and peer_id in self.cut:
            return "cut"
        return self.verdict(peer_id, rng)

    def delay(self, peer_id: int | None) -> float:
        """Extra delay in seconds for a packet to/from ``peer_id``."""
        ms = self.delay_ms
        if peer_id is not None:
            ms = self.peer_delay_ms.get(peer_id, ms)
        return ms / 1000.0

    def as_dict(self) -> dict[str, object]:
        return {
            "loss_pct": self.loss_pct,
            "delay_ms": self.delay_ms,
            "blocked": sorted(self.blocked),
            "peer_loss_pct": dict(self.peer_loss_pct),
            "peer_delay_ms": dict(self.peer_delay_ms),
            "cut": sorted(self.cut),
            "clock": {"offset": self.clock_offset, "rate": self.clock_rate},
        }
