"""The driver's door for rtsim's own wire format: packets in and out, and push/pulls.

Rules:
1. A packet in passes the machine's intake first (its size, its sender's rate, the keyring's
   seal), then is decoded here (``wire.decode_untrusted``: one ``BadMessage``, counted by
   its reason) and handed to the machine as messages (``SwimMachine.receive_messages``).
2. A packet out is the machine's datagram encoded (one part, or a compound packet), sealed
   with the keyring's UDP label when there is one, and counted as sent by its kind.
3. A push/pull is one ``"swim"`` frame each way over TCP (``exchange``), sealed both ways with
   a keyring; it fails by raising: ``BadMessage`` for a reply that is refused or unreadable,
   ``OSError`` when no reply came. The state is attributed to the member the reply names.
4. The node's RPC hands ``"swim"`` frames here (``answer``): join, push/pull, induct. Faults
   apply: a push/pull from a member cut off here is refused, a delayed one waits.
5. This format has no streams of its own: the node's RPC carries its frames.
6. Inside the simulated network a packet between two members without a keyring travels as
   its records, not through this door (``simnodes`` rule 5); a member with a keyring reads
   such a packet as its plain bytes (``receive_records``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import trio

from . import exchange, wire
from .config import SwimConfig
from .keyring import TCP_REPLY, TCP_REQUEST, UDP
from .machine import SwimMachine
from .messages import BadMessage, Message, StateEntry
from .outputs import DROPPED, Datagram, Output, SyncRequest
from .sockets import tcp_request
from .wireformat import DoorLink

__all__ = ["Rtsim", "RtsimDoor"]


@dataclass(frozen=True, slots=True)
class Rtsim:
    """Speak rtsim's own protocol (the default of ``open_swim``)."""

    first_incarnation: int = 0

    def machine_config(self, config: SwimConfig, told: str) -> SwimConfig:
        """The machine's settings: ours, unchanged (any address may be told)."""
        return config

    def read_limit(self, config: SwimConfig) -> int:
        """The biggest packet read: the machine's own packet cap."""
        return config.max_packet_bytes

    def open_door(self, machine: SwimMachine, config: SwimConfig) -> RtsimDoor:
        return RtsimDoor(machine)


class RtsimDoor:
    """rtsim's own format around one machine (sans-IO but for the push/pulls)."""

    def __init__(self, machine: SwimMachine) -> None:
        self.machine = machine
        self.config = machine.config
        self.keyring = machine.config.keyring

    # ---- packets (rules 1 and 2) --------------------------------------------------------------

    def receive(self, data: bytes, src: tuple[str, int], now: float) -> Output:
        m = self.machine
        plain = m.intake.admit(data, src, now)
        if plain is None:
            return DROPPED
        try:
            msgs = wire.decode_untrusted(plain, self.config.max_packet_bytes)
        except BadMessage as exc:
            m.counters.drop(exc.reason)
            return DROPPED
        return m.receive_messages(msgs, src, now, len(data))

    def receive_records(
        self, messages: tuple[Message, ...], src: tuple[str, int], now: float
    ) -> Output:
        """Rule 6: records a member without a keyring sent in the simulated network, read as
        the plain bytes they are (which do not open if this member has a keyring)."""
        return self.receive(wire.encode_compound(_parts(messages)), src, now)

    def send(self, dg: Datagram) -> bytes:
        data = wire.encode_compound(_parts(dg.messages))
        if self.keyring is not None:
            data = self.keyring.seal(data, UDP)
        self.machine.counters.sent(dg.kind, len(data))
        return data

    # ---- push/pull (rules 3 and 4) ------------------------------------------------------------

    def describe(self, member_id: int) -> dict[str, Any] | None:
        """Nothing: in our own format a member's id is its name."""
        return None

    async def pushpull(self, req: SyncRequest) -> tuple[int | None, list[StateEntry]]:
        c, m = self.config, self.machine
        request = exchange.pushpull_request(m.node_id, m.local_state(), join=req.join)
        request = exchange.seal(self.keyring, request, TCP_REQUEST)
        reply = await tcp_request(req.host, req.port, request, c.max_frame_bytes)
        if reply is None:
            raise OSError(f"no push/pull reply from {req.host}:{req.port}")
        reply = exchange.open_sealed(self.keyring, reply, TCP_REPLY, c.max_frame_bytes)
        return exchange.read_pushpull_reply(reply)

    async def answer(self, msg: dict[str, Any], link: DoorLink) -> dict[str, Any]:
        """The reply to one ``"swim"`` frame of the node's RPC (rule 4)."""
        try:
            msg = exchange.open_sealed(self.keyring, msg, TCP_REQUEST, self.config.max_frame_bytes)
        except BadMessage as exc:
            return self._refuse(exc.reason, "the request does not open with our keyring")
        reply = await self._answer(msg, link)
        return exchange.seal(self.keyring, reply, TCP_REPLY)

    async def _answer(self, msg: dict[str, Any], link: DoorLink) -> dict[str, Any]:
        m = self.machine
        op = msg.get("op")
        if op == "induct":
            return exchange.induct_reply(m.next_free_id())
        if op != "pushpull":
            return self._refuse("bad_tcp_op", f"unknown swim op {op!r:.40}")
        peer = exchange.sender(msg)
        if link.refused(peer):
            return self._refuse("tcp_refused", "refused by fault injection")
        try:
            entries = wire.decode_state_untrusted(msg.get("state"))
        except BadMessage as exc:
            return self._refuse(exc.reason, str(exc))
        await trio.sleep(link.delay(peer))
        reply = exchange.pushpull_reply(m.node_id, m.local_state())
        link.merge(entries, peer)
        return reply

    async def serve(self, conn: trio.SocketStream, first: bytes, link: DoorLink) -> None:
        """Rule 5: no stream is ours (the node's RPC carries our frames)."""

    def _refuse(self, reason: str, error: str) -> dict[str, Any]:
        self.machine.counters.drop(reason)
        return exchange.error_reply(error)


def _parts(messages: tuple[Message, ...]) -> list[bytes]:
    return [wire.cached_part(p) for p in messages]
