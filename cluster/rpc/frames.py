"""The node RPC's frames: one frozen record per request kind, and the two reply records.

    Request := Monitor | PoolMonitor | Swim | Block                {"k": kind, ...}
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
4. Each request kind has a size: ``MAX_BYTES`` of its frame (64 KiB for the small kinds, 1 MiB
   for a compose section, a block run plus 64 KiB for a ``Block`` I/O, 16 MiB for a migrating
   pool and the membership's push/pull state).
   ``frame_limit`` reads the kind from a frame's first bytes, before its body is read (``encode``
   puts ``k`` and ``op`` first); ``decode_frame`` checks it again on the whole frame.
5. ``decode_frame`` bounds what a frame costs once decoded: at most ``MAX_VALUES`` msgpack
   values (list items, map keys and values), counted while msgpack builds them, so a small
   frame of nested empty lists cannot become gigabytes of Python objects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import msgpack

import swim
from cluster.runtime import BLOCK_IO, BlockCall

from .untrusted import BadFrame, Fields

__all__ = [
    "MAX_FRAME",
    "MAX_VALUES",
    "SMALL_FRAME",
    "Adopt",
    "BadFrame",
    "Block",
    "Call",
    "Compose",
    "DecodedFrame",
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
    "decode_frame",
    "decode_reply",
    "decode_untrusted",
    "encode",
    "encode_reply",
    "frame_limit",
    "unpack_untrusted",
]

SMALL_FRAME = 64 * 1024  # bytes: the frame of a request kind that carries a few fields
MAX_FRAME = 16 * 1024 * 1024  # bytes: the largest frame of any kind (a migrating pool's data)
MAX_VALUES = 250_000  # msgpack values in one frame (~70 bytes each once decoded)


# -- requests ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Monitor:
    """One admin monitor task (``query`` of rt_admin) on the receiving node."""

    KIND: ClassVar[tuple[str, str | None]] = ("monitor", None)
    MAX_BYTES: ClassVar[int] = SMALL_FRAME
    query: str
    params: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PoolMonitor:
    """The monitor answer of the receiving node's container of ``pool_id``."""

    KIND: ClassVar[tuple[str, str | None]] = ("pool_monitor", None)
    MAX_BYTES: ClassVar[int] = SMALL_FRAME
    pool_id: str
    query: str
    params: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Swim:
    """A membership protocol frame (join push/pull, induct), carried whole."""

    KIND: ClassVar[tuple[str, str | None]] = ("swim", None)
    MAX_BYTES: ClassVar[int] = MAX_FRAME  # swim's own push/pull bound is smaller
    message: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Block(BlockCall):
    """A ``cluster.runtime.BlockCall`` on the wire: one operation on the receiving node's
    block device (an array's member there). Sizes and ranges are the handler's to check
    (``BLOCK_IO`` at most)."""

    KIND: ClassVar[tuple[str, str | None]] = ("block", None)
    MAX_BYTES: ClassVar[int] = BLOCK_IO + SMALL_FRAME


@dataclass(frozen=True, slots=True)
class Identity:
    """Who answers: node id, pid, runtime port, dashboard URL."""

    KIND: ClassVar[tuple[str, str | None]] = ("control", "identity")
    MAX_BYTES: ClassVar[int] = SMALL_FRAME


@dataclass(frozen=True, slots=True)
class Stop:
    """Stop the node; the reply is its identity."""

    KIND: ClassVar[tuple[str, str | None]] = ("control", "stop")
    MAX_BYTES: ClassVar[int] = SMALL_FRAME


@dataclass(frozen=True, slots=True)
class Faults:
    """Change the node's fault injection: ``action`` is loss, delay, block, cut, clock, disk
    or heal."""

    KIND: ClassVar[tuple[str, str | None]] = ("control", "faults")
    MAX_BYTES: ClassVar[int] = SMALL_FRAME
    action: str
    peer: int | None = None  # None: every peer (loss, delay)
    value: float = 0  # percent (loss) or milliseconds (delay)
    peers: tuple[int, ...] = ()  # block, cut
    offset: float = 0.0  # clock: seconds the wall clock reads off true
    rate: float = 1.0  # clock: times real speed
    pool: str = ""  # disk: the rt_bdev pool
    latency_ms: float = 0.0  # disk
    errors: float = 0.0  # disk: percent of reads and writes that fail
    full: bool = False  # disk


@dataclass(frozen=True, slots=True)
class Compose:
    """Compose the pools of a compose section; each entry is checked by the runtime."""

    KIND: ClassVar[tuple[str, str | None]] = ("control", "compose")
    MAX_BYTES: ClassVar[int] = 1024 * 1024
    entries: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Pools:
    """The node's pool table."""

    KIND: ClassVar[tuple[str, str | None]] = ("control", "pools")
    MAX_BYTES: ClassVar[int] = SMALL_FRAME


