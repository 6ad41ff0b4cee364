"""Fault injection for one member: per-peer loss, delay and blocks, in both directions.

Rules:
1. ``Faults`` only decides; the driver (or the simulated network) applies its verdict to every
   packet it sends or receives and to its TCP push/pulls.
2. ``peer_id=None`` sets the default for every peer; a per-peer value overrides the default.
3. Randomness is passed in, so a seeded simulation stays deterministic.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["Faults"]


@dataclass(slots=True)
class Faults:
    """Loss (percent), delay (milliseconds) and blocked peers of one member."""

    loss_pct: float = 0.0
    delay_ms: float = 0.0
    blocked: set[int] = field(default_factory=set)
    peer_loss_pct: dict[int, float] = field(default_factory=dict)
    peer_delay_ms: dict[int, float] = field(default_factory=dict)

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

    def heal(self) -> None:
        """Remove every fault."""
        self.loss_pct = 0.0
        self.delay_ms = 0.0
        self.blocked.clear()
        self.peer_loss_pct.clear()
        self.peer_delay_ms.clear()

    def is_blocked(self, peer_id: int | None) -> bool:
        return peer_id is not None and peer_id in self.blocked

    @property
    def active(self) -> bool:
        return bool(
            self.loss_pct
            or self.delay_ms
            or self.blocked
            or self.peer_loss_pct
            or self.peer_delay_ms
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
        }
