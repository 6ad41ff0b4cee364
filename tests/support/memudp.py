"""An in-memory UDP network for trio tests of code that opens its own sockets (``swim``'s driver).

``with memory_udp() as net:`` inside a trio run makes every ``trio.socket.socket`` of that run
a ``MemorySocket`` on ``net`` (trio's public hook ``trio.socket.set_custom_socket_factory``;
sockets made before, and other trio runs, are untouched).

Rules:
1. A datagram sent is in its receiver's queue when ``sendto`` returns: delivery takes no time
   and no kernel, so under a ``trio.testing.MockClock`` that autojumps, virtual time moves
   only when every task waits and nothing is in flight. What the code does in virtual time is
   then the same on an idle machine and on a busy one.
2. UDP only: making any other socket raises ``OSError`` (EPROTONOSUPPORT), as a transport
   failure the code under test already handles (a TCP push/pull that cannot connect).
3. A datagram to an address nobody holds is dropped and counted (``net.undeliverable``), as
   UDP drops it. Nothing else is lost, reordered or delayed.
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import trio

__all__ = ["MemoryNet", "MemorySocket", "memory_udp"]

Address = tuple[str, int]
FIRST_PORT = 40000  # port 0 binds the next free one from here


def _error(code: int) -> OSError:
    return OSError(code, os.strerror(code))


class MemoryNet(trio.abc.SocketFactory):
    """The bound sockets of one trio run, by address; datagrams sent and undeliverable."""

    def __init__(self) -> None:
        self.bound: dict[Address, MemorySocket] = {}
        self.sent = 0
        self.undeliverable = 0
        self._next_port = FIRST_PORT

    def socket(
        self,
        family: socket.AddressFamily | int = socket.AF_INET,
        type: socket.SocketKind | int = socket.SOCK_STREAM,  # trio's parameter names
        proto: int = 0,
    ) -> trio.socket.SocketType:
        if family != socket.AF_INET or type != socket.SOCK_DGRAM:
            raise _error(errno.EPROTONOSUPPORT)  # rule 2
        return MemorySocket(self)

    def free_port(self, host: str) -> int:
        while (host, self._next_port) in self.bound:
            self._next_port += 1
        return self._next_port

    def deliver(self, data: bytes, src: Address, dest: Address) -> None:
        self.sent += 1
        receiver = self.bound.get(dest)
        if receiver is None or not receiver.arrive(data, src):
            self.undeliverable += 1  # rule 3


class MemorySocket(trio.socket.SocketType):
    """One UDP socket on a ``MemoryNet``: what ``swim``'s driver calls, nothing more."""

    def __init__(self, net: MemoryNet) -> None:
        super().__init__()
        self._net = net
        self._address: Address | None = None
        self._inbox, self._queue = trio.open_memory_channel[tuple[bytes, Address]](float("inf"))

    @property
    def family(self) -> socket.AddressFamily:
        return socket.AF_INET

    @property
    def type(self) -> socket.SocketKind:
        return socket.SOCK_DGRAM

    @property
    def proto(self) -> int:
        return 0

    def arrive(self, data: bytes, src: Address) -> bool:
        """Queue a datagram from ``src``; False if this socket is closed."""
        try:
            self._inbox.send_nowait((data, src))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return False
        return True

    def __repr__(self) -> str:
        return f"<MemorySocket {self._address}>"

    def setsockopt(self, *args: Any) -> None:
        pass  # buffer sizes and the like mean nothing here

    async def bind(self, address: Any) -> None:
        await trio.lowlevel.checkpoint()
        host, port = str(address[0]), int(address[1])
        if self._address is not None:
            raise _error(errno.EINVAL)
        port = port or self._net.free_port(host)
        if (host, port) in self._net.bound:
            raise _error(errno.EADDRINUSE)
        self._net.bound[(host, port)] = self
        self._address = (host, port)

    def getsockname(self) -> Address:
        if self._address is None:
            return ("0.0.0.0", 0)
        return self._address

    async def sendto(self, *args: Any) -> int:
        data, address = bytes(args[0]), args[-1]
        if self._address is None:
            raise _error(errno.EINVAL)  # the driver always binds first
        await trio.lowlevel.checkpoint()
        self._net.deliver(data, self._address, (str(address[0]), int(address[1])))
        return len(data)

    async def recvfrom(self, bufsize: int, flags: int = 0, /) -> tuple[bytes, Address]:
        data, src = await self._queue.receive()
        return data[:bufsize], src

    def close(self) -> None:
        if self._address is not None and self._net.bound.get(self._address) is self:
            del self._net.bound[self._address]
        self._inbox.close()
        self._queue.close()

    def __enter__(self) -> MemorySocket:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@contextmanager
def memory_udp() -> Iterator[MemoryNet]:
    """Every ``trio.socket.socket`` of this trio run a ``MemorySocket`` while the block runs."""
    net = MemoryNet()
    trio.socket.set_custom_socket_factory(net)
    try:
        yield net
    finally:
        trio.socket.set_custom_socket_factory(None)
