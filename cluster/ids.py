"""Pool ids (``<major>.<minor>``, both unsigned integers) and node ids."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import BadRequest

__all__ = ["ADMIN_POOL_ID", "NULL_POOL_ID", "PoolId", "parse_node_id"]

_POOL_RE = re.compile(r"^(\d{1,9})\.(\d{1,9})$")


@dataclass(frozen=True, slots=True, order=True)
class PoolId:
    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> PoolId:
        """Parse ``"<int>.<int>"``; raise BadRequest with the reason otherwise."""
        m = _POOL_RE.match(text.strip()) if isinstance(text, str) else None
        if m is None:
            raise BadRequest(f"bad pool id '{text}': expected <int>.<int>, e.g. 800.0")
        return cls(int(m.group(1)), int(m.group(2)))

    @property
    def is_null(self) -> bool:
        return self.major == 0 and self.minor == 0

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


ADMIN_POOL_ID = PoolId(1, 0)
NULL_POOL_ID = PoolId(0, 0)


def parse_node_id(text: str) -> int | None:
    """A non-negative integer node id, or None when ``text`` is not one."""
    text = text.strip()
    if not text.isdigit() or len(text) > 9:
        return None
    return int(text)
