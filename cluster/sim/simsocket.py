"""One socket of the whole-node simulator's network, UDP or TCP (``cluster.sim.net``'s rules).

Rules:
1. A datagram socket keeps what arrives in a heap by arrival time (then send order) and hands
   out a datagram once its time has come and its host reads (not paused).
2. A stream socket is one end of a connected pair: what one end sends is queued at the other
   with its arrival time, in order; the reader waits until the head has arrived and the way
   from the sender is open (``Wire.passes``), then reads. ``shutdown(SHUT_WR)`` and ``close``
   queue the end of the stream behind the bytes already sent.
3. Bytes a fault between the hosts held (a partition, a cut: not a paused sender, whose code
   sends nothing meanwhile) land at the sender's first retransmission after the way opens
   again, as a kernel's: ``RTO_S`` after they were first held, doubling to ``RTO_MAX_S``
   (``retransmission_at``); then everything that had arrived by then lands with them. Bytes
   that landed before a fault are read through it.
4. A listener queues connects; ``accept`` hands out the oldest once its host reads.
5. Every wait is on the socket's own event, which ``poke`` sets (data arrived, a fault changed)
   and the arrival time of the head, so a waiting task wakes exactly when it can go on.
6. Only what the node's code, trio's SocketStream and SocketListener and ``open_tcp_stream``
   call is here; anything else is a ``NotImplementedError`` naming it.
"""

from __future__ import annotations

import errno
import heapq
import os
import socket
from collections import deque
from typing import Any, Protocol

import trio

__all__ = ["RTO_MAX_S", "RTO_S", "Address", "SimSocket", "Wire", "retransmission_at"]

Address = tuple[str, int]
_FAKE_FD = 1 << 24  # what fileno() says of an open socket: no descriptor anything can use
_END = b""  # the end of a stream, queued behind its bytes
RTO_S, RTO_MAX_S = 0.2, 120.0  # rule 3: Linux's first retransmission timeout, and its cap


def retransmission_at(first: float, now: float) -> float:
    """Rule 3: the first retransmission at or after ``now`` of a segment first sent at
    ``first`` (``RTO_S`` later, then twice as long each time, up to ``RTO_MAX_S``)."""
    at, rto = first, RTO_S
    while at < now:
        at += rto
        rto = min(2 * rto, RTO_MAX_S)
    return at


def _error(code: int) -> OSError:
    return OSError(code, os.strerror(code))


class Wire(Protocol):
    """What a socket asks of its network (``cluster.sim.net.SimNet``)."""

    listeners: dict[Address, SimSocket]
    frozen: set[int]

    def passes(self, src: int | None, dst: int | None) -> bool: ...
    def transit(self, src: int | None, dst: int | None) -> float: ...
    def send_datagram(self, data: bytes, src: SimSocket, dest: Address) -> None: ...
    def order(self) -> int: ...
    def bind(self, sock: SimSocket, address: Address) -> Address: ...
    def listen(self, sock: SimSocket) -> None: ...
    def forget(self, sock: SimSocket) -> None: ...
    def register(self, sock: SimSocket) -> None: ...
    def free_port(self) -> int: ...


