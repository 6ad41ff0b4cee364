"""JSON as the dashboard writes it: keys in the order handlers built them, NaN and infinities as
``null``, compact separators.

Rules:
1. Every JSON body of the app goes through ``dumps`` (the app's JSON provider uses it), so no
   handler can emit ``NaN`` (which is not JSON and breaks ``JSON.parse`` in the pages).
2. The fast path is one encoding; only a body that holds a non-finite float is walked.
3. The app's own calls (compact, nothing else asked) use one encoder made once, not one per
   call as ``json.dumps`` with arguments makes.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from quart.json.provider import DefaultJSONProvider

__all__ = ["JsonProvider", "dumps", "finite"]


def _default(o: Any) -> Any:
    if isinstance(o, Mapping):
        return dict(o)
    if isinstance(o, set | frozenset | tuple):
        return list(o)
    if isinstance(o, PurePath):
        return str(o)
    for name in ("to_json", "as_dict"):
        fn = getattr(o, name, None)
        if callable(fn):
            return fn()
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return dataclasses.asdict(o)
    if hasattr(o, "value") and hasattr(o, "name"):  # enums
        return o.value
    return str(o)  # PoolId and other small value types print as their API form


def finite(value: Any) -> Any:
    """``value`` with every non-finite float (at any depth) replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


_COMPACT = (",", ":")
# The encoder of every answer the app writes (rule 3); json.dumps would build one per call.
_ENCODER = json.JSONEncoder(separators=_COMPACT, default=_default, allow_nan=False)


def dumps(obj: Any, **kwargs: Any) -> str:
    if not kwargs or kwargs == {"separators": _COMPACT}:
        try:
            return _ENCODER.encode(obj)
        except ValueError:  # a NaN or an infinity somewhere: the walk below
            pass
    kwargs.setdefault("separators", _COMPACT)
    kwargs.setdefault("default", _default)
    kwargs["allow_nan"] = False
    try:
        return json.dumps(obj, **kwargs)
    except ValueError:  # a NaN or an infinity somewhere
        return json.dumps(
            finite(json.loads(json.dumps(obj, **{**kwargs, "allow_nan": True}))), **kwargs
        )


class JsonProvider(DefaultJSONProvider):
    """Quart's provider with ``dumps`` above: insertion order kept, non-finite floats as null."""

    sort_keys = False
    ensure_ascii = False
    compact = True

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        kwargs.pop("sort_keys", None)
        kwargs.pop("ensure_ascii", None)
        return dumps(obj, **kwargs)
