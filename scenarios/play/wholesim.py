"""The ``Backend`` of whole nodes in the simulator: ``cluster.sim``'s cluster in virtual time.

Rules:
1. The run's clock must be a ``cluster.sim.VirtualClock`` (``trio.run(main,
   clock=VirtualClock())``, or the pytest fixture ``sim_clock``): time moves when every task
   waits, straight to the next deadline; ``advance_to`` is a sleep on that clock. Otherwise
   ``start`` refuses with one line saying so.
2. Each node is a whole node (runtime, modules, node RPC, SWIM, its dashboard app served in
   memory): ``http`` and the arrays reach the apps through ``transport`` (an httpx
   transport), ``dashboard_url`` names them as real nodes' URLs.
3. The same seed and the same calls give the same events, one for one
   (``cluster.sim.virtualtime`` rule 3).
4. Refused with one line (``ClusterError``), never faked: ``clock`` (one clock runs every
   node) and ``add`` (the hostfile is the cluster's at the start).
5. ``kill`` is SIGKILL; ``stop`` a graceful leave; ``pause`` freezes the node's network (it
   reads and sends nothing until resumed; its own timers run on); ``disk`` goes to the node's
   RPC as ``rt_cluster disk`` sends it.
6. The nodes run in a system task of the run, not in the caller's task: a cluster opened in
   one task (a test) and closed in another (its fixture's teardown) is still closed whole. A
   node's task that raises ends the cluster; the next ``advance_to`` raises ``ClusterError``
   naming it.
7. A heal reaches a paused node when it is resumed (as a heal's frame waits in a stopped
   process's socket): its disk faults end then, not before.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from cluster.local import ClusterError
from cluster.sim import VirtualClock, WholeCluster, open_whole_cluster

from ..judge.trace import view_name
from .backend import HttpAnswer

__all__ = ["WholeSimBackend"]

JOIN_TIMEOUT = 60.0  # virtual seconds for the whole nodes to list each other alive
POLL = 0.05  # virtual seconds between two looks at the views while joining


class WholeSimBackend:
    """Whole nodes in virtual time (see the module docstring); build it with ``start``."""

    mode = "sim"
    directory: Path | None = None
    boots: dict[int, list[int]] | None = None
    restart_stops = False

    def __init__(self, cluster: WholeCluster, host: _Host) -> None:
        self.cluster = cluster
        self.transport = cluster.transport()
        self._host = host
        self.launched = 0.0
        self.t0 = 0.0
        self._now = 0.0
        self._heal_on_resume: set[int] = set()  # paused at a heal (rule 7)

    @classmethod
    async def start(cls, n: int, seed: int, swim: dict[str, Any]) -> WholeSimBackend:
        """``n`` whole nodes, joined (rules 1 and 6); ``ClusterError`` when they do not
        converge."""
        if not isinstance(trio.lowlevel.current_clock(), VirtualClock):
            raise ClusterError(
                "whole nodes in the simulator run in virtual time: run trio with "
                "trio.run(main, clock=cluster.sim.VirtualClock()) (in pytest: take the "
                "sim_clock fixture)"
            )
        host = _Host()
        trio.lowlevel.spawn_system_task(host.run, n, seed, swim)
        await host.ready.wait()
        if host.cluster is None:
            raise ClusterError(f"the whole simulated nodes did not start: {host.error!r}")
        backend = cls(host.cluster, host)
        backend.launched = trio.current_time()
        with trio.move_on_after(JOIN_TIMEOUT):
            while not backend._converged():
                await trio.sleep(POLL)
            backend.t0 = trio.current_time()
            return backend
        await host.close()
        raise ClusterError(f"{n} whole simulated nodes did not converge in {JOIN_TIMEOUT:g} s")

    def _converged(self) -> bool:
        n = len(self.cluster.nodes)
        views = [self.cluster.views(i) for i in range(n)]
        return all(v is not None and all(v.get(j) == "alive" for j in range(n)) for v in views)

    def now(self) -> float:
        try:
            self._now = trio.current_time()
        except RuntimeError:  # asked after the run (a failed test's report): where it ended
            pass
        return self._now

    async def advance_to(self, t: float) -> None:
        with trio.move_on_at(t):
            await self._host.ended.wait()  # a node's task raised: say so now (rule 6)
        self._host.raise_error()

    async def views(self, observers: Sequence[int]) -> dict[int, dict[int, str] | None]:
        await trio.lowlevel.checkpoint()
        return self.views_nowait(observers)

    def views_nowait(self, observers: Sequence[int]) -> dict[int, dict[int, str] | None]:
        out: dict[int, dict[int, str] | None] = {}
        for o in observers:
            view = self.cluster.views(o)
            out[o] = None if view is None else {j: _view(s) for j, s in view.items()}
        return out

    async def leader(self, observers: Sequence[int]) -> int | None:
        await trio.lowlevel.checkpoint()
        for i in observers:
            if self.cluster.up(i):
                return self.cluster.node(i).swim.leader_id()
        return None

    def forwards(self) -> list[dict[str, Any]]:
        """Every call a node made to a peer (``WholeCluster.forwards``): ``forward_bounded``."""
        return self.cluster.forwards()

    async def events(self) -> list[dict[str, Any]]:
        await trio.lowlevel.checkpoint()
        return self.cluster.events()

    @asynccontextmanager
    async def watching(self) -> AsyncIterator[None]:
        yield  # every event is kept in the members' histories

    def collection(self, t0: float) -> dict[str, Any] | None:
        return None

    async def prepare(self, kind: str, i: int) -> None:
        await trio.lowlevel.checkpoint()

    async def kill(self, i: int) -> None:
        self.cluster.kill(i)
        await trio.lowlevel.checkpoint()

    async def stop(self, i: int) -> None:
        await self.cluster.stop(i)

    async def pause(self, i: int) -> None:
        self.cluster.pause(i)
        await trio.lowlevel.checkpoint()

    async def resume(self, i: int) -> None:
        self.cluster.resume(i)
        await trio.lowlevel.checkpoint()
        if i in self._heal_on_resume and self.cluster.up(i):  # rule 7
            self._heal_on_resume.discard(i)
            await self.cluster.faults(i, "heal")

    async def restart(self, i: int) -> None:
        await self.cluster.restart(i)

    async def add(self, induct: bool = False) -> int:
        await trio.lowlevel.checkpoint()
        raise ClusterError("add: whole simulated nodes are the cluster's at the start")

    async def partition(self, groups: Sequence[Sequence[int]]) -> None:
        self.cluster.net.partition(groups)
        await trio.lowlevel.checkpoint()

    async def heal(self) -> None:
        self.cluster.net.heal()
        for i in range(len(self.cluster.nodes)):  # as rt_cluster heal: disk faults too
            if self.cluster.up(i) and i in self.cluster.net.frozen:
                self._heal_on_resume.add(i)  # rule 7
            elif self.cluster.up(i):
                await self.cluster.faults(i, "heal")

    async def loss(self, percent: float, nodes: Sequence[int]) -> None:
        for i in nodes:
            self.cluster.net.loss(i, percent)
        await trio.lowlevel.checkpoint()

    async def delay(self, ms: float, nodes: Sequence[int]) -> None:
        for i in nodes:
            self.cluster.net.delay(i, ms)
        await trio.lowlevel.checkpoint()

    async def cut(self, src: Sequence[int], dst: Sequence[int]) -> None:
        for i in src:
            for j in dst:
                self.cluster.net.cut(i, j)
        await trio.lowlevel.checkpoint()

    async def clock(self, i: int, offset: float, rate: float) -> None:
        await trio.lowlevel.checkpoint()
        raise ClusterError(
            f"clock {i}: one clock runs every whole simulated node; clock faults need the "
            "membership simulator (whole=False) or real processes"
        )

    async def disk(self, i: int, pool: str, latency_ms: float, errors: float, full: bool) -> None:
        await self.cluster.faults(
            i, "disk", pool=pool, latency_ms=latency_ms, errors=errors, full=full
        )

    async def http(self, i: int, method: str, path: str, timeout: float) -> HttpAnswer | None:
        t0 = trio.current_time()
        try:
            status, _ = await self.cluster.request(i, method, path, timeout=timeout)
        except (LookupError, TimeoutError) as exc:
            return None, trio.current_time() - t0, str(exc)
        return status, trio.current_time() - t0, ""

    def dashboard_url(self, i: int) -> str | None:
        return self.cluster.dashboard_url(i) if self.cluster.up(i) else None

    async def aclose(self) -> None:
        await self._host.close()


class _Host:
    """Rule 6: the cluster's nursery, in a system task of the run, so whichever task closes
    the cluster (a pytest fixture's teardown, the test itself) closes it."""

    def __init__(self) -> None:
        self.cluster: WholeCluster | None = None
        self.error: BaseException | None = None
        self.ready = trio.Event()
        self.ended = trio.Event()
        self._scope = trio.CancelScope()

    async def run(self, n: int, seed: int, swim: dict[str, Any]) -> None:
        try:
            with self._scope:
                async with open_whole_cluster(n, seed=seed, swim=swim) as cluster:
                    self.cluster = cluster
                    self.ready.set()
                    await trio.sleep_forever()
        except BaseException as exc:  # kept for the cluster's user: a system task must not raise
            self.error = exc
        finally:
            self.ready.set()
            self.ended.set()

    def raise_error(self) -> None:
        if self.error is not None:
            raise ClusterError(f"a whole simulated node failed: {self.error!r}") from self.error

    async def close(self) -> None:
        self._scope.cancel()
        with trio.CancelScope(shield=True):
            await self.ended.wait()


_VIEWS: dict[str, str] = {}


def _view(state: str) -> str:
    if state not in _VIEWS:
        _VIEWS[state] = view_name(state) or state
    return _VIEWS[state]
