"""Sockets and files of the trio driver: the UDP socket, the event log, TCP requests.

Rules:
1. ``request`` answers None for any failed exchange (refused, reset, malformed): the caller
   counts it; it never raises for the network.
2. The event log is opened off the loop and written a line at a time.
3. ``Sender``: a packet goes out at once, from the code that made it, when the socket takes
   it: to an address in the socket's own family given as a literal, with nothing queued
   before it. Otherwise (a host name, a full socket buffer, packets still queued) it waits in
   the send queue (at most ``SEND_QUEUE`` packets; more are dropped and counted) for the
   send task, so no packet overtakes another. At rest that saves most of a member's task
   switches (issue 33).
4. ``Receiver``: a datagram read is handed on at once, never held across a checkpoint (trio's
   own ``recvfrom`` yields between reading and returning, so a busy member could time out a
   probe whose ack it had already read): the receive task waits for the socket to be
   readable, then reads the datagrams waiting, up to ``TAKEN_AT_ONCE`` of them or for
   ``TAKE_FOR`` seconds, whichever ends first, before other tasks get a turn (a flood of
   costly packets must not hold the loop); ``take_waiting`` does the same from synchronous
   code (a tick, before it judges a timeout). A socket without a descriptor (a test's
   in-memory one) is read through trio.
"""

from __future__ import annotations

import json
import logging
import os
import socket as _socket
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from typing import IO, Any

import trio

from . import exchange
from .config import SwimConfig
from .framing import FrameError, recv_frame, send_frame
from .history import HistoryEntry
from .keyring import TCP_REPLY, TCP_REQUEST
from .messages import BadMessage

__all__ = [
    "EventLog",
    "Receiver",
    "Sender",
    "open_event_log",
    "open_udp",
    "resolve_node_id",
    "tcp_request",
]

log = logging.getLogger(__name__)
SEND_QUEUE = 4096  # packets waiting for the send task at most (rule 3)
TAKEN_AT_ONCE = 64  # rule 4: datagrams read in one go at most (then others get a turn)
TAKE_FOR = 0.005  # rule 4: seconds of handling in one go at most
_LITERALS_KEPT = 1024


class Sender:
    """Rule 3: the send path of one UDP socket (``raw``: the stdlib socket on its descriptor,
    or None to queue every packet); ``drop(reason)`` counts a packet that was not sent."""

    def __init__(
        self, sock: trio.socket.SocketType, raw: _socket.socket | None, drop: Callable[[str], Any]
    ) -> None:
        self._sock = sock
        self._raw = raw
        self._drop = drop
        self._queue, self._queued_r = trio.open_memory_channel[tuple[bytes, tuple[str, int]]](
            SEND_QUEUE
        )
        self.queued = 0  # packets in the queue
        self._literal = _literal_hosts(sock.family)

    def send_nowait(self, data: bytes, addr: tuple[str, int]) -> None:
        if self._raw is not None and not self.queued and self._literal(addr[0]):
            try:
                self._raw.sendto(data, addr)
                return
            except BlockingIOError:
                pass
            except OSError as exc:
                self._drop(f"send_error_{exc.errno}")
                return
        try:
            self._queue.send_nowait((data, addr))
            self.queued += 1
        except trio.WouldBlock:
            self._drop("send_queue_full")

    async def run(self) -> None:
        """The send task: the queue, in order, through trio's socket."""
        async for data, addr in self._queued_r:
            try:
                await self._sock.sendto(data, addr)
            except OSError as exc:
                self._drop(f"send_error_{exc.errno}")
            finally:
                self.queued -= 1


class Receiver:
    """Rule 4: the receive path of one UDP socket; ``arrived(data, addr)`` takes each
    datagram, ``drop(reason)`` counts a read that failed."""

    def __init__(
        self,
        sock: trio.socket.SocketType,
        raw: _socket.socket | None,
        arrived: Callable[[bytes, Any], None],
        drop: Callable[[str], Any],
    ) -> None:
        self._sock = sock
        self._raw = raw
        self._arrived = arrived
        self._drop = drop

    async def run(self) -> None:
        """The receive task (never returns)."""
        if self._raw is not None:
            while True:
                await trio.lowlevel.wait_readable(self._raw)
                self.take_waiting()
        while True:
            try:
                data, addr = await self._sock.recvfrom(65536)
            except OSError as exc:  # e.g. ICMP errors surfacing on some platforms
                self._drop(f"recv_error_{exc.errno}")
                continue
            self._arrived(data, addr)

    def take_waiting(self) -> None:
        """The datagrams waiting now (rule 4: at most ``TAKEN_AT_ONCE`` or ``TAKE_FOR``
        seconds), each handed on as read."""
        if self._raw is None:
            return
        until = time.perf_counter() + TAKE_FOR
        for _ in range(TAKEN_AT_ONCE):
            if time.perf_counter() > until:
                return
            try:
                data, addr = self._raw.recvfrom(65536)
            except BlockingIOError:
                return
            except OSError as exc:  # e.g. ICMP errors surfacing on some platforms
                self._drop(f"recv_error_{exc.errno}")
                continue
            self._arrived(data, addr)


