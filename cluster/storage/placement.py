"""Placement of blobs over storage targets: target records, scores and move plans.

Rules:
1. A target's score (0..1, higher is better) blends its free fraction (weight 0.5), measured
   bandwidth (0.3, ``bw/(bw+BW_REF_MBPS)``) and measured latency (0.2,
   ``LAT_REF_US/(lat+LAT_REF_US)``); an unmeasured figure counts as the neutral 0.5.
2. A move plan puts the largest blobs first on the target with the most simulated free space,
   so a refusal means the remaining targets really cannot hold them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cluster.ground.ids import PoolId

from .alloc import Extent
from .iometer import IoSnapshot

__all__ = ["BW_REF_MBPS", "LAT_REF_US", "BlobLoc", "Target", "plan_moves", "score"]

BW_REF_MBPS = 1000.0
LAT_REF_US = 100.0
PLAN_UNIT = 4096  # allocation unit assumed when planning moves, bytes


@dataclass(frozen=True, slots=True)
class BlobLoc:
    """Where one blob lives: its target, the extent allocated there and its length in bytes."""

    target: str
    extent: Extent
    size: int


@dataclass(slots=True, eq=False)
class Target:
    """A registered storage target: a block-device-like pool and what this core did with it."""

    name: str
    pool_id: PoolId
    attached: bool  # True: an existing pool; False: a device created for this target
    score: float = 0.0
    bytes_read: int = 0
    bytes_written: int = 0
    ops_read: int = 0
    ops_written: int = 0
    draining: bool = False  # being unregistered: no new blobs


def _mean(values: Sequence[float]) -> float | None:
    measured = [v for v in values if v > 0]
    return sum(measured) / len(measured) if measured else None


def score(io: IoSnapshot, capacity: int, remaining: int) -> float:
    """The placement score of a target with ``remaining`` of ``capacity`` bytes free."""
    free = remaining / capacity if capacity > 0 else 0.0
    bw = _mean([io.read_bandwidth_mbps, io.write_bandwidth_mbps])
    lat = _mean([io.read_latency_us, io.write_latency_us])
    bw_term = bw / (bw + BW_REF_MBPS) if bw is not None else 0.5
    lat_term = LAT_REF_US / (lat + LAT_REF_US) if lat is not None else 0.5
    return round(0.5 * free + 0.3 * bw_term + 0.2 * lat_term, 4)


def plan_moves(sizes: Mapping[str, int], free: Mapping[str, int]) -> dict[str, str] | None:
    """Blob key -> target name for every blob, or None when they do not all fit."""
    room = dict(free)
    plan: dict[str, str] = {}
    for key, size in sorted(sizes.items(), key=lambda kv: -kv[1]):
        need = max(PLAN_UNIT, -(-size // PLAN_UNIT) * PLAN_UNIT)
        best = max(room, key=lambda n: room[n], default=None)
        if best is None or room[best] < need:
            return None
        plan[key] = best
        room[best] -= need
    return plan
