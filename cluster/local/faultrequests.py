"""The fault requests a launcher sends to node processes (``Faults`` frames), and the checks
made before any is sent.

Rules:
1. A request carries the fields its action reads (``cluster.rpc.Faults``); the node ranges
   every number again (``cluster.node.control`` rule 2).
2. What the user can get wrong is refused here first, as ``BadInput``, before anything is
   sent: a clock out of range, a cut from a node to itself, a node the record does not hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cluster.ground.clock import check_clock as clock_range
from cluster.ground.parse import ParseError
from cluster.rpc import Faults

from .record import BadInput, ClusterRecord

__all__ = ["check_clock", "check_cut", "fault_request"]


def fault_request(action: str, **kw: Any) -> Faults:
    """The ``Faults`` frame of ``action`` with the fields ``kw`` names (``peers`` any
    sequence)."""
    return Faults(action, **{**kw, "peers": tuple(kw.get("peers", ()))})


def check_clock(offset: float, rate: float) -> None:
    """Rule 2: BadInput for a clock no node may run (``cluster.ground.clock``)."""
    try:
        clock_range(offset, rate)
    except ParseError as exc:
        raise BadInput(str(exc)) from None


def check_cut(record: ClusterRecord | None, src: Sequence[int], dst: Sequence[int]) -> None:
    """Rule 2: BadInput for an empty side, a node in both, or (with a ``record``) a member
    it does not hold."""
    if not src or not dst:
        raise BadInput("a cut needs nodes on both sides: FROM and TO")
    if record is not None:
        for i in (*src, *dst):
            record.member(i)  # BadInput naming an unknown one
    both = sorted(set(src) & set(dst))
    if both:
        raise BadInput(f"node {both[0]} cannot be cut off from itself (it is in FROM and TO)")
