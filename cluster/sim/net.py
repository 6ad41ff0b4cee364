"""The whole-node simulator's network: every ``trio.socket`` of the run, UDP and TCP, in memory.

``with net.installed():`` inside a trio run makes every ``trio.socket.socket`` of that run a
socket of ``net`` (trio's public hook ``trio.socket.set_custom_socket_factory``), so a node's
own code (SWIM's UDP, the node RPC's listener and client, SWIM's push/pull) runs on it unchanged.

Rules:
1. Each socket belongs to a host: the node whose task made it (``on_host(i)``, a context
   variable a node's tasks inherit), or the one a listener's accepted streams belong to. A
   socket made outside every host (the test, the backend) is the outside: no fault touches it.
2. Between two hosts a fault may stand: a partition (hosts in different groups), a one-way cut
   (``cut(src, dst)``: what src sends dst is lost), loss and delay of a host (``loss(i, pct)``,
   ``delay(i, ms)``: what it sends and receives). A datagram decides at its send: it is lost
   (a partition, a cut, a draw of the loss) or delivered after the link's latency, drawn from
   the net's seeded generator, plus both ends' delays.
3. TCP needs both directions: a connect across a partition or a cut waits, as SYNs are
   retransmitted, until the fault is gone or the caller gives up; bytes of an open stream
   wait the same way, and arrive in order at the sender's first retransmission after the way
   opens (a kernel's backoff, ``simsocket`` rule 3). A connect to an address with
   no listener is refused (ECONNREFUSED) after one latency.
4. A paused host (``freeze``) reads nothing: datagrams and bytes wait in its buffers, and its
   listener accepts nothing, until ``thaw``; what its tasks send meanwhile is lost (a stopped
   process sends nothing; its code here runs on, see docs/testing.md).
5. A killed host (``kill``): every socket it holds is closed at once; a peer reading from one
   of its streams reads the end of the stream, as after the kernel's FIN, and its addresses
   are free again for the next start.
6. Nothing here reads a real clock or the global random generator: times are trio's (a
   virtual clock in the simulator) and draws are the net's own ``random.Random``.
"""

from __future__ import annotations

import errno
import itertools
import os
import random
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import trio

from .simsocket import Address, SimSocket

__all__ = ["SimNet", "SimSocket", "on_host"]

FIRST_PORT = 40000  # port 0 binds the next free one from here
_HOST: ContextVar[int | None] = ContextVar("rtsim_sim_host", default=None)


def _error(code: int) -> OSError:
    return OSError(code, os.strerror(code))


@contextmanager
def on_host(host: int | None) -> Iterator[None]:
    """Rule 1: sockets made by this task, and by every task it starts, are ``host``'s."""
    token = _HOST.set(host)
    try:
        yield
    finally:
        _HOST.reset(token)


