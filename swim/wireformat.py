"""A wire format at the edge of a member: what the driver asks of it (driver rule 8).

There are two: ``swim.rtsimdoor.Rtsim``, our own (the default), and ``swim.memberlist.Memberlist``,
hashicorp/memberlist's protocol as Serf speaks it. The machine and the driver stay the same; a
``WireFormat`` says how the machine is set up under it and opens the ``Door`` every packet,
push/pull and stream goes through. The driver always has a door.

Rules:
1. The machine takes and hands out messages (``swim.messages``); a door alone turns them into
   bytes and back, counts what it sends, and refuses bad input with ``BadMessage`` (counted by
   its reason), both ways: a packet in, a push/pull reply.
2. A failed push/pull raises: ``BadMessage`` (refused or unreadable), ``OSError`` (no
   connection or no reply) or ``trio.TooSlowError`` (the driver's bound); the driver counts
   each the same for every format.
3. The biggest packet a member reads is its format's (``read_limit``), given to the machine's
   intake when the machine is made.
"""

from __future__ import annotations

from typing import Any, Protocol

import trio

from .config import SwimConfig
from .machine import SwimMachine
from .messages import StateEntry
from .outputs import Datagram, Output, SyncRequest

__all__ = ["Door", "DoorLink", "WireFormat"]


class DoorLink(Protocol):
    """What a door may ask of the driver while it answers a peer."""

    def merge(self, entries: list[StateEntry], peer: int | None) -> None:
        """Merge a peer's push/pull state into the machine and carry out the output."""

    def refused(self, peer: int | None) -> bool:
        """Whether faults injected here cut ``peer`` off (draws the loss dice)."""

    def any_blocked(self) -> bool:
        """Whether any member is blocked here (for an exchange that does not say who sends)."""

    def delay(self, peer: int | None) -> float:
        """The delay (s) faults put on traffic with ``peer``."""


class Door(Protocol):
    """A wire format around one machine (rule 1)."""

    def receive(self, data: bytes, src: tuple[str, int], now: float) -> Output: ...
    def send(self, dg: Datagram) -> bytes | None:
        """The packet for ``dg`` (None: nothing in it can be said in this format)."""

    async def pushpull(self, req: SyncRequest) -> tuple[int | None, list[StateEntry]]:
        """``(whom to attribute it to, their state)``; raises as rule 2 says."""

    async def answer(self, msg: dict[str, Any], link: DoorLink) -> dict[str, Any]:
        """The reply to a ``"swim"`` frame of the node's RPC."""

    async def serve(self, conn: trio.SocketStream, first: bytes, link: DoorLink) -> None:
        """Answer one stream of this format that the node's listener hands over."""

    def describe(self, member_id: int) -> dict[str, Any] | None: ...


class WireFormat(Protocol):
    """How a member speaks a wire format (``swim.rtsimdoor.Rtsim``,
    ``swim.memberlist.Memberlist``)."""

    @property
    def first_incarnation(self) -> int:
        """The incarnation the member starts at."""

    def machine_config(self, config: SwimConfig, told: str) -> SwimConfig:
        """The machine's settings under this format; ValueError if it cannot be spoken here."""

    def read_limit(self, config: SwimConfig) -> int:
        """The biggest packet (bytes) a member of this format reads (rule 3)."""

    def open_door(self, machine: SwimMachine, config: SwimConfig) -> Door: ...
