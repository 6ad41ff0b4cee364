"""The ``Backend`` of the simulated mode: swim's SimNetwork in virtual time.

Rules:
1. Nothing here reads a clock or global randomness: the network is seeded, time moves only
   when ``advance_to`` is called (a 60 s wait costs what its events cost), so the same calls
   with the same seed give the same events, one for one.
2. Every call yields to trio once (``checkpoint``), so a sim test is still a trio test that
   can be cancelled, and moves virtual time only as the caller asks; ``views_nowait`` (the
   views at hand, ``backend`` rule 6) is the one that does not.
3. Up to ``JOIN_LIMIT`` nodes the cluster joins through its seeds as real nodes do; the start
   (``t0``) is the first virtual moment every node lists every node alive. Above it the
   cluster starts converged (``SimNetwork(bootstrap=True)``: every node knows every other, one
   shared roster), because a join of N nodes costs N^2 table rows and events, hours at
   10,000; the start is then time 0. ``start="join"`` or ``"bootstrap"`` chooses either way
   at any size.
4. ``stop`` is a graceful leave; there are no dashboards, so ``http`` answers None; there are
   no disks, so ``disk`` raises ``ClusterError`` (``backend`` rule 4).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

import swim
from cluster.local import ClusterError

from ..judge.trace import view_name
from .backend import HttpAnswer

__all__ = ["JOIN_LIMIT", "JOIN_TIMEOUT", "STARTS", "SimBackend", "SimFailed"]

JOIN_TIMEOUT = 300.0  # virtual seconds allowed for the initial convergence
JOIN_LIMIT = 100  # rule 3: above this many nodes the simulated cluster starts converged
STARTS = ("auto", "join", "bootstrap")


class SimFailed(Exception):
    """The simulated cluster could not get to the start (it never converged)."""


class SimBackend:
    """A simulated cluster (see the module docstring); build it with ``start``."""

    mode = "sim"
    directory: Path | None = None  # nothing on disk
    restart_stops = False  # a restart replaces the machine at once
    transport: Any = None  # no dashboards

    def forwards(self) -> list[dict[str, Any]] | None:
        return None  # membership only: no node RPC

    def __init__(self, net: swim.SimNetwork) -> None:
        self.net = net
        self.launched = 0.0
        self.t0 = net.now
        self.boots: dict[int, list[int]] | None = net.boots  # filled in as machines are made

    @classmethod
    async def start(
        cls, n: int, config: swim.SwimConfig, seed: int, start: str = "auto"
    ) -> SimBackend:
        """``n`` simulated nodes, converged (rule 3); ``SimFailed`` if they never converge."""
        if start not in STARTS:
            raise ValueError(f"start must be auto, join or bootstrap, not {start!r}")
        join = start == "join" or (start == "auto" and n <= JOIN_LIMIT)
        net = swim.SimNetwork(n, config, seed=seed, bootstrap=not join)
        if join and not net.until(lambda: _converged(net), timeout=JOIN_TIMEOUT, step=0.05):
            raise SimFailed(f"{n} simulated nodes did not converge within {JOIN_TIMEOUT:g}s")
        await trio.lowlevel.checkpoint()
        return cls(net)

    def now(self) -> float:
        return self.net.now

    async def advance_to(self, t: float) -> None:
        self.net.run_until(t)
        await trio.lowlevel.checkpoint()

    async def views(self, observers: Sequence[int]) -> dict[int, dict[int, str] | None]:
        await trio.lowlevel.checkpoint()
        return self.views_nowait(observers)

    def views_nowait(self, observers: Sequence[int]) -> dict[int, dict[int, str] | None]:
        members = self.net.members
        return {o: {m.node_id: _view(m.state) for m in members(o)} for o in observers}

    async def leader(self, observers: Sequence[int]) -> int | None:
        await trio.lowlevel.checkpoint()
        live = set(self.net.live_ids())
        for i in observers:
            if i in live and (leader := self.net.leader(i)) is not None:
                return leader
        return None

    async def events(self) -> list[dict[str, Any]]:
        await trio.lowlevel.checkpoint()
        return list(self.net.events)

    @asynccontextmanager
    async def watching(self) -> AsyncIterator[None]:
        yield  # every event is here as it happens

    def collection(self, t0: float) -> dict[str, Any] | None:
        return None

    async def prepare(self, kind: str, i: int) -> None:
        await trio.lowlevel.checkpoint()  # nothing to read: the events are all here

    async def kill(self, i: int) -> None:
        self.net.kill(i)
        await trio.lowlevel.checkpoint()

    async def stop(self, i: int) -> None:
        self.net.leave(i)
        await trio.lowlevel.checkpoint()

    async def pause(self, i: int) -> None:
        self.net.pause(i)
        await trio.lowlevel.checkpoint()

    async def resume(self, i: int) -> None:
        self.net.resume(i)
        await trio.lowlevel.checkpoint()

    async def restart(self, i: int) -> None:
        self.net.restart(i)
        await trio.lowlevel.checkpoint()

    async def add(self, induct: bool = False) -> int:
        await trio.lowlevel.checkpoint()
        return self.net.add()

    async def partition(self, groups: Sequence[Sequence[int]]) -> None:
        self.net.partition(groups)
        await trio.lowlevel.checkpoint()

    async def heal(self) -> None:
        self.net.heal()
        await trio.lowlevel.checkpoint()

    async def loss(self, percent: float, nodes: Sequence[int]) -> None:
        for i in nodes:
            self.net.set_loss(i, percent)
        await trio.lowlevel.checkpoint()

    async def delay(self, ms: float, nodes: Sequence[int]) -> None:
        for i in nodes:
            self.net.set_delay(i, ms)
        await trio.lowlevel.checkpoint()

    async def cut(self, src: Sequence[int], dst: Sequence[int]) -> None:
        for i in src:
            self.net.cut(i, dst)
        await trio.lowlevel.checkpoint()

    async def clock(self, i: int, offset: float, rate: float) -> None:
        self.net.set_clock(i, offset, rate)
        await trio.lowlevel.checkpoint()

    async def disk(self, i: int, pool: str, latency_ms: float, errors: float, full: bool) -> None:
        await trio.lowlevel.checkpoint()
        raise ClusterError(
            f"disk {i} {pool}: the simulator runs no disks (disk faults need real node "
            "processes: real or netns mode)"
        )

    async def http(self, i: int, method: str, path: str, timeout: float) -> HttpAnswer | None:
        await trio.lowlevel.checkpoint()
        return None  # rule 4

    def dashboard_url(self, i: int) -> str | None:
        return None  # the simulation has no dashboards

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()  # nothing outlives the network object


_VIEWS = {state: view_name(state.value) or state.value for state in swim.MemberState}


def _view(state: swim.MemberState) -> str:
    """A member state in the API's words (``backend`` rule 2), looked up once per state."""
    return _VIEWS[state]


def _converged(net: swim.SimNetwork) -> bool:
    ids = net.live_ids()
    return all(net.state(i, j) == "alive" for i in ids for j in ids)
