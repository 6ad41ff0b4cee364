"""Another wire format at the edge of a member: what the driver asks of it (driver rule 8).

``swim.memberlist.Memberlist`` is the one there is: hashicorp/memberlist's protocol, as Serf
speaks it. The machine and the driver stay the same; a ``WireFormat`` says how the machine is
set up under it and opens the ``Door`` every packet, push/pull and stream goes through.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import trio

from .config import SwimConfig
from .machine import SwimMachine
from .outputs import Output
from .wire import StateEntry

__all__ = ["Door", "Merge", "WireFormat"]

Merge = Callable[[list[StateEntry], int | None], None]  # a peer's state, and who sent it


class Door(Protocol):
    """Another wire format around one machine (rule 8)."""

    def receive(self, data: bytes, src: tuple[str, int], now: float) -> Output: ...
    def send(self, data: bytes) -> bytes | None: ...
    async def pushpull(self, host: str, port: int, join: bool) -> tuple[int, list[StateEntry]]:
        """``(who it was from, their state)``; raises ``BadMessage``/``OSError`` on failure."""

    async def serve(
        self,
        conn: trio.SocketStream,
        first: bytes,
        merge: Merge,
        refused: Callable[[int | None], bool],
    ) -> None: ...
    def describe(self, member_id: int) -> dict[str, Any] | None: ...


class WireFormat(Protocol):
    """How a member speaks another wire format (``swim.memberlist.Memberlist``)."""

    @property
    def first_incarnation(self) -> int:
        """The incarnation the member starts at."""

    def machine_config(self, config: SwimConfig, told: str) -> SwimConfig:
        """The machine's settings under this format; ValueError if it cannot be spoken here."""

    def open_door(self, machine: SwimMachine, config: SwimConfig) -> Door: ...
