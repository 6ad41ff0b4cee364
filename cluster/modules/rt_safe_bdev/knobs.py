"""The array's timing settings, read strictly: the pace of a recovery walk and how long a
member's node may stay down before the member is replaced elsewhere. Each reader gives the
value or raises ValueError with the reason (the module's validation reports it per field)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster.ground.parse import ParseError, float_value

__all__ = ["DEFAULT_PACE_S", "MAX_AUTO_REPLACE_S", "MAX_PACE_S", "auto_replace_of", "pace_of"]

DEFAULT_PACE_S = 0.05  # seconds per step of the walk: a rebuild lasts up to 5 s, watchable
MAX_PACE_S = 1.0
MAX_AUTO_REPLACE_S = 86400.0


def auto_replace_of(config: Mapping[str, Any]) -> float | None:
    """Seconds a member's node stays down before the member is replaced elsewhere
    (``auto_replace_after_s``, 1 to a day); None when off (left out); ValueError else."""
    raw = config.get("auto_replace_after_s")
    if raw is None:
        return None
    try:
        return float_value(raw, low=1.0, high=MAX_AUTO_REPLACE_S, what="auto_replace_after_s")
    except ParseError as exc:
        raise ValueError(str(exc)) from None


def pace_of(config: Mapping[str, Any]) -> float:
    """Seconds per step of a recovery walk (``recover_pace_s``): 0 to ``MAX_PACE_S``;
    ValueError else."""
    raw = config.get("recover_pace_s", DEFAULT_PACE_S)
    try:
        return float_value(raw, low=0.0, high=MAX_PACE_S, what="recover_pace_s")
    except ParseError as exc:
        raise ValueError(str(exc)) from None
