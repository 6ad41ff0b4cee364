"""The node RPC's frames: one frozen record per request kind, and the two reply records.

    Request := Monitor | PoolMonitor | Swim                        {"k": kind, ...}
             | Identity | Stop | Faults | Compose | Pools         {"k": "control", "op": name,
             | Migrate | Adopt                                     ...}
    Reply   := Ok(body) | Err(status, message)                     {"ok": true, "body": ...}
                                                                   {"ok": false, "status": int,
                                                                    "error": str}

Rules:
1. ``encode`` gives the msgpack map that goes on the wire (keys in a fixed order); nothing
   else in the project builds a frame by hand.
2. ``decode_untrusted`` checks the type of every field once, at the boundary, and raises only
   ``BadFrame``: the server closes that connection and counts it. What a well-typed field
   means (a pool id's syntax, a fault action's name) is the handler's to check, and comes
   back as an error reply. A field the record gives a default may be missing; unknown keys
   are ignored.
3. ``Swim`` is the membership protocol's own frame: it is carried whole (``message``, ``"k"``
   included) to ``SwimHandle.handle_tcp``, and its reply is sent as that handler returns it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

__all__ = [
    "Adopt",
    "BadFrame",
    "Call",
    "Compose",
    "Err",
    "Faults",
    "Identity",
    "Migrate",
    "Monitor",
    "Ok",
    "PoolMonitor",
    "Pools",
    "Reply",
    "Request",
    "Stop",
    "Swim",
    "decode_reply",
    "decode_untrusted",
    "encode",
    "encode_reply",
]


class BadFrame(Exception):
    """A frame from the network that is not a valid request or reply."""


# -- requests ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Monitor:
    """One admin monitor task (``query`` of rt_admin) on the receiving node."""

    KIND: ClassVar[tuple[str, str | None]] = ("monitor", None)
    query: str
    params: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PoolMonitor:
    """The monitor answer of the receiving node's container of ``pool_id``."""

    KIND: ClassVar[tuple[str, str | None]] = ("pool_monitor", None)
    pool_id: str
    query: str
    params: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Swim:
    """A membership protocol frame (join push/pull, induct), carried whole."""

    KIND: ClassVar[tuple[str, str | None]] = ("swim", None)
    message: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Identity:
    """Who answers: node id, pid, runtime port, dashboard URL."""

    KIND: ClassVar[tuple[str, str | None]] = ("control", "identity")


@dataclass(frozen=True, slots=True)
class Stop:
    """Stop the node; the reply is its identity."""

    KIND: ClassVar[tuple[str, str | None]] = ("control", "stop")


@dataclass(frozen=True, slots=True)
class Faults:
    """Change the node's fault injection: ``action`` is loss, delay, block or heal."""

    KIND: ClassVar[tuple[str, str | None]] = ("control", "faults")
    action: str
    peer: int | None = None  # None: every peer (loss, delay)
    value: float = 0  # percent (loss) or milliseconds (delay)
    peers: tuple[int, ...] = ()  # block


@dataclass(frozen=True, slots=True)
class Compose:
    """Compose the pools of a compose section; each entry is checked by the runtime."""

    KIND: ClassVar[tuple[str, str | None]] = ("control", "compose")
    entries: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Pools:
    """The node's pool table."""

    KIND: ClassVar[tuple[str, str | None]] = ("control", "pools")


@dataclass(frozen=True, slots=True)
class Migrate:
    """Move pool ``pool_id`` to node ``to`` (an id, or a name ``resolve_node`` accepts)."""

    KIND: ClassVar[tuple[str, str | None]] = ("control", "migrate")
    pool_id: str
    to: str | int


@dataclass(frozen=True, slots=True)
class Adopt:
    """Create a pool from a migrating container's identity and exported state."""

    KIND: ClassVar[tuple[str, str | None]] = ("control", "adopt")
    mod_name: str
    pool_name: str
    pool_id: str
    pool_query: str = "local"
    state: Mapping[str, Any] = field(default_factory=dict)


Call = Monitor | PoolMonitor | Identity | Stop | Faults | Compose | Pools | Migrate | Adopt
Request = Call | Swim


def encode(request: Request) -> dict[str, Any]:
    """The wire map of ``request``."""
    if isinstance(request, Swim):
        return {**request.message, "k": "swim"}
    kind, op = request.KIND
    out: dict[str, Any] = {"k": kind} if op is None else {"k": kind, "op": op}
    for f in fields(request):
        value = getattr(request, f.name)
        if isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, Mapping):
            value = dict(value)
        out[f.name] = value
    return out


# -- decoding ---------------------------------------------------------------------------------

_MISSING: Any = object()


