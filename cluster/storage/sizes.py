"""Size strings: ``16M``, ``512MB``, ``1GiB``, ``4096`` -> bytes (powers of 1024).

The reference's rule: a number with an optional K/M/G/T/P suffix, one trailing ``B`` allowed,
case-insensitive; ``16MB`` is 16·2^20. ``GiB``-style suffixes are accepted too. A fraction is
allowed (``1.5M``) and rounded down to whole bytes; anything else is invalid.
"""

from __future__ import annotations

import re

__all__ = ["format_size", "parse_size"]

_SIZE_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*(?:([KMGTP])(?:I?B)?|B)?$", re.IGNORECASE)
_POWERS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5}


def parse_size(value: str | int) -> int:
    """Bytes named by ``value`` (an int is bytes); ValueError ``unparseable size '<v>'``."""
    if isinstance(value, bool):
        raise ValueError(f"unparseable size '{value}'")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"unparseable size '{value}'")
        return value
    m = _SIZE_RE.match(str(value).strip())
    if m is None:
        raise ValueError(f"unparseable size '{value}'")
    number, suffix = m.group(1), (m.group(2) or "").upper()
    scale: int = 1 << (10 * _POWERS[suffix])
    if "." in number:
        return int(float(number) * scale)
    return int(number) * scale


def format_size(nbytes: int) -> str:
    """The shortest exact size string for ``nbytes`` (``2M``, ``1536K``, ``100``)."""
    for suffix in ("P", "T", "G", "M", "K"):
        scale: int = 1 << (10 * _POWERS[suffix])
        if nbytes and nbytes % scale == 0:
            return f"{nbytes // scale}{suffix}"
    return str(nbytes)
