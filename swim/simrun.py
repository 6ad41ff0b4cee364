"""How a run of the simulated network is guarded: the collector paused, a livelock ended.

Rules:
1. The cyclic garbage collector is paused while events run (``gc_paused``): with thousands of
   machines its rescans cost a tenth of the run, and events make no reference cycles.
2. A livelock ends the run: more than ``STALL_EVENTS`` events at one virtual instant (a timer
   that re-arms itself for now, forever) raise ``SimStalled``, naming the instant and the
   node, instead of spinning without end.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["STALL_EVENTS", "SimStalled", "gc_paused", "stalled"]

STALL_EVENTS = 200_000  # rule 2: events at one virtual instant that make a livelock


class SimStalled(Exception):
    """Rule 2: the simulation handled ``STALL_EVENTS`` events without time passing."""


def stalled(when: float, node_id: int, kind: int) -> SimStalled:
    """Rule 2: the error that ends a livelocked run at virtual time ``when``."""
    return SimStalled(
        f"{STALL_EVENTS} events at virtual {when:.6f} s without time passing "
        f"(the last: node {node_id}'s event of kind {kind}): a livelock"
    )


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Rule 1: no cyclic collection while events run (restored after, even on an error)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
