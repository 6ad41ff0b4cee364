"""The ``Backend`` of ``open_cluster(mode="sim")``: swim's SimNetwork in virtual time.

Rules:
1. Nothing here reads a clock or global randomness: the network is seeded, time moves only
   when ``advance`` is called (a 60 s wait costs what its events cost), so the same calls
   with the same seed give the same events, one for one.
2. Every call yields to trio once (``checkpoint``), so a sim test is still a trio test that
   can be cancelled, and moves virtual time only as the caller asks.
3. The cluster joins through its seeds as real nodes do up to ``sim.JOIN_LIMIT`` nodes, else
   starts converged (``sim`` rule 1); ``t0`` is the first moment every node lists every node
   alive.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

import swim

from .backend import view_name
from .sim import JOIN_LIMIT, JOIN_TIMEOUT, SimFailed

__all__ = ["SimBackend"]


class SimBackend:
    """A simulated cluster (see the module docstring); build it with ``start``."""

    mode = "sim"
    directory: Path | None = None  # nothing on disk

    def __init__(self, net: swim.SimNetwork) -> None:
        self.net = net
        self.launched = 0.0
        self.t0 = net.now

    @classmethod
    async def start(cls, n: int, config: swim.SwimConfig, seed: int) -> SimBackend:
        """``n`` simulated nodes, converged (rule 3); ``SimFailed`` if they never converge."""
        join = n <= JOIN_LIMIT
        net = swim.SimNetwork(n, config, seed=seed, bootstrap=not join)
        if join and not net.until(lambda: _converged(net), timeout=JOIN_TIMEOUT, step=0.05):
            raise SimFailed(f"{n} simulated nodes did not converge within {JOIN_TIMEOUT:g}s")
        await trio.lowlevel.checkpoint()
        return cls(net)

    def now(self) -> float:
        return self.net.now

    async def advance(self, seconds: float) -> None:
        self.net.run_for(max(0.0, seconds))
        await trio.lowlevel.checkpoint()

    async def views(self, observers: Sequence[int]) -> dict[int, dict[int, str] | None]:
        await trio.lowlevel.checkpoint()
        out: dict[int, dict[int, str] | None] = {}
        for o in observers:
            row = {}
            for m in self.net.members(o):
                name = view_name(m.state.value)
                if name is not None:
                    row[m.node_id] = name
            out[o] = row
        return out

    async def events(self) -> list[dict[str, Any]]:
        await trio.lowlevel.checkpoint()
        return list(self.net.events)

    async def prepare(self, kind: str, i: int) -> None:
        await trio.lowlevel.checkpoint()  # nothing to read: the events are all here

    async def kill(self, i: int) -> None:
        self.net.kill(i)
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

    async def add(self) -> int:
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

    def dashboard_url(self, i: int) -> str | None:
        return None  # the simulation has no dashboards

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()  # nothing outlives the network object


def _converged(net: swim.SimNetwork) -> bool:
    ids = net.live_ids()
    return all(net.state(i, j) == "alive" for i in ids for j in ids)
