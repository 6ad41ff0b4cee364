"""Pool ids (``<major>.<minor>``, both unsigned 32-bit integers) and node ids.

Both are parsed strictly (``cluster.ground.parse``): ASCII digits as written, no spaces, no sign, no
leading zeros, so the text of an id names exactly one pool or node (`` 800.0 `` and ``0800.0``
are refused, not read as ``800.0``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import BadRequest
from .parse import MAX_NODE_ID, ParseError, parse_int

__all__ = ["ADMIN_POOL_ID", "MAX_NODE_ID", "NULL_POOL_ID", "PoolId", "parse_node_id"]

POOL_PART_MAX = (1 << 32) - 1


@dataclass(frozen=True, slots=True, order=True)
class PoolId:
    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> PoolId:
        """Parse ``"<int>.<int>"``; raise BadRequest with the reason otherwise."""
        parts = text.split(".") if isinstance(text, str) else []
        try:
            if len(parts) != 2:
                raise ParseError("expected one dot")
            major, minor = (parse_int(p, low=0, high=POOL_PART_MAX) for p in parts)
        except ParseError:
            shown = text if isinstance(text, str) and len(text) <= 40 else f"{str(text)[:40]}..."
            raise BadRequest(f"bad pool id {shown!r}: expected <int>.<int>, e.g. 800.0") from None
        return cls(major, minor)

    @property
    def is_null(self) -> bool:
        return self.major == 0 and self.minor == 0

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


ADMIN_POOL_ID = PoolId(1, 0)
NULL_POOL_ID = PoolId(0, 0)


def parse_node_id(text: str) -> int | None:
    """A node id (0 to ``MAX_NODE_ID``, written canonically), or None when ``text`` is not one."""
    try:
        return parse_int(text, low=0, high=MAX_NODE_ID, what="node id")
    except ParseError:
        return None
