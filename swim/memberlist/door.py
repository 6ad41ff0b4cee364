"""The driver's memberlist door: packets in and out, push/pulls, and the TCP streams.

Rules:
1. A packet in passes the machine's intake first (its size, up to ``MAX_PACKET``: this
   format's ``read_limit``, and its sender's rate), then is opened, checked and decoded here,
   translated by the edge, and handed to the machine as messages
   (``SwimMachine.receive_messages``). Refusals are counted by reason.
2. A packet out is the machine's datagram, translated message by message; messages the edge
   cannot say are left out, and a packet left empty is not sent (nor counted).
3. A stream is served within ``tcp_timeout`` and ``max_frame_bytes``; a refused request
   gets memberlist's error reply when it was readable, and the stream is closed. At most
   ``MAX_STREAMS`` are served at once (memberlist allows 128 push/pulls); one more is closed
   at once and counted (``stream_busy``), so streams hold at most ``MAX_STREAMS`` times
   ``max_frame_bytes`` however many connections the listener lets in.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any

import trio

from .. import exchange
from ..config import SwimConfig
from ..machine import SwimMachine
from ..messages import BadMessage, StateEntry
from ..outputs import DROPPED, Datagram, Output, SyncRequest
from ..wireformat import DoorLink
from . import codec, stream
from .codec import Kind
from .edge import UNKNOWN_PEER, Edge

__all__ = ["MAX_PACKET", "MAX_STREAMS", "Memberlist", "MemberlistDoor"]

log = logging.getLogger(__name__)

MAX_PACKET = 65507  # memberlist reads packets of up to 64 KiB
MAX_STREAMS = 16


@dataclass(frozen=True, slots=True)
class Memberlist:
    """Speak memberlist's protocol: ``open_swim(..., wire_format=Memberlist("rt-0"))``; the
    member is ``name`` there, its node meta the Serf ``tags`` (plus ``rtsim=<id>``), and its
    seeds are memberlist members (Serf agents' bind addresses)."""

    name: str
    tags: dict[str, str] = field(default_factory=dict)
    first_incarnation: int = 1  # memberlist ignores an alive at 0 from a node it just added

    def machine_config(self, config: SwimConfig, told: str) -> SwimConfig:
        """The machine's settings: without the keyring (the door seals memberlist's way)."""
        try:
            codec.ip_bytes(told)
        except ValueError:
            raise ValueError(f"memberlist members are told an IP address, not {told!r}") from None
        return dataclasses.replace(config, keyring_file=None)

    def read_limit(self, config: SwimConfig) -> int:
        """memberlist reads packets of up to 64 KiB (``MAX_PACKET``)."""
        return MAX_PACKET

    def open_door(self, machine: SwimMachine, config: SwimConfig) -> MemberlistDoor:
        return MemberlistDoor(machine, config, self.name, self.tags)


class MemberlistDoor:
    """memberlist's protocol around one machine (sans-IO but for the streams)."""

    def __init__(
        self, machine: SwimMachine, config: SwimConfig, name: str, tags: dict[str, str]
    ) -> None:
        self.machine = machine
        self.keyring = config.keyring
        self.config = config
        self.name = name
        counters = machine.counters
        self.edge = Edge(
            machine.node_id,
            name,
            tags,
            boot=lambda: machine.boot,
            id_at=machine.table.id_at,
            max_names=min(2 * config.max_members, config.max_members + 4096),
            drop=counters.drop,
            holds=lambda node: node in machine.table,
        )
        self.streams = 0  # served now (rule 3)

    # ---- packets (rules 1 and 2) --------------------------------------------------------------

    def receive(self, data: bytes, src: tuple[str, int], now: float) -> Output:
        m = self.machine
        if m.intake.admit(data, src, now) is None:
            return DROPPED
        try:
            decoded = codec.decode_packet(data, self.keyring, MAX_PACKET)
        except BadMessage as exc:
            m.counters.drop(exc.reason)
            return DROPPED
        if decoded.skipped:
            m.counters.drop("skipped_part")  # the other parts still count
        msgs = self.edge.inbound(decoded.messages, src)[: codec.MAX_PARTS]
        if not msgs:
            return DROPPED
        return m.receive_messages(msgs, src, now, len(data))

    def send(self, dg: Datagram) -> bytes | None:
        """memberlist's packet for the machine's datagram ``dg`` (None: nothing to say)."""
        parts = self.edge.outbound(dg.messages)
        if not parts:
            return None
        data = codec.encode_packet(parts[: codec.MAX_PARTS], self.keyring)
        self.machine.counters.sent(dg.kind, len(data))
        return data

    # ---- push/pull ----------------------------------------------------------------------------

    def _local(self) -> list[codec.NodeState]:
        return self.edge.states_out(self.machine.local_state())

    def describe(self, member_id: int) -> dict[str, Any] | None:
        return self.edge.describe(member_id)

    async def pushpull(self, req: SyncRequest) -> tuple[int | None, list[StateEntry]]:
        """A push/pull with ``req``'s member (``BadMessage``/``OSError`` when it fails); the
        reply does not say who sent it: it is the member asked, if known (``UNKNOWN_PEER``)."""
        c = self.config
        theirs = await stream.request_pushpull(
            req.host,
            req.port,
            self._local(),
            join=req.join,
            keyring=self.keyring,
            max_bytes=c.max_frame_bytes,
            max_states=c.max_members,
        )
        via = UNKNOWN_PEER if req.dest is None else req.dest
        return via, self.edge.states_in(theirs)

    async def answer(self, msg: dict[str, Any], link: DoorLink) -> dict[str, Any]:
        """Our own ``"swim"`` frames are refused: this member speaks memberlist's protocol."""
        self.machine.counters.drop("bad_tcp_op")
        return exchange.error_reply("this member speaks memberlist's protocol")

    async def serve(self, conn: trio.SocketStream, first: bytes, link: DoorLink) -> None:
        """Answer one memberlist stream (rule 3); ``link`` merges the peer's push/pull and
        says whether faults cut the sender off."""
        if self.streams >= MAX_STREAMS:
            self.machine.counters.drop("stream_busy")
            return
        self.streams += 1
        try:
            await self._serve(conn, first, link)
        finally:
            self.streams -= 1

    async def _serve(self, conn: trio.SocketStream, first: bytes, link: DoorLink) -> None:
        c = self.config
        try:
            with trio.fail_after(c.tcp_timeout):
                kind, reader = await stream.read_request(
                    conn, first, self.keyring, c.max_frame_bytes
                )
                if kind == Kind.PUSH_PULL:
                    if link.any_blocked():  # driver rule 8: a push/pull does not say who sends
                        raise BadMessage("tcp_refused", "refused by fault injection")
                    join, states = await stream.read_pushpull(reader, c.max_members)
                    entries = self.edge.states_in(states)
                    reply = stream.pushpull_bytes(self._local(), join)
                    await conn.send_all(stream.sealed_stream(self.keyring, reply))
                    link.merge(entries, UNKNOWN_PEER)
                elif kind == Kind.PING:
                    await self._tcp_ping(conn, await reader.map(), link)
                else:
                    raise BadMessage("unknown_type", f"a stream of type {kind}")
        except BadMessage as exc:
            self.machine.counters.drop(exc.reason)
            log.debug("memberlist stream refused: %s", exc)
            if exc.reason not in ("auth", "truncated", "tcp_refused"):
                refusal = stream.error_bytes(str(exc))
                await _try_send(conn, stream.sealed_stream(self.keyring, refusal))
        except trio.TooSlowError:
            self.machine.counters.drop("tcp_timeout")

    async def _tcp_ping(
        self, conn: trio.SocketStream, body: dict[bytes, Any], link: DoorLink
    ) -> None:
        """memberlist's fallback probe: an ack on the stream, unless the sender is cut off."""
        ping = codec.decode_body(Kind.PING, body)
        assert isinstance(ping, codec.Ping)
        if ping.node not in ("", self.name):
            self.machine.counters.drop("misdirected")
            return
        sender = self.edge.known(ping.source_node)
        if link.any_blocked() if sender is None else link.refused(sender):
            self.machine.counters.drop("tcp_refused")
            return
        reply = stream.ack_bytes(ping.seq)
        await conn.send_all(stream.sealed_stream(self.keyring, reply))


async def _try_send(conn: trio.SocketStream, data: bytes) -> None:
    with trio.move_on_after(1.0):
        try:
            await conn.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
