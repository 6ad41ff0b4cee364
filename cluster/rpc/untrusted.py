"""Typed reads of untrusted maps (a node RPC frame decoded from msgpack), and the one error
they raise: ``BadFrame`` names the field that is missing or of the wrong type."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["MISSING", "BadFrame", "Fields"]


class BadFrame(Exception):
    """A frame from the network that is not a valid request or reply."""


MISSING: Any = object()


class Fields:
    """Typed reads of one untrusted map; every miss is a ``BadFrame`` naming the field."""

    def __init__(self, obj: Mapping[str, Any], what: str) -> None:
        self._obj, self._what = obj, what

    def _get(self, key: str, default: Any) -> Any:
        value = self._obj.get(key, default)
        if value is MISSING:
            raise BadFrame(f"{self._what}: missing {key!r}")
        return value

    def _bad(self, key: str, expected: str) -> BadFrame:
        return BadFrame(f"{self._what}: {key!r} is not {expected}")

    def text(self, key: str, default: Any = MISSING) -> str:
        value = self._get(key, default)
        if not isinstance(value, str):
            raise self._bad(key, "a string")
        return value

    def integer(self, key: str, default: Any = MISSING) -> int | None:
        value = self._get(key, default)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise self._bad(key, "an integer")
        return value

    def number(self, key: str, default: Any = MISSING) -> float:
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._bad(key, "a number")
        if not math.isfinite(value):
            raise self._bad(key, "finite")
        return value

    def boolean(self, key: str, default: Any = MISSING) -> bool:
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise self._bad(key, "a boolean")
        return value

    def whole(self, key: str, default: Any = MISSING) -> int:
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._bad(key, "an integer")
        return value

    def blob(self, key: str, default: Any = MISSING) -> bytes:
        value = self._get(key, default)
        if not isinstance(value, bytes):
            raise self._bad(key, "binary")
        return value

    def text_or_int(self, key: str) -> str | int:
        value = self._get(key, MISSING)
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise self._bad(key, "a string or an integer")
        return value

    def mapping(self, key: str, default: Any = MISSING) -> dict[str, Any]:
        value = self._get(key, default)
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise self._bad(key, "a map with string keys")
        return value

    def text_map(self, key: str) -> dict[str, str]:
        value = self.mapping(key, {})
        if not all(isinstance(v, str) for v in value.values()):
            raise self._bad(key, "a map of strings")
        return value

    def items(self, key: str, default: Any = MISSING) -> tuple[Any, ...]:
        value = self._get(key, default)
        if not isinstance(value, list | tuple):
            raise self._bad(key, "a list")
        return tuple(value)

    def integers(self, key: str) -> tuple[int, ...]:
        value = self.items(key, ())
        if any(isinstance(v, bool) or not isinstance(v, int) for v in value):
            raise self._bad(key, "a list of integers")
        return value
