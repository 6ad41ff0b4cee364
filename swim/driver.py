"""The one trio driver: a SwimMachine over a real UDP socket, plus TCP join and push/pull.

``open_swim(...)`` binds the UDP socket, starts the tasks that feed the machine (receive,
timers, sending, loop-lag probe, TCP push/pulls) in its own nursery, and yields a
``SwimHandle``. The TCP *listener* belongs to the node (cluster/rpc.py): it hands frames of
kind ``"swim"`` to ``await handle.handle_tcp(msg)``; ``swim.testing.serve_tcp_for`` does the
same for tests and the benchmark.

Rules:
1. The machine is only ever called from synchronous code between checkpoints, so no lock is
   needed and no task sees a half-applied change (STYLE rule 2).
2. The receive loop never dies on input: malformed packets become drop counts, socket errors
   are counted and the loop goes on.
3. ``handle.faults`` is applied to every packet sent and received, and to TCP push/pulls in
   both directions (blocked peers are refused, lossy peers lose exchanges).
4. Time is ``time.monotonic()`` (system-wide on Linux), so event logs of processes on one host
   line up; the event log gets one JSON line per membership change.
"""

from __future__ import annotations

import json
import logging
import os
import random
import socket as _socket
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import IO, Any

import trio

from . import wire
from .config import SwimConfig
from .faults import Faults
from .framing import FrameError, recv_frame, send_frame
from .machine import SwimMachine
from .members import Member
from .outputs import Output, SwimStatistics, SyncRequest

__all__ = ["SwimHandle", "open_swim", "parse_seed"]

log = logging.getLogger(__name__)

Seed = tuple[str, int] | str


def parse_seed(seed: Seed) -> tuple[str, int]:
    """``("h", 7946)`` or ``"h:7946"`` -> ``("h", 7946)``; ValueError otherwise."""
    if isinstance(seed, str):
        host, sep, port = seed.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"seed {seed!r} is not host:port")
        return host.strip("[]"), int(port)
    return str(seed[0]), int(seed[1])


