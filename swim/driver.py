"""The one trio driver: a SwimMachine over a real UDP socket, plus TCP join and push/pull.

``open_swim(...)`` binds the UDP socket, starts the tasks that feed the machine (receive,
timers, sending, loop-lag probe, TCP push/pulls) in its own nursery, and yields a
``SwimHandle``. The TCP *listener* belongs to the node (cluster/node/rpc.py): it hands frames of
kind ``"swim"`` to ``await handle.handle_tcp(msg)``; ``swim.testing.serve_tcp_for`` does the
same for tests and the benchmark. The frames themselves are built and read in ``exchange``.

Rules:
1. The machine is only ever called from synchronous code between checkpoints, so no lock is
   needed and no task sees a half-applied change (STYLE rule 2).
2. The receive loop never dies on input: malformed packets become drop counts, socket errors
   are counted and the loop goes on.
3. ``handle.faults`` is applied to every packet sent and received, and to TCP push/pulls in
   both directions (blocked peers are refused, lossy peers lose exchanges). A one-way cut
   (``faults.cut``) drops every packet this member sends to the peer (counted ``cut_out``);
   what the peer sends still arrives. A push/pull needs both directions, so one with a peer
   this member cuts fails whoever starts it: one it would start is refused
   (``tcp_faulted``), one the peer starts is answered with a refusal (``tcp_refused`` here,
   a failed push/pull there). That is all a member can know: the cut of a peer that cuts *this*
   member is the peer's. On one host (``rt_cluster``'s loopback mode) each member applies
   its own cut, so both ends of a push/pull between the two fail all the same; in netns
   mode the cut is a route in the cutting member's namespace, and a connection from the
   other side fails because its SYN-ACK (or answer) never comes back.
4. Bytes are the door's (``wireformat``): the member's wire format decodes every packet in,
   encodes every datagram out, and runs every push/pull; with a keyring it seals and opens
   them (``swim.rtsimdoor``: our format, ``swim.memberlist``: memberlist's).
5. A packet moves the member's timer (``timer``: its rules) to the machine's next deadline;
   a packet the machine refused before decoding (``DROPPED``) costs no look at all: under a
   flood, shed packets stay cheap, and a start-up's storm of join rumors does not tick the
   machine once a packet.
6. Time is ``trio.current_time()``, so a ``trio.testing.MockClock`` drives the member. Every
   membership change is numbered into the handle's ``History`` ring (``events``, ``since``)
   and, with an event log, written as one JSON line. Both carry ``mono``, trio's time moved
   onto ``time.monotonic()`` (system-wide on Linux) by the offset measured when the handle is
   made (under a ``swim.clock.ProcessClock``, measured at each record: its time may run at
   another rate), so histories and logs of processes on one host line up, and ``wall``
   (epoch s: the node's own wall clock, ``swim.clock.wall_time``, which may be set off true).
   ``set_clock`` changes a node's clock: its pace, its wall clock and the machine's wall
   offset (boots) at once.
7. At rest a member wakes only when its machine has something due or a packet arrives
   (``timer`` rule 1). The loop lag (``statistics()``) is the timer's (``timer`` rule 3).
   A loop found running more than a probe timeout late is counted (``slow_ticks``): the
   member's own slowness, told apart from its peers'.
8. There is always a door, the ``wire_format``'s (``swim.rtsimdoor.Rtsim()`` by default;
   ``swim.memberlist.Memberlist``: memberlist's protocol, as Serf speaks it): every packet in
   and out, every push/pull, every ``"swim"`` frame (``handle_tcp``) and every stream the
   node's listener hands over (``handle_stream``) goes through it; the machine is the same.
   A push/pull fails the same way for every format (``wireformat`` rule 2), counted by the
   ``BadMessage`` reason or as ``tcp_failed``. Faults apply to the door's exchanges too: one
   from a blocked member is refused, and one that does not say who sends it (memberlist's
   push/pull) is refused while any member is blocked here.
9. A packet goes out at once from the code that made it when the socket takes it, else
   through the send queue (``sockets.Sender``): at rest most of a member's task switches.
10. The node's own periodic jobs may ride on the member's timer (``sleep_near``, ``timer``
   rule 4).
11. Packets before timeouts: a datagram read is handled at once (``sockets.Receiver``), and a
   tick first takes every datagram already waiting, so an ack that came before a probe's
   deadline but waited behind a busy loop ends the probe instead of failing it.
"""