class SimSocket(trio.socket.SocketType):
    """A UDP socket, a TCP listener or one end of a TCP stream, on a simulated network."""

    def __init__(self, net: Wire, host: int | None, kind: socket.SocketKind) -> None:
        super().__init__()
        self._net = net
        self.host = host
        self._kind = kind
        self.address: Address | None = None
        self.peer: SimSocket | None = None
        self.listening = False
        self.closed = False
        self._shut_wr = False
        self._datagrams: list[tuple[float, int, bytes, Address]] = []  # rule 1
        self._bytes: deque[tuple[float, bytes]] = deque()  # rule 2 (b"" is the end)
        self._connects: deque[SimSocket] = deque()  # rule 4
        self._landed_until = float("-inf")  # rule 3: the bytes that arrived by then landed
        self._held_from: float | None = None  # rule 3: when a fault first held the head
        self._resent_at = float("inf")  # rule 3: the held head's next retransmission
        self._event = trio.Event()

    # ---- what the socket is -----------------------------------------------------------------

    @property
    def family(self) -> socket.AddressFamily:
        return socket.AF_INET

    @property
    def type(self) -> socket.SocketKind:
        return self._kind

    @property
    def proto(self) -> int:
        return 0

    def __repr__(self) -> str:
        kind = "udp" if self._kind == socket.SOCK_DGRAM else "tcp"
        return f"<SimSocket {kind} host={self.host} {self.address}>"

    @property
    def did_shutdown_SHUT_WR(self) -> bool:
        return self._shut_wr

    def fileno(self) -> int:
        return -1 if self.closed else _FAKE_FD

    def name(self) -> Address:
        return self.address if self.address is not None else ("0.0.0.0", 0)

    def getsockname(self) -> Address:
        return self.name()

    def getpeername(self) -> Address:
        if self.peer is None:
            raise _error(errno.ENOTCONN)
        return self.peer.name()

    def setsockopt(self, *args: Any) -> None:
        pass  # buffer sizes, TCP_NODELAY, SO_REUSEADDR: nothing to set here

    def getsockopt(self, level: int, option: int, buflen: int = 0) -> Any:
        if option == socket.SO_ACCEPTCONN:
            return int(self.listening)
        return 0

    def __enter__(self) -> SimSocket:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def poke(self) -> None:
        """Rule 4: wake whoever waits on this socket to look again."""
        self._event.set()
        self._event = trio.Event()

    async def _wait(self, until: float) -> None:
        event = self._event
        with trio.move_on_at(until):
            await event.wait()

    def _paused(self) -> bool:
        """A paused host reads and accepts nothing (net rule 4)."""
        return self.host is not None and self.host in self._net.frozen

    # ---- binding, closing ------------------------------------------------------------------

    async def bind(self, address: Any) -> None:
        await trio.lowlevel.checkpoint()
        if self.address is not None:
            raise _error(errno.EINVAL)
        self.address = self._net.bind(self, (str(address[0]), int(address[1])))

    def listen(self, backlog: int = 128) -> None:
        if self.address is None:
            self.address = self._net.bind(self, ("127.0.0.1", 0))
        self._net.listen(self)
        self.listening = True

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._net.forget(self)
        if self.peer is not None and not self._shut_wr:
            self.peer.arrive_bytes(trio.current_time(), _END)  # no bytes overtake the end
        for pending in self._connects:
            pending.close()  # its connector reads the end of the stream
        self._connects.clear()
        self.poke()

    def shutdown(self, how: int) -> None:
        if self.peer is None:
            raise _error(errno.ENOTCONN)
        if how in (socket.SHUT_WR, socket.SHUT_RDWR) and not self._shut_wr:
            self._shut_wr = True
            self._send_to_peer(_END)

    # ---- datagrams (rule 1) ------------------------------------------------------------------

    def arrive_datagram(self, at: float, order: int, data: bytes, src: Address) -> None:
        if not self.closed:
            heapq.heappush(self._datagrams, (at, order, data, src))
            self.poke()

    async def sendto(self, *args: Any) -> int:
        data, address = bytes(args[0]), args[-1]
        if self.closed:
            await trio.lowlevel.checkpoint()
            raise _error(errno.EBADF)
        if self.address is None:
            self.address = self._net.bind(self, ("127.0.0.1", 0))
        await trio.lowlevel.checkpoint()
        if not self._paused():  # a paused host sends nothing (net rule 4)
            self._net.send_datagram(data, self, (str(address[0]), int(address[1])))
        return len(data)

    async def recvfrom(self, bufsize: int, flags: int = 0, /) -> tuple[bytes, Address]:
        while True:
            if self.closed:
                await trio.lowlevel.checkpoint()  # a killed node's task is cancelled here
                raise _error(errno.EBADF)
            now = trio.current_time()
            head = self._datagrams[0][0] if self._datagrams else float("inf")
            if head <= now and not self._paused():
                _, _, data, src = heapq.heappop(self._datagrams)
                await trio.lowlevel.checkpoint()
                return data[:bufsize], src
            await self._wait(head if head > now else float("inf"))

    # ---- streams (rules 2 to 4) ------------------------------------------------------------

    def arrive_bytes(self, at: float, data: bytes) -> None:
        if not self.closed:
            self._bytes.append((at, data))
            self.poke()

    async def connect(self, address: Any) -> None:
        dest = (str(address[0]), int(address[1]))
        if self.address is None:
            self.address = ("127.0.0.1", self._net.free_port())
        await trio.sleep(self._net.transit(self.host, None))
        listener = self._net.listeners.get(dest)
        if listener is None or listener.closed:
            raise _error(errno.ECONNREFUSED)
        while not (
            self._net.passes(self.host, listener.host)
            and self._net.passes(listener.host, self.host)
        ):
            await self._wait(float("inf"))  # rule 3 of the net: SYNs retried until the way opens
            if listener.closed:
                raise _error(errno.ECONNREFUSED)
        server = SimSocket(self._net, listener.host, socket.SOCK_STREAM)
        server.address, server.peer, self.peer = dest, self, server
        self._net.register(server)
        listener._connects.append(server)
        listener.poke()

    async def accept(self) -> tuple[SimSocket, Address]:
        while True:
            if self.closed:
                await trio.lowlevel.checkpoint()  # a killed node's task is cancelled here
                raise _error(errno.EBADF)
            if self._connects and not self._paused():
                server = self._connects.popleft()
                await trio.lowlevel.checkpoint()
                assert server.peer is not None
                return server, server.peer.name()
            await self._wait(float("inf"))

    async def send(self, data: Any, flags: int = 0) -> int:
        if self.closed or self.peer is None or self.peer.closed:
            await trio.lowlevel.checkpoint()
            raise _error(errno.EBADF if self.closed else errno.EPIPE)
        await trio.lowlevel.checkpoint()
        chunk = bytes(data)
        if chunk:  # a paused sender's bytes wait for its thaw at the reader (net rule 4)
            self._send_to_peer(chunk)
        return len(chunk)

    def _send_to_peer(self, data: bytes) -> None:
        assert self.peer is not None
        self.peer.arrive_bytes(
            trio.current_time() + self._net.transit(self.host, self.peer.host), data
        )

    async def wait_writable(self) -> None:
        await trio.lowlevel.checkpoint()

    async def recv(self, bufsize: int, flags: int = 0, /) -> bytes:
        while True:
            if self.closed:
                await trio.lowlevel.checkpoint()  # a killed node's task is cancelled here
                raise _error(errno.EBADF)
            now = trio.current_time()
            head = self._bytes[0][0] if self._bytes else float("inf")
            if head <= now and self._landed(head, now) and not self._paused():
                at, data = self._bytes.popleft()
                if len(data) > bufsize:
                    self._bytes.appendleft((at, data[bufsize:]))
                    data = data[:bufsize]
                if data == _END:
                    self._bytes.appendleft((at, _END))  # the end stays the end
                await trio.lowlevel.checkpoint()
                return data
            await self._wait(head if head > now else self._resent_at)

    def settle(self) -> None:
        """Rule 3, called before a fault changes: what has arrived by now lands, or is held."""
        now = trio.current_time()
        arrived = [at for at, _ in self._bytes if at <= now]
        if arrived:
            self._landed(arrived[-1], now)

    def _landed(self, at: float, now: float) -> bool:
        """Rule 3: has the chunk that arrived at ``at`` landed at this end by ``now``?"""
        if at <= self._landed_until:
            return True
        sender = self.peer.host if self.peer is not None else None
        if not self._net.passes(sender, self.host):
            if sender not in self._net.frozen and self._held_from is None:
                first = next(a for a, _ in self._bytes if a > self._landed_until)
                self._held_from = first  # a fault holds it: the sender retransmits it
            self._resent_at = float("inf")  # until the way opens (a poke)
            return False
        if self._held_from is not None:
            self._resent_at = retransmission_at(self._held_from, now)
            if self._resent_at > now:
                return False
        self._held_from, self._resent_at, self._landed_until = None, float("inf"), now
        return True