class SimNet(trio.abc.SocketFactory):
    """The sockets of one trio run by address, and the faults between hosts (rules 2-5)."""

    def __init__(self, rng: random.Random, latency: tuple[float, float] = (0.0005, 0.002)) -> None:
        self.rng = rng
        self.latency = latency
        self.datagram_sockets: dict[Address, SimSocket] = {}
        self.listeners: dict[Address, SimSocket] = {}
        self.groups: dict[int, int] = {}  # host -> partition group (empty: one network)
        self.cuts: set[tuple[int, int]] = set()
        self.losses: dict[int, float] = {}  # host -> percent
        self.delays: dict[int, float] = {}  # host -> seconds
        self.frozen: set[int] = set()
        self.sent = 0
        self.lost = 0
        self._sockets: dict[int | None, list[SimSocket]] = {}
        self._next_port = FIRST_PORT
        self._order = itertools.count()  # ties of equal arrival times keep their send order
        self._thawed = trio.Event()  # set at every change of the faults

    # ---- the run's sockets -----------------------------------------------------------------

    @contextmanager
    def installed(self) -> Iterator[SimNet]:
        """Make every ``trio.socket.socket`` of the running trio one of this net's."""
        trio.socket.set_custom_socket_factory(self)
        try:
            yield self
        finally:
            trio.socket.set_custom_socket_factory(None)

    def socket(
        self,
        family: socket.AddressFamily | int = socket.AF_INET,
        type: socket.SocketKind | int = socket.SOCK_STREAM,  # trio's parameter names
        proto: int = 0,
    ) -> trio.socket.SocketType:
        if family != socket.AF_INET or type not in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
            raise _error(errno.EAFNOSUPPORT)
        made = SimSocket(self, _HOST.get(), socket.SocketKind(type))
        self.register(made)
        return made

    def register(self, sock: SimSocket) -> None:
        """A socket of ``sock.host``'s, closed when that host is killed (rule 5)."""
        self._sockets.setdefault(sock.host, []).append(sock)

    def free_port(self) -> int:
        taken = self.datagram_sockets.keys() | self.listeners.keys()
        while any(port == self._next_port for _, port in taken):
            self._next_port += 1
        self._next_port += 1
        return self._next_port - 1

    # ---- faults (rules 2-5) ------------------------------------------------------------------

    def passes(self, src: int | None, dst: int | None) -> bool:
        """Whether what ``src`` sends reaches ``dst`` now (a partition, a cut, a pause)."""
        if src is None or dst is None or src == dst:
            return True
        if self.groups and self.groups.get(src, -1) != self.groups.get(dst, -1):
            return False
        return (src, dst) not in self.cuts and src not in self.frozen

    def partition(self, groups: Sequence[Sequence[int]]) -> None:
        self._land()
        self.groups = {host: g for g, members in enumerate(groups) for host in members}
        self._wake()

    def cut(self, src: int, dst: int) -> None:
        self._land()
        self.cuts.add((src, dst))
        self._wake()

    def loss(self, host: int, percent: float) -> None:
        self.losses[host] = percent

    def delay(self, host: int, ms: float) -> None:
        self.delays[host] = ms / 1000

    def freeze(self, host: int) -> None:
        self._land()
        self.frozen.add(host)
        self._wake()

    def thaw(self, host: int) -> None:
        self._land()
        self.frozen.discard(host)
        self._wake()

    async def wait_thawed(self, host: int) -> None:
        """Until ``host`` is not paused (at once when it is not)."""
        while host in self.frozen:
            await self._thawed.wait()

    def heal(self) -> None:
        """Every fault between hosts gone (a pause is not a network fault: ``thaw`` ends it)."""
        self._land()
        self.groups.clear()
        self.cuts.clear()
        self.losses.clear()
        self.delays.clear()
        self._wake()

    def kill(self, host: int) -> None:
        """Rule 5: every socket of ``host`` closed now."""
        for sock in self._sockets.pop(host, []):
            sock.close()
        self.frozen.discard(host)
        self._wake()

    # ---- what sockets ask ----------------------------------------------------------------

    def transit(self, src: int | None, dst: int | None) -> float:
        """One way's time from ``src`` to ``dst``: the drawn latency plus both ends' delays."""
        low, high = self.latency
        return (
            self.rng.uniform(low, high)
            + self.delays.get(src, 0.0)  # type: ignore[arg-type]
            + self.delays.get(dst, 0.0)  # type: ignore[arg-type]
        )

    def send_datagram(self, data: bytes, src: SimSocket, dest: Address) -> None:
        self.sent += 1
        receiver = self.datagram_sockets.get(dest)
        if (
            receiver is None
            or not self.passes(src.host, receiver.host)
            or self._drawn_lost(src, receiver)
        ):
            self.lost += 1
            return
        at = trio.current_time() + self.transit(src.host, receiver.host)
        receiver.arrive_datagram(at, next(self._order), data, src.name())

    def _drawn_lost(self, src: SimSocket, dst: SimSocket) -> bool:
        percent = self.losses.get(src.host, 0.0) + self.losses.get(dst.host, 0.0)  # type: ignore[arg-type]
        return percent > 0 and self.rng.random() * 100 < percent

    def order(self) -> int:
        return next(self._order)

    def bind(self, sock: SimSocket, address: Address) -> Address:
        host, port = address
        table = self.listeners if sock.type == socket.SOCK_STREAM else self.datagram_sockets
        port = port or self.free_port()
        if (host, port) in table:
            raise _error(errno.EADDRINUSE)
        if sock.type == socket.SOCK_DGRAM:
            table[(host, port)] = sock
        return (host, port)

    def listen(self, sock: SimSocket) -> None:
        assert sock.address is not None
        if sock.address in self.listeners:
            raise _error(errno.EADDRINUSE)
        self.listeners[sock.address] = sock

    def forget(self, sock: SimSocket) -> None:
        if sock.address is not None:
            for table in (self.datagram_sockets, self.listeners):
                if table.get(sock.address) is sock:
                    del table[sock.address]
        held = self._sockets.get(sock.host)
        if held is not None and sock in held:
            held.remove(sock)

    def _land(self) -> None:
        """Before a fault changes: what each stream has been sent by now lands or is held
        (``simsocket`` rule 3), judged by the faults that stood while it came."""
        for held in self._sockets.values():
            for sock in held:
                sock.settle()

    def _wake(self) -> None:
        """A fault changed: every waiting socket looks again (in the order they were made)."""
        self._thawed.set()
        self._thawed = trio.Event()
        for held in list(self._sockets.values()):
            for sock in held:
                sock.poke()