class SwimHandle:
    """A running member: its view of the cluster, its statistics and its fault injection."""

    def __init__(
        self,
        machine: SwimMachine,
        sock: trio.socket.SocketType,
        nursery: trio.Nursery,
        event_log: IO[str] | None,
        rng: random.Random,
    ) -> None:
        self.machine = machine
        self.config = machine.config
        self.faults = Faults()
        self._sock = sock
        self._nursery = nursery
        self._log = event_log
        self._rng = rng
        self._wake = trio.Event()
        self._changed = trio.Event()
        self._send_q, self._send_r = trio.open_memory_channel[tuple[bytes, tuple[str, int]]](4096)
        self._syncing: set[tuple[str, int]] = set()
        self._lags: deque[float] = deque(maxlen=500)

    # ---- the public surface ---------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self.machine.node_id

    @property
    def host(self) -> str:
        return self.machine.me.host

    @property
    def port(self) -> int:
        """The bound UDP port (the node's runtime TCP port has the same number)."""
        return self.machine.me.port

    def members(self) -> list[Member]:
        """Every known member, self included, sorted by id."""
        return self.machine.members()

    def leader_id(self) -> int | None:
        """The lowest id not declared dead or left."""
        return self.machine.leader_id()

    def statistics(self) -> SwimStatistics:
        m = self.machine
        lags = self._lags
        return SwimStatistics.build(
            m.counters,
            node_id=m.node_id,
            up=m.table.up_count,
            total=len(m.table),
            incarnation=m.me.incarnation,
            health=m.awareness.score,
            loop_lag=lags[-1] if lags else 0.0,
            loop_lag_max=max(lags) if lags else 0.0,
        )

    async def leave(self) -> None:
        """Leave gracefully: gossip the departure for ``leave_propagate_time`` seconds."""
        self._process(self.machine.leave(time.monotonic()))
        await trio.sleep(self.config.leave_propagate_time)

    async def wait_members(self, predicate: Callable[[list[Member]], bool]) -> list[Member]:
        """Wait until ``predicate(members())`` holds (checked after every change)."""
        while True:
            ms = self.members()
            if predicate(ms):
                return ms
            await self._changed.wait()

    async def handle_tcp(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Answer one TCP request frame of kind ``"swim"`` (join, push/pull, induct)."""
        op = msg.get("op")
        if op == "induct":
            return {"k": "swim", "ok": True, "node_id": self.machine.next_free_id()}
        if op != "pushpull":
            self.machine.counters.drop("bad_tcp_op")
            return {"k": "swim", "ok": False, "error": f"unknown swim op {op!r:.40}"}
        peer = msg.get("from")
        if isinstance(peer, bool) or not isinstance(peer, int):
            peer = None
        if self.faults.verdict(peer, self._rng) is not None:
            self.machine.counters.drop("tcp_refused")
            return {"k": "swim", "ok": False, "error": "refused by fault injection"}
        try:
            entries = wire.decode_state_untrusted(msg.get("state"))
        except wire.BadMessage as exc:
            self.machine.counters.drop(exc.reason)
            return {"k": "swim", "ok": False, "error": str(exc)}
        await trio.sleep(self.faults.delay(peer))
        reply = wire.encode_state(self.machine.local_state())
        self._process(self.machine.merge_state(entries, time.monotonic(), peer))
        return {"k": "swim", "ok": True, "from": self.node_id, "state": reply}

    # ---- carrying out the machine's output ------------------------------------------------

    def _process(self, out: Output, *, wake: bool = True) -> None:
        """Carry out a machine output; ``wake`` makes the tick loop recompute its deadline."""
        for ev in out.events:
            if self._log is not None:
                self._log.write(json.dumps(ev.as_dict(wall=time.time())) + "\n")
        if out.events:
            self._changed.set()
            self._changed = trio.Event()
        for dg in out.datagrams:
            dest = dg.dest if dg.dest is not None else self.machine.table.id_at(*dg.addr)
            self._send_nowait(dg.data, dg.addr, dest)
        for req in out.syncs:
            key = (req.host, req.port)
            if key not in self._syncing:
                self._syncing.add(key)
                self._nursery.start_soon(self._pushpull, req)
        if wake:
            self._wake.set()

    def _send_nowait(self, data: bytes, addr: tuple[str, int], dest: int | None) -> None:
        why = self.faults.verdict(dest, self._rng)
        if why is not None:
            self.machine.counters.drop(f"{why}_out")
            return
        delay = self.faults.delay(dest)
        if delay > 0:
            self._nursery.start_soon(self._send_later, delay, data, addr)
            return
        try:
            self._send_q.send_nowait((data, addr))
        except trio.WouldBlock:
            self.machine.counters.drop("send_queue_full")

    async def _send_later(self, delay: float, data: bytes, addr: tuple[str, int]) -> None:
        await trio.sleep(delay)
        try:
            self._send_q.send_nowait((data, addr))
        except trio.WouldBlock:
            self.machine.counters.drop("send_queue_full")

    async def _pushpull(self, req: SyncRequest) -> None:
        try:
            await self._pushpull_once(req)
        finally:
            self._syncing.discard((req.host, req.port))

    async def _pushpull_once(self, req: SyncRequest) -> None:
        counters = self.machine.counters
        if self.faults.verdict(req.dest, self._rng) is not None:
            counters.drop("tcp_faulted")
            return
        request = {
            "k": "swim",
            "op": "pushpull",
            "join": req.join,
            "from": self.node_id,
            "state": wire.encode_state(self.machine.local_state()),
        }
        reply: Any = None
        with trio.move_on_after(self.config.tcp_timeout):
            try:
                await trio.sleep(self.faults.delay(req.dest))
                stream = await trio.open_tcp_stream(req.host, req.port)
                async with stream:
                    await send_frame(stream, request)
                    reply = await recv_frame(stream, self.config.max_frame_bytes)
            except (OSError, FrameError, trio.BrokenResourceError) as exc:
                log.debug("node %s: push/pull to %s:%s: %s", self.node_id, req.host, req.port, exc)
        if not isinstance(reply, dict) or reply.get("ok") is not True:
            counters.drop("pushpull_failed")
            return
        peer = reply.get("from")
        if isinstance(peer, bool) or not isinstance(peer, int):
            peer = None
        try:
            entries = wire.decode_state_untrusted(reply.get("state"))
        except wire.BadMessage as exc:
            counters.drop(exc.reason)
            return
        self._process(self.machine.merge_state(entries, time.monotonic(), peer))

    # ---- tasks ----------------------------------------------------------------------------

    async def _recv_loop(self) -> None:
        counters = self.machine.counters
        cap = max(self.config.max_packet_bytes, 1) + 1
        while True:
            try:
                data, addr = await self._sock.recvfrom(65536)
            except OSError as exc:  # e.g. ICMP errors surfacing on some platforms
                counters.drop(f"recv_error_{exc.errno}")
                continue
            if len(data) >= cap:
                counters.drop("oversize")
                continue
            src = (str(addr[0]), int(addr[1]))
            peer = self.machine.table.id_at(*src)
            why = self.faults.verdict(peer, self._rng)
            if why is not None:
                counters.drop(f"{why}_in")
                continue
            delay = self.faults.delay(peer)
            if delay > 0:
                self._nursery.start_soon(self._receive_later, delay, data, src)
            else:
                self._process(self.machine.receive(data, src, time.monotonic()))

    async def _receive_later(self, delay: float, data: bytes, src: tuple[str, int]) -> None:
        await trio.sleep(delay)
        self._process(self.machine.receive(data, src, time.monotonic()))

    async def _send_loop(self) -> None:
        async for data, addr in self._send_r:
            try:
                await self._sock.sendto(data, addr)
            except OSError as exc:
                self.machine.counters.drop(f"send_error_{exc.errno}")

    async def _tick_loop(self) -> None:
        while True:
            wait = self.machine.next_deadline() - time.monotonic()
            if wait > 0:
                with trio.move_on_after(min(wait, 1.0)):
                    await self._wake.wait()
            self._wake = trio.Event()
            # The tick's own output must not wake this loop again (it would spin).
            self._process(self.machine.tick(time.monotonic()), wake=False)

    async def _lag_loop(self) -> None:
        # Ten samples a second: how late a 10 ms sleep wakes is the direct view of starvation.
        while True:
            t0 = time.monotonic()
            await trio.sleep(0.01)
            self._lags.append(max(0.0, time.monotonic() - t0 - 0.01))
            await trio.sleep(0.09)


async def _induct(seeds: Sequence[tuple[str, int]], timeout: float) -> int:
    for host, port in seeds:
        with trio.move_on_after(timeout):
            try:
                stream = await trio.open_tcp_stream(host, port)
                async with stream:
                    await send_frame(stream, {"k": "swim", "op": "induct"})
                    reply = await recv_frame(stream, 1 << 16)
            except (OSError, FrameError, trio.BrokenResourceError):
                continue
            if isinstance(reply, dict) and reply.get("ok") is True:
                nid = reply.get("node_id")
                if isinstance(nid, int) and not isinstance(nid, bool) and 0 <= nid < 1 << 31:
                    return nid
    raise ConnectionError(f"no seed of {list(seeds)} answered the induct request")


@asynccontextmanager
async def open_swim(
    config: SwimConfig,
    *,
    node_id: int | None,
    host: str,
    port: int,
    seeds: Sequence[Seed] = (),
    event_log: str | os.PathLike[str] | None = None,
    rng: random.Random | None = None,
    induct: bool = False,
) -> AsyncIterator[SwimHandle]:
    """Run one SWIM member on UDP ``host:port`` (0 picks a free port) until the block exits.

    ``seeds`` are ``(host, port)`` pairs or ``"host:port"`` strings of members to join through
    (TCP push/pull on the same port numbers). ``node_id=None`` with ``induct=True`` asks the
    seeds for the next free id first. The handle is yielded once the socket is bound; joining
    goes on in the background and is retried every ``rejoin_interval``.
    """
    seed_addrs = [parse_seed(s) for s in seeds]
    rng = rng or random.Random()
    family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
    sock = trio.socket.socket(family, _socket.SOCK_DGRAM)
    with sock:
        try:
            sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_RCVBUF, 1 << 21)
        except OSError:
            pass
        await sock.bind((host, port))
        bound_port = int(sock.getsockname()[1])
        if node_id is None:
            if not induct:
                raise ValueError("node_id=None needs induct=True (and seeds to ask)")
            node_id = await _induct(seed_addrs, config.tcp_timeout)
        machine = SwimMachine(
            config,
            node_id,
            host,
            bound_port,
            rng=rng,
            now=time.monotonic(),
            seeds=seed_addrs,
        )
        log_file: IO[str] | None = None
        if event_log is not None:
            # Opened off the loop; each event is then one small line-buffered write.
            path = os.fspath(event_log)
            log_file = await trio.to_thread.run_sync(
                lambda: open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
            )
        try:
            async with trio.open_nursery() as nursery:
                handle = SwimHandle(machine, sock, nursery, log_file, rng)
                nursery.start_soon(handle._recv_loop)
                nursery.start_soon(handle._send_loop)
                nursery.start_soon(handle._tick_loop)
                nursery.start_soon(handle._lag_loop)
                handle._process(machine.join(time.monotonic()))
                log.info("node %s: swim bound on %s:%s", node_id, host, bound_port)
                yield handle
                nursery.cancel_scope.cancel()
        finally:
            if log_file is not None:
                log_file.close()