class _Fields:
    """Typed reads of one untrusted map; every miss is a ``BadFrame`` naming the field."""

    def __init__(self, obj: Mapping[str, Any], what: str) -> None:
        self._obj, self._what = obj, what

    def _get(self, key: str, default: Any) -> Any:
        value = self._obj.get(key, default)
        if value is _MISSING:
            raise BadFrame(f"{self._what}: missing {key!r}")
        return value

    def _bad(self, key: str, expected: str) -> BadFrame:
        return BadFrame(f"{self._what}: {key!r} is not {expected}")

    def text(self, key: str, default: Any = _MISSING) -> str:
        value = self._get(key, default)
        if not isinstance(value, str):
            raise self._bad(key, "a string")
        return value

    def integer(self, key: str, default: Any = _MISSING) -> int | None:
        value = self._get(key, default)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise self._bad(key, "an integer")
        return value

    def number(self, key: str, default: Any = _MISSING) -> float:
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._bad(key, "a number")
        if not math.isfinite(value):
            raise self._bad(key, "finite")
        return value

    def text_or_int(self, key: str) -> str | int:
        value = self._get(key, _MISSING)
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise self._bad(key, "a string or an integer")
        return value

    def mapping(self, key: str, default: Any = _MISSING) -> dict[str, Any]:
        value = self._get(key, default)
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise self._bad(key, "a map with string keys")
        return value

    def text_map(self, key: str) -> dict[str, str]:
        value = self.mapping(key, {})
        if not all(isinstance(v, str) for v in value.values()):
            raise self._bad(key, "a map of strings")
        return value

    def items(self, key: str, default: Any = _MISSING) -> tuple[Any, ...]:
        value = self._get(key, default)
        if not isinstance(value, list | tuple):
            raise self._bad(key, "a list")
        return tuple(value)

    def integers(self, key: str) -> tuple[int, ...]:
        value = self.items(key, ())
        if any(isinstance(v, bool) or not isinstance(v, int) for v in value):
            raise self._bad(key, "a list of integers")
        return value


_DECODERS: dict[tuple[str, str | None], Callable[[_Fields], Request]] = {
    Monitor.KIND: lambda f: Monitor(f.text("query"), f.text_map("params")),
    PoolMonitor.KIND: lambda f: PoolMonitor(
        f.text("pool_id"), f.text("query"), f.text_map("params")
    ),
    Identity.KIND: lambda f: Identity(),
    Stop.KIND: lambda f: Stop(),
    Faults.KIND: lambda f: Faults(
        f.text("action"), f.integer("peer", None), f.number("value", 0), f.integers("peers")
    ),
    Compose.KIND: lambda f: Compose(f.items("entries")),
    Pools.KIND: lambda f: Pools(),
    Migrate.KIND: lambda f: Migrate(f.text("pool_id"), f.text_or_int("to")),
    Adopt.KIND: lambda f: Adopt(
        f.text("mod_name"),
        f.text("pool_name"),
        f.text("pool_id"),
        f.text("pool_query", "local"),
        f.mapping("state", {}),
    ),
}


def decode_untrusted(obj: Any) -> Request:
    """The request in a frame read from the network; ``BadFrame`` if it is not one."""
    if not isinstance(obj, dict):
        raise BadFrame(f"a frame is a map, not a {type(obj).__name__}")
    kind = obj.get("k")
    if kind == "swim":
        return Swim(obj)
    op = obj.get("op") if kind == "control" else None
    decoder = None
    if isinstance(kind, str) and (op is None or isinstance(op, str)):
        decoder = _DECODERS.get((kind, op))
    if decoder is None:
        raise BadFrame(f"unknown request kind {kind!r:.40}" + (f" op {op!r:.40}" if op else ""))
    return decoder(_Fields(obj, f"{kind} {op}" if op else str(kind)))


# -- replies ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ok:
    """The handler's answer."""

    body: Any


@dataclass(frozen=True, slots=True)
class Err:
    """The handler's refusal: an HTTP status (``ApiError.status``) and its message."""

    status: int
    message: str


Reply = Ok | Err


def encode_reply(reply: Reply) -> dict[str, Any]:
    """The wire map of ``reply``."""
    if isinstance(reply, Ok):
        return {"ok": True, "body": reply.body}
    return {"ok": False, "status": reply.status, "error": reply.message}


def decode_reply(obj: Any) -> Reply:
    """The reply in a frame read from the network; ``BadFrame`` if it is not one."""
    if not isinstance(obj, dict) or not isinstance(obj.get("ok"), bool):
        raise BadFrame("a reply is a map with a boolean 'ok'")
    if obj["ok"]:
        return Ok(obj.get("body"))
    f = _Fields(obj, "error reply")
    status = f.integer("status", 500)
    return Err(500 if status is None else status, f.text("error", "remote error"))