from __future__ import annotations

import logging
import os
import random
import socket as stdsocket
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio

from .clock import process_clock, wall_time
from .config import SwimConfig
from .exchange import Seed, parse_seed
from .faults import Faults
from .history import History, HistoryPage
from .machine import SwimMachine
from .members import Member
from .messages import BadMessage, StateEntry
from .outputs import DROPPED, Output, SwimStatistics, SyncRequest
from .rtsimdoor import Rtsim
from .sockets import EventLog, Receiver, Sender, open_event_log, open_udp, resolve_node_id
from .timer import MemberTimer
from .wireformat import Door, WireFormat

__all__ = ["SwimHandle", "open_swim"]

log = logging.getLogger(__name__)


class SwimHandle:
    """A running member: its view of the cluster, its statistics and its fault injection."""

    def __init__(
        self,
        machine: SwimMachine,
        sock: trio.socket.SocketType,
        nursery: trio.Nursery,
        event_log: EventLog | None,
        rng: random.Random,
        door: Door,
        raw: stdsocket.socket | None = None,
    ) -> None:
        self.machine = machine
        self.door = door  # the member's wire format (rule 8)
        self.config = machine.config
        self.faults = Faults()
        self._sock = sock
        self._sender = Sender(sock, raw, machine.counters.drop)  # rule 9
        self._receiver = Receiver(sock, raw, self._arrived, machine.counters.drop)  # rule 11
        self._timer = MemberTimer(machine.next_deadline, self._tick, self._late)
        self._nursery = nursery
        self._log = event_log
        self._rng = rng
        self._changed = trio.Event()
        self._syncing: set[tuple[str, int]] = set()
        self._history = History()
        self._link = _Link(self)
        # Fixed once: under trio's own clock both run at the same rate; under a MockClock,
        # ``mono`` then follows virtual time. A ProcessClock is asked at each record (rule 6).
        self._mono_offset = time.monotonic() - trio.current_time()
        clock = process_clock()
        if clock is not None:  # the clock the node was started with (a restart keeps it)
            self.faults.set_clock(clock.offset, clock.rate)

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
        lag, lag_max = self._timer.lag()
        return SwimStatistics.build(
            m.counters,
            node_id=m.node_id,
            up=m.table.up_count,
            total=len(m.table),
            incarnation=m.me.incarnation,
            health=m.awareness.score,
            loop_lag=lag,
            loop_lag_max=lag_max,
        )

    def events(self, after: int = 0, limit: int = 500) -> HistoryPage:
        """This member's table changes with ``seq > after``, oldest first, at most ``limit``
        (``swim.History.page``: ``(events, next, dropped)``)."""
        return self._history.page(after, limit)

    def since(self, member_id: int) -> float | None:
        """Wall time (epoch s) of the last change of ``member_id`` this member saw."""
        return self._history.since(member_id)

    def counters(self) -> dict[str, int]:
        """Headline counts: ``received``, ``dropped_rate``, ``dropped_auth``,
        ``dropped_malformed``, ``refused_incarnation``, ``refused_new_member``,
        ``refused_address``, ``epochs`` (also in ``statistics()``)."""
        return self.machine.counters.summary()

    def set_clock(self, offset: float, rate: float) -> None:
        """Set this node's clock (rule 6): its wall clock reads true + ``offset`` s and it runs
        at ``rate`` times real speed. ValueError out of range (``swim.Faults.set_clock``) or
        when the member does not run under a ``swim.clock.ProcessClock`` (an embedded member):
        then nothing changed."""
        clock = process_clock()
        if clock is None:
            raise ValueError("this member's clock cannot be set: its trio run has no ProcessClock")
        self.faults.set_clock(offset, rate)
        clock.set(offset, rate)
        self.machine.set_wall_offset(clock.wall() - trio.current_time())
        self._timer.move()  # its deadlines now come at another pace

    def heal(self) -> None:
        """Remove every injected fault and give the node back the host's clock (offset 0,
        rate 1) when it runs under a ``ProcessClock``."""
        self.faults.heal()
        if process_clock() is not None:
            self.set_clock(0.0, 1.0)

    async def leave(self) -> None:
        """Leave gracefully: gossip the departure for ``leave_propagate_time`` seconds."""
        self._process(self.machine.leave(trio.current_time()))
        await trio.sleep(self.config.leave_propagate_time)

    async def wait_members(self, predicate: Callable[[list[Member]], bool]) -> list[Member]:
        """Wait until ``predicate(members())`` holds (checked after every change)."""
        while True:
            ms = self.members()
            if predicate(ms):
                return ms
            await self._changed.wait()

    async def sleep_near(self, deadline: float, slack: float) -> None:
        """Sleep until ``deadline`` (trio time), or return with this member's first timer
        tick from ``slack`` seconds before it (rule 10): a periodic job that does not need
        its exact time shares the member's wake-ups instead of waking the process."""
        await self._timer.sleep_near(deadline, slack)

    def describe(self, member_id: int) -> dict[str, Any] | None:
        """A member's memberlist ``name``, ``tags`` and whether it is an rtsim node; None
        when this member speaks our own protocol (ids are the names) or does not know it."""
        return self.door.describe(member_id)

    async def handle_stream(self, conn: trio.SocketStream, first: bytes) -> None:
        """Answer one stream of the door's format whose first bytes are ``first``."""
        await self.door.serve(conn, first, self._link)

    async def handle_tcp(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Answer one TCP request frame of kind ``"swim"`` (join, push/pull, induct)."""
        return await self.door.answer(msg, self._link)

    # ---- carrying out the machine's output ------------------------------------------------

    def _start(self) -> None:
        for task in (self._receiver.run, self._sender.run, self._timer.serve):
            self._nursery.start_soon(task)
        self._process(self.machine.join(trio.current_time()))

    def _process(self, out: Output, *, wake: bool = True) -> None:
        """Carry out a machine output; ``wake`` moves the timer's deadline (rule 5)."""
        if out.events:
            clock = process_clock()
            mono_offset = self._mono_offset if clock is None else clock.host_offset()
            entries = self._history.record(out.events, wall=wall_time(), mono_offset=mono_offset)
            if self._log is not None:
                self._log.write(entries)
            self._changed.set()
            self._changed = trio.Event()
        for dg in out.datagrams:
            dest = dg.dest if dg.dest is not None else self.machine.table.id_at(*dg.addr)
            delay = self._admit(dest, "out")
            data = self.door.send(dg)  # encoded and counted as sent, whatever faults do
            if delay is not None and data is not None:
                self._after(delay, self._sender.send_nowait, data, dg.addr)
        for req in out.syncs:
            key = (req.host, req.port)
            if key not in self._syncing:
                self._syncing.add(key)
                self._nursery.start_soon(self._pushpull, req)
        if wake:
            self._timer.move()

    def _admit(self, peer: int | None, way: str) -> float | None:
        """Faults on one packet to/from ``peer``: None if dropped (counted), else its delay (s)."""
        faults = self.faults
        why = faults.outbound(peer, self._rng) if way == "out" else faults.verdict(peer, self._rng)
        if why is not None:
            self.machine.counters.drop(f"{why}_{way}")
            return None
        return self.faults.delay(peer)

    def _after(self, delay: float, fn: Callable[..., None], *args: Any) -> None:
        """``fn(*args)`` now, or ``delay`` seconds from now in a task of its own."""
        if delay > 0:
            self._nursery.start_soon(_call_after, delay, fn, *args)
        else:
            fn(*args)

    def _receive(self, data: bytes, src: tuple[str, int]) -> None:
        out = self.door.receive(data, src, trio.current_time())
        self._process(out, wake=out is not DROPPED)

    async def _pushpull(self, req: SyncRequest) -> None:
        """One push/pull exchange with ``req``'s member (at most one per address at a time)."""
        try:
            if self.faults.outbound(req.dest, self._rng) is not None:  # rule 3
                self.machine.counters.drop("tcp_faulted")
                return
            with trio.fail_after(self.config.tcp_timeout):
                await trio.sleep(self.faults.delay(req.dest))
                sender, entries = await self.door.pushpull(req)
        except BadMessage as exc:
            self.machine.counters.drop(exc.reason)
        except (OSError, trio.TooSlowError, trio.BrokenResourceError) as exc:
            self.machine.counters.drop("tcp_failed")
            log.debug("push/pull with %s:%s: %s", req.host, req.port, exc)
        else:
            self._process(self.machine.merge_state(entries, trio.current_time(), sender))
        finally:
            self._syncing.discard((req.host, req.port))

    # ---- tasks ----------------------------------------------------------------------------

    def _arrived(self, data: bytes, addr: Any) -> None:
        """One datagram from the socket: size and faults, then the machine (now or delayed)."""
        counters = self.machine.counters
        if len(data) > self.machine.intake.max_bytes:
            counters.arrived += 1
            counters.drop("oversize")
            return
        src = (str(addr[0]), int(addr[1]))
        delay = self._admit(self.machine.table.id_at(*src), "in")
        if delay is None:
            counters.arrived += 1  # dropped by fault injection before the machine saw it
        else:
            self._after(delay, self._receive, data, src)

    def _late(self, lag: float) -> None:
        """Rule 7: the loop ran ``lag`` seconds past a deadline."""
        if lag > self.config.probe_timeout:
            self.machine.counters.slow_ticks += 1

    def _tick(self, now: float) -> None:
        """The timer's tick: the datagrams already waiting first (rule 11), then the machine."""
        self._receiver.take_waiting()
        # The tick's own output must not move the timer's deadline (it would spin).
        self._process(self.machine.tick(now), wake=False)


async def _call_after(delay: float, fn: Callable[..., None], *args: Any) -> None:
    await trio.sleep(delay)
    fn(*args)


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
    advertise: str = "",
    wire_format: WireFormat | None = None,
) -> AsyncIterator[SwimHandle]:
    """Run one SWIM member on UDP ``host:port`` (0 picks a free port) until the block exits.

    Peers are told ``advertise`` as this member's address ("": ``host``), for a member bound
    to a wildcard or behind an address translation.

    ``seeds`` are ``(host, port)`` pairs or ``"host:port"`` strings of members to join through
    (TCP push/pull on the same port numbers). ``node_id=None`` with ``induct=True`` asks the
    seeds for the next free id first. The handle is yielded once the socket is bound; joining
    goes on in the background and is retried every ``rejoin_interval``.

    With a ``wire_format`` (``swim.memberlist.Memberlist(name)``) the member speaks that
    format instead of ours (``swim.rtsimdoor.Rtsim()``: rule 8); it needs a ``node_id`` (no
    induct).
    """
    seed_addrs = [parse_seed(s) for s in seeds]
    rng = rng or random.Random()
    me = advertise or host
    if wire_format is None:
        wire_format = Rtsim()
    elif node_id is None or induct:
        raise ValueError("a member speaking another wire format needs a node id (no induct)")
    machine_config = wire_format.machine_config(config, me)
    async with open_udp(host, port) as (sock, raw):
        bound_port = int(sock.getsockname()[1])
        node_id = await resolve_node_id(node_id, induct, seed_addrs, config)
        now = trio.current_time()
        machine = SwimMachine(
            machine_config,
            node_id,
            me,
            bound_port,
            rng=rng,
            now=now,
            seeds=seed_addrs,
            wall_offset=wall_time() - now,  # boots are ordered by the (node's) wall clock
            incarnation=wire_format.first_incarnation,
            read_limit=wire_format.read_limit(config),
        )
        async with open_event_log(event_log) as events, trio.open_nursery() as nursery:
            door = wire_format.open_door(machine, config)
            handle = SwimHandle(machine, sock, nursery, events, rng, door, raw)
            handle._start()
            log.info("node %s: swim bound on %s:%s, told as %s", node_id, host, bound_port, me)
            yield handle
            nursery.cancel_scope.cancel()


class _Link:
    """What the door may ask of the handle while it answers a peer (``wireformat.DoorLink``)."""

    __slots__ = ("_handle",)

    def __init__(self, handle: SwimHandle) -> None:
        self._handle = handle

    def merge(self, entries: list[StateEntry], peer: int | None) -> None:
        h = self._handle
        h._process(h.machine.merge_state(entries, trio.current_time(), peer))

    def refused(self, peer: int | None) -> bool:
        h = self._handle
        return h.faults.is_cut(peer) or h.faults.verdict(peer, h._rng) is not None  # rule 3

    def any_blocked(self) -> bool:
        faults = self._handle.faults
        return bool(faults.blocked or faults.cut)  # a cut peer may be the one (rule 3)

    def delay(self, peer: int | None) -> float:
        return self._handle.faults.delay(peer)