def _literal_hosts(family: int) -> Callable[[str], bool]:
    """Is a host an address literal of ``family`` (a send to it needs no name lookup)? The
    answers are remembered (at most ``_LITERALS_KEPT`` hosts, then forgotten at once)."""
    known: dict[str, bool] = {}

    def literal(host: str) -> bool:
        answer = known.get(host)
        if answer is None:
            try:
                _socket.inet_pton(family, host)
                answer = True
            except (OSError, ValueError):
                answer = False
            if len(known) >= _LITERALS_KEPT:
                known.clear()
            known[host] = answer
        return answer

    return literal


class EventLog:
    """JSON lines, ``mono`` on the host's ``time.monotonic()`` and ``wall`` on ``time.time()``."""

    def __init__(self, file: IO[str]) -> None:
        self._file = file

    def write(self, entries: Sequence[HistoryEntry]) -> None:
        for entry in entries:
            self._file.write(json.dumps(entry.log_line()) + "\n")


async def tcp_request(host: str, port: int, frame: dict[str, Any], max_bytes: int) -> Any:
    """One TCP request and its reply frame; None if the exchange failed."""
    try:
        stream = await trio.open_tcp_stream(host, port)
        async with stream:
            await send_frame(stream, frame)
            return await recv_frame(stream, max_bytes)
    except (OSError, FrameError, trio.BrokenResourceError) as exc:
        log.debug("swim request to %s:%s: %s", host, port, exc)
        return None


async def resolve_node_id(
    node_id: int | None, induct: bool, seeds: Sequence[tuple[str, int]], config: SwimConfig
) -> int:
    """``node_id``, or (with ``induct``) the next free id handed out by the first seed to answer."""
    if node_id is not None:
        return node_id
    if not induct:
        raise ValueError("node_id=None needs induct=True (and seeds to ask)")
    request = exchange.seal(config.keyring, exchange.induct_request(), TCP_REQUEST)
    for host, port in seeds:
        reply: Any = None
        with trio.move_on_after(config.tcp_timeout):
            reply = await tcp_request(host, port, request, 1 << 16)
        with suppress(BadMessage):
            reply = exchange.open_sealed(config.keyring, reply, TCP_REPLY, 1 << 16)
            return exchange.read_induct_reply(reply)
    raise ConnectionError(f"no seed of {list(seeds)} answered the induct request")


@asynccontextmanager
async def open_udp(
    host: str, port: int
) -> AsyncIterator[tuple[trio.socket.SocketType, _socket.socket | None]]:
    """A UDP socket bound to ``host:port`` (0 picks a free port), closed on exit: trio's
    socket, and a stdlib socket on a copy of its descriptor for sends that need no wait (None
    for a socket without one, as a test's in-memory socket)."""
    family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
    with trio.socket.socket(family, _socket.SOCK_DGRAM) as sock:
        with suppress(OSError):  # a bigger receive buffer is welcome, not required
            sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_RCVBUF, 1 << 21)
        await sock.bind((host, port))
        try:
            raw: _socket.socket | None = _socket.fromfd(sock.fileno(), family, _socket.SOCK_DGRAM)
        except (NotImplementedError, OSError):
            raw = None
        try:
            if raw is not None:
                raw.setblocking(False)
            yield sock, raw
        finally:
            if raw is not None:
                raw.close()


@asynccontextmanager
async def open_event_log(path: str | os.PathLike[str] | None) -> AsyncIterator[EventLog | None]:
    if path is None:
        yield None
        return
    # Opened off the loop; each event is then one small line-buffered write.
    name = os.fspath(path)
    file = await trio.to_thread.run_sync(
        lambda: open(name, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
    )
    with file:
        yield EventLog(file)
