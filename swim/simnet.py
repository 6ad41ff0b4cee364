"""SimNetwork: N SwimMachines on a deterministic, seeded network in virtual time.

Usage::

    net = SimNetwork(5, config=SwimConfig(), seed=0, loss=0.0, delay=(0.001, 0.005), dup=0.0)
    net.run_for(5.0)                 # advance virtual time by 5 s
    net.kill(3)
    net.until(lambda: all(net.state(i, 3) == "dead" for i in net.live_ids()), timeout=60)
    net.events[-1]   # {"mono", "wall", "observer", "subject", "old", "new", ..., "boot"}

Units: virtual time and ``delay`` in seconds; ``loss`` and ``dup`` in percent (0..100);
``set_delay(i, ms)`` in milliseconds (as ``SwimHandle.faults``).

Controls: ``kill(i)`` (crash: silent from now on), ``pause(i, dur=None)`` (a stopped process:
packets queue up and are handled on ``resume(i)``), ``restart(i)`` (a fresh machine with the same
id and address, a new boot nonce, joining through the seeds), ``add() -> id`` (``add(at=i)``:
at stopped node i's address, as a reused port), ``leave(i)`` (graceful: gossips its departure
for ``leave_propagate_time``, then stops), ``partition(groups)`` and ``heal()``,
``set_loss(i, pct)``, ``set_delay(i, ms)``, ``block(i, peers)``, ``cut(i, peers)`` (one way:
what i sends them), ``set_clock(i, offset, rate)`` (node i's clock, ``simclock``; a restart
keeps it). Views: ``members(i)``, ``leader(i)``, ``state(i, j)``, ``live_ids()``, ``now``,
``events`` (each names the subject's ``boot``), ``boots`` (each node's, in the order made),
``machine(i)``. Time: ``run_until(t)``, ``run_for(dt)``, ``until(pred, timeout)``.
Hostile input: ``inject(i, data, src)`` delivers raw bytes to node i as if from ``src``;
``inject_state(i, entries, peer)`` hands it a push/pull state as if from member ``peer``.
``add(config=...)`` starts a node with settings of its own (e.g. another keyring).

CPU: with ``cpu=(decoded, shed)`` (seconds per packet) a node works through its packets one
at a time (``simcpu``; packets lost to a full buffer in ``overflow``); ``cpu=None`` (the
default) makes work free. Links: partitions, faults, loss, duplication and delay are the link
model's (``simlink``); this module schedules.

Rules:
1. One seeded ``random.Random`` drives everything (the network and every machine), and ties in
   the event queue break by insertion order, so a run is a pure function of its arguments.
2. TCP push/pull is a reliable request and reply, each delayed like a packet, handing the state over
   as records (``simsync.SyncState``), not bytes (the codec has its own tests). It fails when the
   sides are partitioned, blocked, cut either way, killed or paused, or when one cannot open what
   the other seals. A UDP packet goes through each machine's door of our own format
   (``swim.rtsimdoor``), as on a real node: sealed ones as bytes, encoded, sealed, opened and
   decoded; the others as records (``Unsealed``, ``simnodes`` rule 5), counted and admitted by the
   size their bytes would have, with no encoding between two members (the codec has its own tests,
   and ``inject`` still hands a node raw bytes).
3. ``bootstrap=True`` starts every machine knowing every other (no join traffic, no events)
   from one shared ``Roster`` (``table`` rule 4): building n machines costs O(n), and a
   push/pull sends only the rows a table holds apart from the roster; ``False`` makes each
   machine join through the seeds, as real nodes do.
4. A run is guarded (``simrun``): the cyclic collector paused while events run, and a
   livelock (``STALL_EVENTS`` events at one instant) ends it with ``SimStalled``.
5. Seeds as a hostfile gives them, or the ``seeds`` named (``simnodes`` rule 2); the nodes,
   and how each is made, are ``simnodes``'.
6. While no partition stands and no node's faults were set since the last heal, a packet
   skips the link model's checks of faults: they would drop nothing and draw nothing from
   the rng, so the history is the same.
7. A node with a clock of its own (``simclock``) is handed its local time, and its ticks are
   scheduled at the true instants its deadlines fall due; its events keep ``mono`` on true
   virtual time (so traces line up) and carry its wall clock in ``wall``.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .config import SwimConfig
from .machine import SwimMachine
from .members import Member
from .messages import StateEntry
from .outputs import DROPPED, Output
from .simcpu import QUEUE_CAP, CpuModel, Packet
from .simlink import Links
from .simnodes import NodeMaker, SimNode, address
from .simrun import STALL_EVENTS, SimStalled, gc_paused, stalled
from .simsync import SyncState, keys_match

__all__ = ["SimNetwork", "SimStalled"]

_TICK, _PACKET, _SYNC, _REPLY, _RESUME, _STOP, _WORK = range(7)


class SimNetwork:
    """A deterministic virtual network of SWIM machines (see the module docstring)."""

    def __init__(
        self,
        n: int,
        config: SwimConfig | None = None,
        *,
        seed: int = 0,
        loss: float = 0.0,
        delay: tuple[float, float] = (0.001, 0.005),
        dup: float = 0.0,
        bootstrap: bool = True,
        seeds: Sequence[int] | None = None,
        record_events: bool = True,
        cpu: tuple[float, float] | None = None,
        records: bool = True,
    ) -> None:
        if n < 1:
            raise ValueError("a simulated network needs at least one node")
        self.config = config or SwimConfig()
        self.rng = random.Random(seed)
        self.links = Links(self.rng, loss, dup, delay)
        self.now = 0.0
        self.events: list[dict[str, Any]] = []
        self.record_events = record_events
        self.on_event: Callable[[dict[str, Any]], None] | None = None
        self.packets = 0
        self.cpu = None if cpu is None else CpuModel(*cpu)
        self.overflow: dict[int, int] = {} if self.cpu is None else self.cpu.overflow
        self._maker = NodeMaker(n, self.config, self.rng, seeds)
        self._maker.records = records  # False: every packet as bytes (simnodes rule 5)
        self.boots = self._maker.boots  # node id -> the boots of its machines, in order
        self._heap: list[tuple[float, int, int, int, int, Any]] = []
        self._seq = 0
        self._nodes: dict[int, SimNode] = {}
        self._addr: dict[tuple[str, int], int] = {}
        self._faults = False  # some node's faults were set since the last heal (rule 6)
        if bootstrap:
            for node in self._maker.bootstrap(n, self.now):  # rule 3
                self._add_node(node)
                self._schedule_tick(node)
        else:
            for i in range(n):
                self._add_node(self._maker.make(i, 0, self.now))
            for node in self._nodes.values():
                self._apply(node, node.machine.join(self.now))

    # ---- topology -------------------------------------------------------------------------

    @staticmethod
    def address(i: int) -> tuple[str, int]:
        return address(i)

    def _add_node(self, node: SimNode) -> SimNode:
        self._nodes[node.node_id] = node
        self._addr[node.machine.address] = node.node_id
        return node

    def ids(self) -> list[int]:
        return sorted(self._nodes)

    def live_ids(self) -> list[int]:
        """Nodes running (not killed, not left), paused ones included."""
        return [i for i in sorted(self._nodes) if self._nodes[i].running]

    def machine(self, i: int) -> SwimMachine:
        return self._nodes[i].machine

    def members(self, i: int) -> list[Member]:
        return self._nodes[i].machine.members()

    def leader(self, i: int) -> int | None:
        return self._nodes[i].machine.leader_id()

    def state(self, i: int, j: int) -> str | None:
        """What node i believes about node j (None if unknown)."""
        e = self._nodes[i].machine.table.get(j)
        return None if e is None else e.state.value

    # ---- controls -------------------------------------------------------------------------

    def kill(self, i: int) -> None:
        """Crash node i: it stops at once, silently."""
        self._nodes[i].running = False

    def pause(self, i: int, dur: float | None = None) -> None:
        """Freeze node i (no ticks; packets queue), for ``dur`` seconds or until ``resume``."""
        self._nodes[i].paused = True
        if dur is not None:
            self._push(self.now + dur, _RESUME, i, self._nodes[i].gen, None)

    def resume(self, i: int) -> None:
        node = self._nodes[i]
        if not node.paused:
            return
        node.paused = False
        queued, node.queued = node.queued, []
        for data, src in queued:
            if node.running:
                self._apply(node, node.deliver(data, src, node.local(self.now)))
        node.tick_at = float("inf")
        self._schedule_tick(node)

    def restart(self, i: int) -> None:
        """Replace node i by a fresh machine (same id and address, new boot) that joins; it
        keeps node i's faults and clock (a boot drawn from that clock)."""
        old = self._nodes[i]
        m = old.machine
        node = self._maker.make(i, old.gen + 1, self.now, m.config, m.address, clock=old.clock)
        node.faults = old.faults
        self._add_node(node)
        self._apply(node, node.machine.join(node.local(self.now)))

    def add(self, config: SwimConfig | None = None, at: int | None = None) -> int:
        """Start a new node with the next id (and ``config``, default the network's); it joins
        through the seeds. ``at``: it takes the address of that stopped node (a reused port).
        Returns its id."""
        addr = None
        if at is not None:
            if self._nodes[at].running:
                raise ValueError(f"node {at} still holds its address")
            addr = self._nodes[at].machine.address
        i = max(self._nodes) + 1
        if addr is None:
            self._maker.append_host(i)  # appended to the hostfile, as real nodes are
        node = self._add_node(self._maker.make(i, 0, self.now, config, addr))
        self._apply(node, node.machine.join(self.now))
        return i

    def leave(self, i: int) -> None:
        """Node i leaves gracefully, then stops after ``leave_propagate_time``."""
        node = self._nodes[i]
        self._apply(node, node.machine.leave(node.local(self.now)))
        self._push(self.now + self.config.leave_propagate_time, _STOP, i, node.gen, None)

    def partition(self, groups: Iterable[Iterable[int]]) -> None:
        """Split the network: traffic flows only inside a group (unlisted nodes: own group)."""
        self.links.partition(groups)

    def heal(self) -> None:
        """Remove the partition and every node's faults; every clock back to true time's pace
        and reading (a local time ahead stays ahead: ``simclock`` rule 1)."""
        self.links.heal()
        for node in self._nodes.values():
            node.faults.heal()
            if node.clock is not None:
                self.set_clock(node.node_id, 0.0, 1.0)
        self._faults = False

    def set_loss(self, i: int, pct: float) -> None:
        self._nodes[i].faults.set_loss(None, pct)
        self._faults = True

    def set_delay(self, i: int, ms: float) -> None:
        self._nodes[i].faults.set_delay(None, ms)
        self._faults = True

    def block(self, i: int, peers: Iterable[int]) -> None:
        self._nodes[i].faults.block(peers)
        self._faults = True

    def cut(self, i: int, peers: Iterable[int]) -> None:
        """Drop all node i sends to ``peers`` (one way; push/pulls fail either way)."""
        peers = [int(p) for p in peers]
        if i in peers:
            raise ValueError(f"a cut from node {i} to itself")
        self._nodes[i].faults.cut_to(peers)
        self._faults = True

    def set_clock(self, i: int, offset: float, rate: float) -> None:
        """Node i's wall clock reads true + ``offset`` s; its clock runs at ``rate``."""
        node = self._nodes[i]
        node.faults.set_clock(offset, rate)  # checks the ranges
        node.set_clock(self.now, offset, rate)
        node.tick_at = float("inf")  # its deadlines fall due at other true instants
        self._schedule_tick(node)

    def inject(self, i: int, data: bytes, src: tuple[str, int], delay: float = 0.0) -> None:
        """Deliver ``data`` to node i ``delay`` seconds from now, as if sent from ``src``."""
        node = self._nodes[i]
        self._push(self.now + delay, _PACKET, i, node.gen, (data, src))

    def inject_state(self, i: int, entries: Iterable[StateEntry], peer: int | None) -> None:
        """Merge ``entries`` into node i now, as a push/pull from ``peer`` would."""
        node = self._nodes[i]
        self._apply(node, node.machine.merge_state(entries, node.local(self.now), peer))

    # ---- time -----------------------------------------------------------------------------

    def run_until(self, t: float) -> None:
        """Process every event up to virtual time ``t`` (seconds)."""
        heap = self._heap
        same = 0
        with gc_paused():
            while heap and heap[0][0] <= t:
                when, _, kind, i, gen, payload = heapq.heappop(heap)
                same = same + 1 if when == self.now else 0
                if same > STALL_EVENTS:
                    raise stalled(when, i, kind)
                self.now = when
                node = self._nodes.get(i)
                if node is None or node.gen != gen or not node.running:
                    continue
                self._dispatch(node, kind, when, payload)
        self.now = max(self.now, t)

    def run_for(self, dt: float) -> None:
        self.run_until(self.now + dt)

    def until(self, pred: Callable[[], bool], timeout: float, step: float = 0.05) -> bool:
        """Run until ``pred()`` holds (checked every ``step`` s) or ``timeout`` s pass."""
        end = self.now + timeout
        while not pred():
            if self.now >= end:
                return False
            self.run_until(min(end, self.now + step))
        return True

    def _dispatch(self, node: SimNode, kind: int, when: float, payload: Any) -> None:
        m = node.machine
        now = when if node.clock is None else node.clock.local(when)  # rule 7
        if kind == _RESUME:
            self.resume(node.node_id)
        elif kind == _STOP:
            node.running = False
        elif node.paused:
            if kind == _PACKET and len(node.queued) < QUEUE_CAP:  # a paused node's socket buffer
                node.queued.append(payload)
        elif kind == _TICK:
            if when == node.tick_at:
                node.tick_at = float("inf")
                self._apply(node, m.tick(now))
        elif kind == _PACKET:
            if self.cpu is None:
                self._apply(node, node.deliver(payload[0], payload[1], now))
            else:
                self._enqueue(node, payload, when)
        elif kind == _WORK:
            self._work(node, when)
        elif kind == _SYNC:
            src_id, src_gen, state = payload
            reply = SyncState.of(m)
            self._merge(node, state, now, src_id)
            self._push(when + self._latency(), _REPLY, src_id, src_gen, (node.node_id, reply))
        elif kind == _REPLY:
            self._merge(node, payload[1], now, payload[0])

    def _merge(self, node: SimNode, state: SyncState, now: float, peer: int) -> None:
        """A push/pull state arrives, as records (rule 2), at the node's time ``now``."""
        entries = state.rows_for(node.machine.table)
        self._apply(node, node.machine.merge_state(entries, now, peer=peer))

    def _enqueue(self, node: SimNode, packet: Packet, when: float) -> None:
        """The cpu model: the packet waits its turn in the socket buffer."""
        assert self.cpu is not None
        start = self.cpu.arrive(node.node_id, node.worker, packet, when)
        if start is not None:
            self._push(start, _WORK, node.node_id, node.gen, None)

    def _work(self, node: SimNode, when: float) -> None:
        """Handle the oldest waiting packet; the next one after this one's cost."""
        assert self.cpu is not None
        data, src = node.worker.inbox.popleft()
        out = node.deliver(data, src, node.local(when))
        self._apply(node, out)
        nxt = self.cpu.done(node.worker, when, out is DROPPED)
        if nxt is not None:
            self._push(nxt, _WORK, node.node_id, node.gen, None)

    # ---- carrying out a machine's output --------------------------------------------------

    def _apply(self, node: SimNode, out: Output) -> None:
        if not (out.datagrams or out.events or out.syncs):  # most ticks and acks of acks
            self._schedule_tick(node)
            return
        i = node.node_id
        clock = node.clock
        for ev in out.events:
            if self.record_events or self.on_event is not None:
                d = {**ev.as_dict(), "boot": ev.boot}  # which instance of the subject
                if clock is not None:  # rule 7
                    d["mono"], d["wall"] = self.now, clock.wall(ev.mono)
                if self.record_events:
                    self.events.append(d)
                if self.on_event is not None:
                    self.on_event(d)
        quiet = not self._faults and self.links.groups is None  # rule 6
        for dg in out.datagrams:
            data = node.carry(dg)  # rule 2: records, or bytes sealed as a node would
            j = self._addr.get(dg.addr)
            if j is None:
                continue
            b = self._nodes.get(j)
            if (b is None or not b.running) if quiet else self._cut(i, j):
                continue
            assert b is not None
            self.packets += 1
            if self.links.lost():
                continue
            t = self.now + (self.links.latency() if quiet else self._latency(i, j))
            self._push(t, _PACKET, j, b.gen, (data, node.machine.address))
            if self.links.duplicated():
                t2 = self.now + (self.links.latency() if quiet else self._latency(i, j))
                self._push(t2, _PACKET, j, b.gen, (data, node.machine.address))
        for sync in out.syncs:
            j = self._addr.get((sync.host, sync.port))
            if j is None or self._cut(i, j, tcp=True):
                continue
            state = SyncState.of(node.machine)
            self._push(
                self.now + self._latency(i, j), _SYNC, j, self._nodes[j].gen, (i, node.gen, state)
            )
        self._schedule_tick(node)

    def _cut(self, i: int, j: int, tcp: bool = False) -> bool:
        """Is traffic from i to j dropped by a partition, a block, a crash or loss?"""
        a, b = self._nodes[i], self._nodes.get(j)
        if b is None or not b.running or (tcp and b.paused):
            return True
        if tcp and not keys_match(a.machine, b.machine):
            return True
        return self.links.cut(i, a.faults, j, b.faults, tcp)

    def _latency(self, i: int | None = None, j: int | None = None) -> float:
        if i is None or j is None:
            return self.links.latency()
        return self.links.latency((i, self._nodes[i].faults, j, self._nodes[j].faults))

    def _schedule_tick(self, node: SimNode) -> None:
        t = node.next_tick()  # rule 7
        if t < self.now:
            t = self.now
        if t < node.tick_at:  # inf never is
            node.tick_at = t
            self._seq += 1
            heapq.heappush(self._heap, (t, self._seq, _TICK, node.node_id, node.gen, None))

    def _push(self, t: float, kind: int, i: int, gen: int, payload: Any) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, kind, i, gen, payload))
