"""The messages members exchange, as records, whatever wire format carries them.

Rules:
1. A message is a frozen record of plain ints, strings and bools; the machine takes and hands
   out only these. Turning them into bytes and back is a wire format's job (``wire``: ours,
   ``memberlist``: hashicorp/memberlist's), behind the driver's door for that format.
2. ``BadMessage`` is the one exception for untrusted input in every format: its ``reason``
   labels the drop counter, so every door counts a refusal the same way.
3. The messages made on every probe and rumour (``Ping``, ``Ack``, ``Alive``, ``Suspect``,
   ``Dead``) and the push/pull's ``StateEntry`` write their own ``__init__``, so that it runs
   compiled (``native`` rule 4).
"""

from __future__ import annotations

from dataclasses import dataclass

from .members import MemberState

__all__ = [
    "MAX_NODE_ID",
    "Ack",
    "Alive",
    "BadMessage",
    "Dead",
    "Message",
    "Nack",
    "Ping",
    "PingReq",
    "StateEntry",
    "Suspect",
    "type_name",
]

MAX_NODE_ID = (1 << 31) - 1  # the highest node id handed out or accepted (cluster.ground.parse's)


class BadMessage(Exception):
    """Untrusted bytes that are not a valid message; ``reason`` labels the drop counter."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


@dataclass(frozen=True, slots=True, init=False)
class Ping:
    """Probe of ``target``; the ack goes to the advertised ``src_host:src_port``."""

    seq: int
    target: int
    src: int
    src_host: str
    src_port: int

    def __init__(self, seq: int, target: int, src: int, src_host: str, src_port: int) -> None:
        object.__setattr__(self, "seq", seq)
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "src", src)
        object.__setattr__(self, "src_host", src_host)
        object.__setattr__(self, "src_port", src_port)


@dataclass(frozen=True, slots=True)
class PingReq:
    """Ask a helper to ping ``target`` for ``src`` and relay the ack (or a nack)."""

    seq: int
    target: int
    target_host: str
    target_port: int
    nack: bool
    src: int
    src_host: str
    src_port: int


@dataclass(frozen=True, slots=True, init=False)
class Ack:
    seq: int
    src: int

    def __init__(self, seq: int, src: int) -> None:
        object.__setattr__(self, "seq", seq)
        object.__setattr__(self, "src", src)


@dataclass(frozen=True, slots=True)
class Nack:
    seq: int
    src: int


@dataclass(frozen=True, slots=True, init=False)
class Alive:
    """``node`` is alive at ``incarnation``, reachable at host:port, booted with ``boot``."""

    incarnation: int
    node: int
    host: str
    port: int
    boot: int

    def __init__(self, incarnation: int, node: int, host: str, port: int, boot: int) -> None:
        object.__setattr__(self, "incarnation", incarnation)
        object.__setattr__(self, "node", node)
        object.__setattr__(self, "host", host)
        object.__setattr__(self, "port", port)
        object.__setattr__(self, "boot", boot)


@dataclass(frozen=True, slots=True, init=False)
class Suspect:
    incarnation: int
    node: int
    src: int

    def __init__(self, incarnation: int, node: int, src: int) -> None:
        object.__setattr__(self, "incarnation", incarnation)
        object.__setattr__(self, "node", node)
        object.__setattr__(self, "src", src)


@dataclass(frozen=True, slots=True, init=False)
class Dead:
    """``node`` is dead at ``incarnation`` per ``src``; ``src == node`` means it left."""

    incarnation: int
    node: int
    src: int

    def __init__(self, incarnation: int, node: int, src: int) -> None:
        object.__setattr__(self, "incarnation", incarnation)
        object.__setattr__(self, "node", node)
        object.__setattr__(self, "src", src)


Message = Ping | PingReq | Ack | Nack | Alive | Suspect | Dead


@dataclass(frozen=True, slots=True, init=False)
class StateEntry:
    """One member in a push/pull state exchange."""

    node: int
    host: str
    port: int
    incarnation: int
    state: MemberState
    boot: int

    def __init__(
        self, node: int, host: str, port: int, incarnation: int, state: MemberState, boot: int
    ) -> None:
        object.__setattr__(self, "node", node)
        object.__setattr__(self, "host", host)
        object.__setattr__(self, "port", port)
        object.__setattr__(self, "incarnation", incarnation)
        object.__setattr__(self, "state", state)
        object.__setattr__(self, "boot", boot)


_NAME_OF: dict[type[Message], str] = {
    Ping: "ping",
    PingReq: "ping_req",
    Ack: "ack",
    Nack: "nack",
    Alive: "alive",
    Suspect: "suspect",
    Dead: "dead",
}


def type_name(msg: Message) -> str:
    """Counter label of a message: ``ping``, ``ping_req``, ``ack``..."""
    return _NAME_OF[type(msg)]
