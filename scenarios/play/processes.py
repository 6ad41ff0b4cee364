"""What every ``Backend`` of node processes shares (``realcluster.RealBackend``: a cluster
this host launched or an ``rt_cluster up`` one; ``attach.AttachedBackend``: a cluster named
only by its hostfile): the trace clock, views, the leader, events over HTTP, signals, faults
and HTTP steps. Each subclass says where a node is (``_ids``, ``_running``, ``_url``,
``_topology``, ``_fault``) and what it may start and end (``restart``, ``add``, ``aclose``).

Rules:
1. The trace clock is ``time.monotonic()``, the clock the nodes stamp their events with; an
   action is stamped before it takes effect (``chaos`` rule 3).
2. Views are each node's topology over its RPC (1 s each, all at once; a paused or dead node
   answers nothing). Events are read over ``GET /api/events`` when asked for, in the
   background while ``watching`` (a scenario's run), and from a node just before a kill,
   stop, pause or restart takes it away, so none is lost.
3. With Serf agents the nodes speak memberlist and the agents follow them as members
   N..N+M-1; views and events name every member by its number (``agents``); an
   agent has no events, no dashboard and no fault injection (``loss``, ``delay``, ``clock``,
   ``disk`` and a ``cut`` from it refuse it; a cut *to* an agent is a node's own). While
   ``watching``, every agent's view is looked at as well (``agents.AgentLooks``), first
   before the block begins, and its changes join the nodes' events.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import httpx
import trio

from cluster.local import AgentRecord, ClusterError

from . import agents
from .backend import HttpAnswer
from .collect import REQUEST_TIMEOUT, EventCollector
from .request import host_port, http_request

__all__ = ["ProcessBackend", "Signals", "new_client"]

ASK_TIMEOUT = 1.0  # seconds one node gets to answer for its view
LEADER_TIMEOUT = 2.0  # seconds one node gets to name its leader


class Signals(Protocol):
    """What a backend asks of the cluster its processes belong to, by node id
    (``cluster.local``'s ``LocalCluster`` and ``AttachedCluster`` both answer it)."""

    async def kill(self, node_id: int) -> None: ...
    async def stop(self, node_id: int) -> None: ...
    def pause(self, node_id: int) -> None: ...
    def resume(self, node_id: int) -> None: ...
    async def partition(self, groups: Sequence[Sequence[int]]) -> object: ...
    async def cut(self, src: Sequence[int], dst: Sequence[int]) -> object: ...
    async def clock(self, i: int, offset: float, rate: float) -> None: ...
    async def disk(
        self, i: int, pool: str, latency_ms: float, errors: float, full: bool
    ) -> None: ...
    async def heal(self) -> object: ...


class ProcessBackend:
    """Node processes, wherever they were started (see the module docstring)."""

    mode = "real"
    boots: dict[int, list[int]] | None = None  # the nodes' events name their boots
    restart_stops = True  # a running process leaves gracefully before its restart
    directory: Path | None = None
    transport: Any = None  # dashboards over the network

    def forwards(self) -> list[dict[str, Any]] | None:
        return None  # a node process does not report its calls

    def __init__(
        self,
        procs: Signals,
        client: httpx.AsyncClient,
        launched: float,
        t0: float,
        members: Sequence[AgentRecord] = (),
        numbers: Mapping[str, int] | None = None,
    ) -> None:
        self.procs = procs
        self.client = client
        self.collector = EventCollector(client)  # no nursery but while ``watching`` (rule 2)
        self.launched = launched
        self.t0 = t0
        self.agents = {a.index: a for a in members}  # rule 3
        self.numbers = dict(numbers or {})
        self.looks = agents.AgentLooks(members, self.numbers)
        for i in self._ids():
            self.collector.follow(i, self._url(i))

    # ---- where a node is: the subclass's ------------------------------------------------------

    def _ids(self) -> list[int]:
        raise NotImplementedError

    def _running(self, i: int) -> bool:
        raise NotImplementedError

    def _url(self, i: int) -> str:
        raise NotImplementedError

    async def _topology(self, i: int, timeout: float) -> dict[str, Any] | None:
        raise NotImplementedError

    async def _fault(self, i: int, kind: str, value: float) -> None:
        raise NotImplementedError

    async def restart(self, i: int) -> None:
        raise NotImplementedError

    async def add(self, induct: bool = False) -> int:
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError

    # ---- time, views and events -------------------------------------------------------------

    def now(self) -> float:
        return time.monotonic()

    async def advance_to(self, t: float) -> None:
        await trio.sleep_until(trio.current_time() + (t - time.monotonic()))

    def views_nowait(self, observers: Sequence[int]) -> dict[int, dict[int, str] | None]:
        raise trio.WouldBlock  # every view is a request (rule 2)

    async def views(self, observers: Sequence[int]) -> dict[int, dict[int, str] | None]:
        out: dict[int, dict[int, str] | None] = dict.fromkeys(observers)
        ids = set(self._ids())

        async def ask(i: int) -> None:
            if i in self.agents:
                out[i] = await agents.agent_view(self.agents[i], self.numbers)
                return
            body = await self._topology(i, ASK_TIMEOUT)
            if body is not None and self.agents:
                out[i] = agents.node_view(body, self.numbers)
            elif body is not None:
                out[i] = {
                    int(m["node_id"]): str(m["view"])
                    for m in body.get("nodes", ())
                    if isinstance(m, dict) and "view" in m
                }

        async with trio.open_nursery() as nursery:
            for i in observers:
                if (i in ids or i in self.agents) and self._running(i):
                    nursery.start_soon(ask, i)
        return out

    async def leader(self, observers: Sequence[int]) -> int | None:
        for i in observers:
            if i in self.agents:
                continue
            body = await self._topology(i, LEADER_TIMEOUT)
            if body is not None and body.get("leader_node_id") is not None:
                return int(body["leader_node_id"])
        return None

    async def events(self) -> list[dict[str, Any]]:
        await self.collector.finish()
        found = agents.renumber_events(self.collector.events(), list(self.agents.values()))
        return found + list(self.looks.found)

    def agent_names(self) -> dict[int, str]:
        """Every Serf agent's member number and name (rule 3)."""
        return {i: a.name for i, a in sorted(self.agents.items())}

    @asynccontextmanager
    async def watching(self) -> AsyncIterator[None]:
        """Read every node's events in the background while the block runs (rule 2);
        ``ClusterError`` when a running node serves no dashboard to read them from."""
        for i in self._ids():
            if self._running(i) and not self._url(i):
                raise ClusterError(f"node {i} serves no dashboard: its events cannot be read")
        if self.agents:
            await self.looks.look(self._running)
        async with trio.open_nursery() as nursery:
            self.collector.background(nursery)
            if self.agents:
                nursery.start_soon(self.looks.serve, self._running)
            try:
                yield
            finally:
                self.collector.background(None)
                nursery.cancel_scope.cancel()

    def collection(self, t0: float) -> dict[str, Any] | None:
        summary = self.collector.summary(t0)
        if self.agents:
            summary["agents"] = self.looks.summary()  # rule 3: the looks at every agent
        return summary

    # ---- faults -----------------------------------------------------------------------------

    async def prepare(self, kind: str, i: int) -> None:
        """Read node ``i``'s events before it goes away; then leave it alone (rule 2)."""
        if i in self.agents:
            return
        if self._running(i):
            await self.collector.catch_up(i)
        self.collector.rest(i)

    def _back(self, i: int) -> None:
        if i not in self.agents:
            self.collector.follow(i, self._url(i))

    async def kill(self, i: int) -> None:
        await self.procs.kill(i)

    async def stop(self, i: int) -> None:
        await self.procs.stop(i)

    async def pause(self, i: int) -> None:
        self.procs.pause(i)
        await trio.lowlevel.checkpoint()

    async def resume(self, i: int) -> None:
        self.procs.resume(i)
        self._back(i)
        await trio.lowlevel.checkpoint()

    async def partition(self, groups: Sequence[Sequence[int]]) -> None:
        await self.procs.partition(groups)

    async def cut(self, src: Sequence[int], dst: Sequence[int]) -> None:
        self._no_agents(src, "cut")  # a cut *to* an agent is a node's own fault: fine
        await self.procs.cut(src, dst)

    async def clock(self, i: int, offset: float, rate: float) -> None:
        self._no_agents([i], "clock")
        await self.procs.clock(i, offset, rate)

    async def disk(self, i: int, pool: str, latency_ms: float, errors: float, full: bool) -> None:
        self._no_agents([i], "disk")
        await self.procs.disk(i, pool, latency_ms, errors, full)

    async def heal(self) -> None:
        await self.procs.heal()

    async def loss(self, percent: float, nodes: Sequence[int]) -> None:
        self._no_agents(nodes, "loss")
        for i in nodes:
            await self._fault(i, "loss", percent)

    async def delay(self, ms: float, nodes: Sequence[int]) -> None:
        self._no_agents(nodes, "delay")
        for i in nodes:
            await self._fault(i, "delay", ms)

    def _no_agents(self, members: Sequence[int], what: str) -> None:
        """Rule 3: a Serf agent has no fault injection of its own."""
        named = [self.agents[i].name for i in members if i in self.agents]
        if named:
            raise ValueError(f"{what}: {', '.join(named)} are Serf agents, without fault injection")

    async def http(self, i: int, method: str, path: str, timeout: float) -> HttpAnswer | None:
        url = self.dashboard_url(i)
        if not url:
            return None, 0.0, "the node serves no dashboard"
        host, port = host_port(url)
        return await http_request(host, port, method, path, timeout)

    def dashboard_url(self, i: int) -> str | None:
        if i in self.agents:
            return None
        return self._url(i) or None


def new_client() -> httpx.AsyncClient:
    """The HTTP client of a backend's event reads."""
    return httpx.AsyncClient(timeout=httpx.Timeout(REQUEST_TIMEOUT), trust_env=False)
