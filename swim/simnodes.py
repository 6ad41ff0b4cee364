"""The simulated network's nodes: what one is, and how each is made (``simnet`` rules 3 and 6).

Rules:
1. Node i lives at ``address(i)`` (a 10.x.y.z address, port 7946) unless it took a stopped
   node's address; each node's machine speaks our own format through its own door
   (``rtsimdoor``): sealed packets as bytes, the others as records (``rtsimdoor`` rule 6).
2. Seeds as a hostfile gives them (``resync``): every node's address in id order, one node
   added appending its own, the same tuple shared by every machine made since; ``seeds``
   instead names the only nodes to join through.
3. A bootstrapped network shares one ``Roster`` (``table`` rule 4): each machine draws its
   rng and first boot from the network's rng in id order, so the build is linear in n.
4. Every machine's boot is recorded, per node id, in the order made (``boots``). A machine
   made under a node clock (``simclock``) lives by its local time and draws its boot from
   its wall clock.
5. A packet between two members without a keyring travels as its records (``Unsealed``: the
   messages and the bytes they weigh): ``carry`` counts it sent as the door's ``send`` would,
   ``deliver`` admits it by size and rate as the door's ``receive`` would, and no bytes are
   made or read between them. A member with a keyring reads the bytes ``send`` would have
   made; a sealed packet travels as bytes. ``records=False`` sends every packet as bytes
   (tests hold the two ways to the same history, counters and all).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from .config import SwimConfig
from .faults import Faults
from .machine import SwimMachine
from .members import MemberState
from .membership import ordered_boot
from .outputs import DROPPED, Datagram, Output
from .rtsimdoor import RtsimDoor
from .simclock import NodeClock
from .simcpu import Packet, Unsealed, Worker
from .table import Entry, Roster

__all__ = ["NodeMaker", "SimNode", "Unsealed", "address"]


def address(i: int) -> tuple[str, int]:
    return (f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}", 7946)


@dataclass(slots=True)
class SimNode:
    """One simulated member: its machine and door, its faults, and its place in the run."""

    node_id: int
    machine: SwimMachine
    gen: int
    door: RtsimDoor
    records: bool = True  # rule 5
    faults: Faults = field(default_factory=Faults)
    running: bool = True
    paused: bool = False
    queued: list[Packet] = field(default_factory=list)
    tick_at: float = float("inf")
    worker: Worker = field(default_factory=Worker)  # the cpu model's buffer
    clock: NodeClock | None = None  # its own clock, when set (``simclock`` rule 4)

    def local(self, now: float) -> float:
        """The time this node's machine lives by at true time ``now`` (``simclock``)."""
        c = self.clock
        return now if c is None else c.local(now)

    def next_tick(self) -> float:
        """The true time its machine's next deadline falls due (``simclock`` rule 3)."""
        t = self.machine.next_deadline()
        return t if self.clock is None else self.clock.true(t)

    def set_clock(self, now: float, offset: float, rate: float) -> None:
        """Its clock, from true time ``now``: the wall clock reads true + ``offset`` and the
        clock runs at ``rate`` (``simclock``; the caller reschedules its tick)."""
        if self.clock is None:
            self.clock = NodeClock(now)
        self.clock.set(now, offset, rate)
        self.machine.set_wall_offset(self.clock.wall_offset)

    def carry(self, dg: Datagram) -> Unsealed | bytes:
        """Rule 5: ``dg`` as records when this member seals nothing, else its bytes."""
        if not self.records or self.door.keyring is not None:
            return self.door.send(dg)
        self.machine.counters.sent(dg.kind, dg.size)
        return Unsealed(dg.messages, dg.size)

    def deliver(self, data: bytes | Unsealed, src: tuple[str, int], now: float) -> Output:
        """A packet into the node, as bytes through its door or as records (rule 5)."""
        if type(data) is not Unsealed:
            assert isinstance(data, bytes)
            return self.door.receive(data, src, now)
        m = self.machine
        if self.door.keyring is not None:  # it reads the plain bytes, which do not open
            return self.door.receive_records(data.messages, src, now)
        if not m.intake.admit_plain(data.size, src, now):
            return DROPPED
        return m.receive_messages(data.messages, src, now, data.size)


class NodeMaker:
    """Makes the machines of one simulated network (see the module docstring)."""

    def __init__(
        self, n: int, config: SwimConfig, rng: random.Random, seeds: Sequence[int] | None
    ) -> None:
        self.config = config
        self.rng = rng
        self._seed_ids = None if seeds is None else [s for s in seeds if 0 <= s < n] or [0]
        self._hostfile = tuple(address(i) for i in range(n))  # rule 2
        self.boots: dict[int, list[int]] = {}  # node id -> the boots of its machines (rule 4)
        self.records = True  # rule 5

    def bootstrap(self, n: int, now: float) -> list[SimNode]:
        """Rule 3: n machines that know each other from one shared roster."""
        rngs = [random.Random(self.rng.getrandbits(64)) for _ in range(n)]
        boots = [ordered_boot(now, r) for r in rngs]  # what each would draw first
        roster = Roster(
            Entry(i, *address(i), 0, MemberState.ALIVE, boots[i], now) for i in range(n)
        )
        return [self.make(i, 0, now, rng=rngs[i], boot=boots[i], roster=roster) for i in range(n)]

    def append_host(self, i: int) -> None:
        """A node added at a new address joins the hostfile, as real nodes are (rule 2)."""
        self._hostfile += (address(i),)

    def make(
        self,
        i: int,
        gen: int,
        now: float,
        config: SwimConfig | None = None,
        addr: tuple[str, int] | None = None,
        *,
        rng: random.Random | None = None,
        boot: int | None = None,
        roster: Roster | None = None,
        clock: NodeClock | None = None,
    ) -> SimNode:
        """Node i's machine made at true time ``now`` (rule 4: under ``clock`` if given)."""
        addr = addr or address(i)
        if self._seed_ids is not None:
            seeds: Sequence[tuple[str, int]] = [address(s) for s in self._seed_ids]
        else:
            seeds = self._hostfile
        m = SwimMachine(
            config or self.config,
            i,
            *addr,
            rng=rng or random.Random(self.rng.getrandbits(64)),
            now=now if clock is None else clock.local(now),
            seeds=seeds,
            boot=boot,
            roster=roster,
            wall_offset=0.0 if clock is None else clock.wall_offset,
        )
        self.boots.setdefault(i, []).append(m.boot)
        return SimNode(i, m, gen, RtsimDoor(m), self.records, clock=clock)
