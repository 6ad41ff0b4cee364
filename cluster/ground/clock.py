"""The ranges of a node's clock fault (``rt_cluster clock``), for the floors that do not import
``swim`` themselves: its offset from true and its rate.

Rules:
1. The limits are ``swim``'s (``swim.Faults.set_clock``): one source for the member, the node
   RPC, the launcher and the command line.
2. ``check_clock`` raises only ``ParseError``, naming the value that is out of range.
"""

from __future__ import annotations

from swim import MAX_CLOCK_OFFSET_S, MAX_CLOCK_RATE, MIN_CLOCK_RATE

from .parse import float_value

__all__ = ["MAX_CLOCK_OFFSET_S", "MAX_CLOCK_RATE", "MIN_CLOCK_RATE", "check_clock"]


def check_clock(offset: object, rate: object) -> tuple[float, float]:
    """Rule 2: ``(offset, rate)`` as numbers within range; ParseError otherwise."""
    most = MAX_CLOCK_OFFSET_S
    checked_offset = float_value(offset, low=-most, high=most, what="clock offset")
    checked_rate = float_value(rate, low=MIN_CLOCK_RATE, high=MAX_CLOCK_RATE, what="clock rate")
    return checked_offset, checked_rate
