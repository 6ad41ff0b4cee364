"""Hand-written membership events, as a node's event log and the scenario runner record them."""

from __future__ import annotations

from typing import Any

__all__ = ["event", "joined"]


def event(
    t: float, o: int, s: int, new: str, old: str | None = "alive", cause: str = "probe"
) -> dict[str, Any]:
    """Observer ``o`` saw subject ``s`` change from ``old`` to ``new`` at ``t`` (``mono`` and
    ``wall`` alike, seconds), at incarnation 0, for ``cause``."""
    return {
        "mono": t,
        "wall": t,
        "observer": o,
        "subject": s,
        "old": old,
        "new": new,
        "incarnation": 0,
        "cause": cause,
    }


def joined(n: int, t: float = 0.5) -> list[dict[str, Any]]:
    """Every one of ``n`` nodes seeing every other join at ``t``."""
    return [event(t, o, s, "alive", None, "join") for o in range(n) for s in range(n) if o != s]
