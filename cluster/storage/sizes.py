"""Size strings: ``16M``, ``512MB``, ``1GiB``, ``4096`` -> bytes (powers of 1024).

The reference's rule: a number with an optional K/M/G/T/P suffix, one trailing ``B`` allowed,
case-insensitive; ``16MB`` is 16·2^20. ``GiB``-style suffixes are accepted too. A fraction is
allowed (``1.5M``) and rounded down to whole bytes (exactly: no float); anything else is
invalid: ASCII digits only, at most ``MAX_SIZE_TEXT`` characters, no bool, no float value (a
whole float such as ``1024.0`` is its integer), no negative number.
"""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = ["format_size", "parse_size"]

MAX_SIZE_TEXT = 40  # characters of a size string
_SIZE_RE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*(?:([KMGTP])(?:I?B)?|B)?$", re.IGNORECASE)
_POWERS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5}


def parse_size(value: object) -> int:
    """Bytes named by ``value`` (an int is bytes); ValueError ``unparseable size '<v>'``."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"unparseable size '{value}'")
        return value
    text = value.strip() if isinstance(value, str) else ""
    m = _SIZE_RE.match(text) if len(text) <= MAX_SIZE_TEXT else None
    if m is None:
        shown = value if isinstance(value, str) and len(value) <= MAX_SIZE_TEXT else "..."
        raise ValueError(f"unparseable size '{shown}'")
    number, suffix = m.group(1), (m.group(2) or "").upper()
    scale: int = 1 << (10 * _POWERS[suffix])
    return int(Fraction(number) * scale)


def format_size(nbytes: int) -> str:
    """The shortest exact size string for ``nbytes`` (``2M``, ``1536K``, ``100``)."""
    for suffix in ("P", "T", "G", "M", "K"):
        scale: int = 1 << (10 * _POWERS[suffix])
        if nbytes and nbytes % scale == 0:
            return f"{nbytes // scale}{suffix}"
    return str(nbytes)
