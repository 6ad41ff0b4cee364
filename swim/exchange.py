"""The TCP exchanges of the membership protocol: their frames, built and checked here.

Two exchanges ride on TCP frames of kind ``"swim"`` (on the node's RPC listener, or
``swim.testing.serve_tcp_for``): ``induct`` (a member started without an id asks a seed for the
next free one) and ``pushpull`` (two members swap their whole member tables). The driver
carries the frames; this module only builds and reads them.

Rules:
1. No I/O, no clock: plain functions from values to frames and back.
2. A frame from a peer is untrusted: reading it fails only with ``wire.BadMessage``, whose
   ``reason`` labels the drop counter.
3. Seeds (``"host:port"`` strings or ``(host, port)`` pairs) are parsed here, once.
4. With a keyring a frame travels sealed: ``{"k": "swim", "sealed": bytes}``, the bytes the
   whole frame (msgpack) sealed under ``keyring.TCP_REQUEST`` or ``TCP_REPLY``. Without one,
   frames are exactly as before. ``open_sealed`` fails only with ``BadMessage``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgpack

from . import wire
from .keyring import Keyring
from .messages import MAX_NODE_ID, BadMessage, StateEntry

__all__ = [
    "MAX_NODE_ID",
    "Seed",
    "error_reply",
    "induct_reply",
    "induct_request",
    "open_sealed",
    "parse_seed",
    "pushpull_reply",
    "pushpull_request",
    "read_induct_reply",
    "read_pushpull_reply",
    "seal",
    "sender",
]

Seed = tuple[str, int] | str


def parse_seed(seed: Seed) -> tuple[str, int]:
    """``("h", 7946)`` or ``"h:7946"`` -> ``("h", 7946)``; ValueError otherwise."""
    if isinstance(seed, str):
        host, sep, port = seed.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"seed {seed!r} is not host:port")
        return host.strip("[]"), int(port)
    return str(seed[0]), int(seed[1])


def sender(frame: Mapping[str, Any]) -> int | None:
    """The member id a frame says it comes from (``"from"``), or None if it names none."""
    peer = frame.get("from")
    if isinstance(peer, bool) or not isinstance(peer, int):
        return None
    return peer


def error_reply(error: str) -> dict[str, Any]:
    return {"k": "swim", "ok": False, "error": error}


def induct_request() -> dict[str, Any]:
    return {"k": "swim", "op": "induct"}


def induct_reply(node_id: int) -> dict[str, Any]:
    return {"k": "swim", "ok": True, "node_id": node_id}


def read_induct_reply(reply: Any) -> int:
    """The free node id a seed handed out; ``BadMessage("induct_failed")`` otherwise."""
    if isinstance(reply, dict) and reply.get("ok") is True:
        nid = reply.get("node_id")
        if isinstance(nid, int) and not isinstance(nid, bool) and 0 <= nid <= MAX_NODE_ID:
            return nid
    raise BadMessage("induct_failed", "no valid node id in the induct reply")


def pushpull_request(node_id: int, state: Sequence[StateEntry], *, join: bool) -> dict[str, Any]:
    return {
        "k": "swim",
        "op": "pushpull",
        "join": join,
        "from": node_id,
        "state": wire.encode_state(state),
    }


def pushpull_reply(node_id: int, state: Sequence[StateEntry]) -> dict[str, Any]:
    return {"k": "swim", "ok": True, "from": node_id, "state": wire.encode_state(state)}


def read_pushpull_reply(reply: Any) -> tuple[int | None, list[StateEntry]]:
    """The answering member's id and state; ``BadMessage`` (``pushpull_failed``, ...) otherwise.

    ``reply`` is None when the exchange itself failed (no connection, timeout, bad frame).
    """
    if not isinstance(reply, dict) or reply.get("ok") is not True:
        raise BadMessage("pushpull_failed")
    return sender(reply), wire.decode_state_untrusted(reply.get("state"))


def seal(keyring: Keyring | None, frame: dict[str, Any], label: bytes) -> dict[str, Any]:
    """``frame`` sealed into the one field of a swim frame (unchanged without a keyring)."""
    if keyring is None:
        return frame
    plain: bytes = msgpack.packb(frame, use_bin_type=True)
    return {"k": "swim", "sealed": keyring.seal(plain, label)}


def open_sealed(keyring: Keyring | None, frame: Any, label: bytes, max_bytes: int) -> Any:
    """The frame inside a sealed one (unchanged without a keyring, or when None).

    ``BadMessage("auth")`` if it is not sealed or no key opens it; ``BadMessage("malformed")``
    if what it holds is not a msgpack map (of at most ``max_bytes``).
    """
    if keyring is None or frame is None:
        return frame
    sealed = frame.get("sealed") if isinstance(frame, dict) else None
    if not isinstance(sealed, bytes):
        raise BadMessage("auth", "the frame is not sealed")
    if len(sealed) > max_bytes:
        raise BadMessage("oversize", f"sealed frame of {len(sealed)} bytes")
    plain = keyring.open_untrusted(sealed, label)
    try:
        obj = msgpack.unpackb(plain, raw=False, strict_map_key=True, max_ext_len=0)
    except Exception as exc:  # msgpack raises many types; one door out
        raise BadMessage("malformed", f"sealed frame: {type(exc).__name__}") from None
    if not isinstance(obj, dict):
        raise BadMessage("malformed", "a sealed frame holds a map")
    return obj
