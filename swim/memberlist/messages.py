"""memberlist's messages (hashicorp/memberlist 0.2, as Serf 0.9 speaks them) as values.

Field names follow the Go structs they travel as (``codec`` says how); names are text,
addresses are IP address text ("" for none), ``meta`` and ``vsn`` are bytes as memberlist
keeps them.
"""

from __future__ import annotations

import enum
import ipaddress
from dataclasses import dataclass

from ..messages import BadMessage

__all__ = [
    "MAX_META",
    "MAX_NAME",
    "VSN",
    "Ack",
    "Alive",
    "Dead",
    "Decoded",
    "IndirectPing",
    "Kind",
    "Message",
    "Nack",
    "NodeState",
    "Ping",
    "Suspect",
    "ip_bytes",
    "ip_text",
]

VSN = bytes([1, 5, 2, 2, 5, 5])  # protocol min, max, current; delegate min, max, current
MAX_NAME = 512
MAX_META = 512


class Kind(enum.IntEnum):
    PING = 0
    INDIRECT_PING = 1
    ACK = 2
    SUSPECT = 3
    ALIVE = 4
    DEAD = 5
    PUSH_PULL = 6
    COMPOUND = 7
    USER = 8
    COMPRESS = 9
    ENCRYPT = 10
    NACK = 11
    CRC = 12
    ERROR = 13


@dataclass(frozen=True, slots=True)
class Ping:
    """A probe of ``node``; the ack goes to ``source_ip:source_port`` ("": the sender)."""

    seq: int
    node: str
    source_ip: str = ""
    source_port: int = 0
    source_node: str = ""


@dataclass(frozen=True, slots=True)
class IndirectPing:
    seq: int
    target_ip: str
    port: int
    node: str
    nack: bool
    source_ip: str = ""
    source_port: int = 0
    source_node: str = ""


@dataclass(frozen=True, slots=True)
class Ack:
    seq: int


@dataclass(frozen=True, slots=True)
class Nack:
    seq: int


@dataclass(frozen=True, slots=True)
class Suspect:
    incarnation: int
    node: str
    src: str


@dataclass(frozen=True, slots=True)
class Alive:
    incarnation: int
    node: str
    ip: str
    port: int
    meta: bytes
    vsn: bytes


@dataclass(frozen=True, slots=True)
class Dead:
    """``node`` is dead per ``src``; ``src == node`` means it left."""

    incarnation: int
    node: str
    src: str


@dataclass(frozen=True, slots=True)
class NodeState:
    """One member of a push/pull: ``state`` 0 alive, 1 suspect, 2 dead, 3 left."""

    name: str
    ip: str
    port: int
    meta: bytes
    incarnation: int
    state: int
    vsn: bytes


Message = Ping | IndirectPing | Ack | Nack | Suspect | Alive | Dead


@dataclass(slots=True)
class Decoded:
    messages: list[Message]
    skipped: int  # parts of types this edge does not take (rule 2)


# ---- addresses -------------------------------------------------------------------------------


def ip_bytes(host: str) -> bytes:
    """An IP address as memberlist carries it (4 or 16 bytes); ValueError for a name."""
    return ipaddress.ip_address(host).packed


def ip_text(raw: bytes) -> str:
    """The text of a 4- or 16-byte address (an IPv4-mapped one as IPv4); "" for none."""
    if not raw:
        return ""
    if len(raw) not in (4, 16):
        raise BadMessage("bad_field", f"an address of {len(raw)} bytes")
    ip = ipaddress.ip_address(raw)
    mapped = getattr(ip, "ipv4_mapped", None)
    return str(mapped or ip)