@dataclass(frozen=True, slots=True)
class Migrate:
    """Move pool ``pool_id`` to node ``to`` (an id, or a name ``resolve_node`` accepts)."""

    KIND: ClassVar[tuple[str, str | None]] = ("control", "migrate")
    MAX_BYTES: ClassVar[int] = SMALL_FRAME
    pool_id: str
    to: str | int


@dataclass(frozen=True, slots=True)
class Adopt:
    """Create a pool from a migrating container's identity and exported state."""

    KIND: ClassVar[tuple[str, str | None]] = ("control", "adopt")
    MAX_BYTES: ClassVar[int] = MAX_FRAME  # carries the pool's data
    mod_name: str
    pool_name: str
    pool_id: str
    pool_query: str = "local"
    state: Mapping[str, Any] = field(default_factory=dict)


Call = Monitor | PoolMonitor | Block | Identity | Stop | Faults | Compose | Pools | Migrate | Adopt
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

_DECODERS: dict[tuple[str, str | None], Callable[[Fields], Request]] = {
    Monitor.KIND: lambda f: Monitor(f.text("query"), f.text_map("params")),
    PoolMonitor.KIND: lambda f: PoolMonitor(
        f.text("pool_id"), f.text("query"), f.text_map("params")
    ),
    Block.KIND: lambda f: Block(
        f.text("pool"),
        f.text("op"),
        f.whole("offset", 0),
        f.whole("size", 0),
        f.blob("data", b""),
        f.text("writer", ""),
        f.whole("epoch", 0),
    ),
    Identity.KIND: lambda f: Identity(),
    Stop.KIND: lambda f: Stop(),
    Faults.KIND: lambda f: Faults(
        f.text("action"),
        f.integer("peer", None),
        f.number("value", 0),
        f.integers("peers"),
        f.number("offset", 0.0),
        f.number("rate", 1.0),
        f.text("pool", ""),
        f.number("latency_ms", 0.0),
        f.number("errors", 0.0),
        f.boolean("full", False),
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
    return decoder(Fields(obj, f"{kind} {op}" if op else str(kind)))


# -- frames from the network ------------------------------------------------------------------

_RECORDS: tuple[type[Request], ...] = (
    Monitor,
    PoolMonitor,
    Swim,
    Block,
    Identity,
    Stop,
    Faults,
    Compose,
    Pools,
    Migrate,
    Adopt,
)
_BY_KIND: dict[tuple[str, str | None], type[Request]] = {r.KIND: r for r in _RECORDS}
PEEK_BYTES = 64  # a frame's first bytes that name its kind: {"k": <kind>, "op": <op>, ...}


def frame_limit(prefix: bytes | bytearray) -> int:
    """The largest frame (bytes) allowed to the request kind that ``prefix`` (a frame body's
    first ``PEEK_BYTES`` bytes) names with its first two keys; ``SMALL_FRAME`` when it names
    none."""
    found: dict[str, str] = {}
    unpacker = msgpack.Unpacker(raw=False, max_buffer_size=PEEK_BYTES)
    try:
        unpacker.feed(bytes(prefix[:PEEK_BYTES]))
        for _ in range(min(unpacker.read_map_header(), 2)):
            key, value = unpacker.unpack(), unpacker.unpack()
            if isinstance(key, str) and isinstance(value, str):
                found[key] = value
    except Exception:  # msgpack raises many types for a cut or hostile prefix; none matters
        pass
    kind = found.get("k", "")
    record = _BY_KIND.get((kind, found.get("op") if kind == "control" else None))
    return SMALL_FRAME if record is None else record.MAX_BYTES


@dataclass(frozen=True, slots=True)
class DecodedFrame:
    """A request read from the network, and how many msgpack values its frame held."""

    request: Request
    values: int


def unpack_untrusted(body: bytes | bytearray, max_values: int = MAX_VALUES) -> tuple[Any, int]:
    """The msgpack value of a frame body from the network and how many values it holds;
    ``BadFrame`` if it is not msgpack, not a map, or holds more than ``max_values`` values
    (``swim.unpack_body``, which reads SWIM's own TCP frames)."""
    try:
        return swim.unpack_body(body, max_values)
    except swim.FrameError as exc:
        raise BadFrame(str(exc)) from None


def decode_frame(body: bytes | bytearray, max_values: int = MAX_VALUES) -> DecodedFrame:
    """The request in one frame body (msgpack); ``BadFrame`` if it is not one, if it holds more
    than ``max_values`` values, or if it is larger than its kind's ``MAX_BYTES``."""
    obj, values = unpack_untrusted(body, max_values)
    request = decode_untrusted(obj)
    if len(body) > request.MAX_BYTES:
        raise BadFrame(f"a {type(request).__name__} frame is larger than {request.MAX_BYTES} bytes")
    return DecodedFrame(request, values)


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
    f = Fields(obj, "error reply")
    status = f.integer("status", 500)
    return Err(500 if status is None else status, f.text("error", "remote error"))
