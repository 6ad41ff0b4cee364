"""What a message weighs in rtsim's own wire format, counted without encoding it.

Rules:
1. ``part_size(msg)`` is ``len(wire.encode_part(msg))`` and ``packet_size(sizes)`` is
   ``len(wire.encode_compound(parts))`` for the parts of those sizes (a property test holds
   them equal): a body is the record's fields in the order its class declares them
   (``FIELDS``, the table ``wire`` encodes by), each as msgpack writes it.
2. Records only: nothing here reads bytes from outside, so this module runs compiled with the
   outbox that weighs every packet (``native`` rule 1) while the codec, ``wire``, stays
   Python.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Sequence
from typing import Any

from .messages import Ack, Alive, Dead, Message, Nack, Ping, PingReq, Suspect

__all__ = ["FIELDS", "MAX_PARTS", "compound_overhead", "packet_size", "part_size"]

MAX_PARTS = 255  # parts in one compound packet
FIELDS: dict[type[Any], Callable[[Any], tuple[Any, ...]]] = {
    cls: operator.attrgetter(*(f.name for f in dataclasses.fields(cls)))
    for cls in (Ping, PingReq, Ack, Nack, Alive, Suspect, Dead)
}


def part_size(msg: Message) -> int:
    """``len(encode_part(msg))``: the type byte, the body's array header (every body has fewer
    than 16 fields) and each field as msgpack writes it."""
    size = 2
    for v in FIELDS[type(msg)](msg):
        size += _value_size(v)
    return size


def _value_size(v: int | str | bool) -> int:
    if v is True or v is False:
        return 1
    if isinstance(v, str):
        n = len(v) if v.isascii() else len(v.encode())
        return n + (1 if n < 32 else 2 if n < 256 else 3 if n < 65536 else 5)
    if v >= 0:
        return 1 if v < 128 else 2 if v < 256 else 3 if v < 65536 else 5 if v < 1 << 32 else 9
    return 1 if v >= -32 else 2 if v >= -128 else 3 if v >= -32768 else 5 if v >= -(1 << 31) else 9


def packet_size(part_sizes: Sequence[int]) -> int:
    """``len(encode_compound(parts))`` from the parts' sizes (msgpack's array and bin
    headers): what a packet of these parts weighs on the wire."""
    if len(part_sizes) == 1:
        return 1 + part_sizes[0]
    size = 2 + (1 if len(part_sizes) < 16 else 3)
    for n in part_sizes:
        size += n + (2 if n < 256 else 3 if n < 65536 else 5)
    return size


def compound_overhead(n_parts: int) -> int:
    """Upper bound of the bytes a compound packet adds around its parts."""
    return 2 + 5 + 5 * n_parts
