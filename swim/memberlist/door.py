"""The driver's memberlist door: packets in and out, push/pulls, and the TCP streams.

Rules:
1. A packet in passes the machine's intake first (its size and its sender's rate), then is
   opened, checked and decoded here, translated by the edge, and handed to the machine
   already decoded (``SwimMachine.receive_messages``). Refusals are counted by reason.
2. A packet out is the machine's own packet, translated part by part; parts the edge
   cannot say are left out, and a packet left empty is not sent.
3. A stream is served within ``tcp_timeout`` and ``max_frame_bytes``; a refused request
   gets memberlist's error reply when it was readable, and the stream is closed. At most
   ``MAX_STREAMS`` are served at once (memberlist allows 128 push/pulls); one more is closed
   at once and counted (``stream_busy``), so streams hold at most ``MAX_STREAMS`` times
   ``max_frame_bytes`` however many connections the listener lets in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import trio

from .. import wire
from ..config import SwimConfig
from ..machine import SwimMachine
from ..outputs import DROPPED, Output
from ..wire import BadMessage, StateEntry
from . import codec, stream
from .codec import Kind
from .edge import Edge

__all__ = ["MAX_PACKET", "MAX_STREAMS", "MemberlistDoor"]

log = logging.getLogger(__name__)

MAX_PACKET = 65507  # memberlist reads packets of up to 64 KiB
MAX_STREAMS = 16


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
            max_names=2 * config.max_members,
            drop=counters.drop,
        )
        machine.intake.max_bytes = MAX_PACKET
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
        msgs = self.edge.inbound(decoded.messages, src)[: wire.MAX_PARTS]
        if not msgs:
            return DROPPED
        return m.receive_messages(msgs, src, now, len(data))

    def send(self, data: bytes) -> bytes | None:
        """memberlist's packet for the machine's packet ``data`` (None: nothing to say)."""
        parts = self.edge.outbound(wire.decode_untrusted(data, MAX_PACKET))
        if not parts:
            return None
        return codec.encode_packet(parts[: codec.MAX_PARTS], self.keyring)

    # ---- push/pull ----------------------------------------------------------------------------

    def _local(self) -> list[codec.NodeState]:
        return self.edge.states_out(self.machine.local_state())

    async def pushpull(self, host: str, port: int, join: bool) -> list[StateEntry]:
        """A push/pull with ``host:port`` (``BadMessage``/``OSError`` when it fails)."""
        c = self.config
        theirs = await stream.request_pushpull(
            host,
            port,
            self._local(),
            join=join,
            keyring=self.keyring,
            max_bytes=c.max_frame_bytes,
            max_states=c.max_members,
        )
        return self.edge.states_in(theirs)

    async def serve(
        self,
        conn: trio.SocketStream,
        first: bytes,
        merge: Callable[[list[StateEntry]], Any],
    ) -> None:
        """Answer one memberlist stream (rule 3); ``merge`` takes the peer's push/pull."""
        if self.streams >= MAX_STREAMS:
            self.machine.counters.drop("stream_busy")
            return
        self.streams += 1
        try:
            await self._serve(conn, first, merge)
        finally:
            self.streams -= 1

    async def _serve(
        self,
        conn: trio.SocketStream,
        first: bytes,
        merge: Callable[[list[StateEntry]], Any],
    ) -> None:
        c = self.config
        reply: bytes | None = None
        try:
            with trio.fail_after(c.tcp_timeout):
                kind, reader = await stream.read_request(
                    conn, first, self.keyring, c.max_frame_bytes
                )
                if kind == Kind.PUSH_PULL:
                    join, states = await stream.read_pushpull(reader, c.max_members)
                    entries = self.edge.states_in(states)
                    reply = stream.pushpull_bytes(self._local(), join)
                    await conn.send_all(stream.sealed_stream(self.keyring, reply))
                    merge(entries)
                elif kind == Kind.PING:
                    ping = codec.decode_body(Kind.PING, await reader.map())
                    if isinstance(ping, codec.Ping) and ping.node in ("", self.name):
                        reply = stream.ack_bytes(ping.seq)
                        await conn.send_all(stream.sealed_stream(self.keyring, reply))
                    else:
                        self.machine.counters.drop("misdirected")
                else:
                    raise BadMessage("unknown_type", f"a stream of type {kind}")
        except BadMessage as exc:
            self.machine.counters.drop(exc.reason)
            log.debug("memberlist stream refused: %s", exc)
            if exc.reason not in ("auth", "truncated"):
                refusal = stream.error_bytes(str(exc))
                await _try_send(conn, stream.sealed_stream(self.keyring, refusal))
        except trio.TooSlowError:
            self.machine.counters.drop("tcp_timeout")


async def _try_send(conn: trio.SocketStream, data: bytes) -> None:
    with trio.move_on_after(1.0):
        try:
            await conn.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
