"""N whole nodes in one process, on a simulated network, in virtual time (docs/testing.md).

    async with open_whole_cluster(4, seed=7) as c:   # inside trio.run(..., clock=VirtualClock())
        await c.sleep(5)
        c.kill(2)

Rules:
1. Node ``i`` is ``cluster.node.open_node`` itself: its runtime and modules, its node RPC
   server and client, its SWIM member, each on the run's ``SimNet`` (``on_host(i)``), at
   127.0.0.1 port ``BASE_PORT + i`` as in a loopback cluster, with the hostfile of the
   cluster. Its dashboard is the real app, served in memory (``request``): the HTTP server
   and its sockets are the one part of a node not simulated.
2. ``kill`` is SIGKILL: the network closes the node's sockets first (net rule 5), so nothing it
   does while its tasks are cancelled reaches anyone; ``stop`` ends it gracefully (it leaves);
   ``restart`` kills it if it runs, then starts a new one with the same settings (a new
   process: new runtime, new SWIM boot). ``pause``/``resume`` freeze its network (net rule 4).
3. The events of every node's SWIM member are kept from each instance's history when it
   ends, and read from the running ones on ``events()``: one list ordered by time, then
   observer, then the member's own order, the same in every run of a seed.
4. Nothing here runs a thread or touches a real socket: settings come from the arguments and
   the cluster's hostfile (no environment, no settings file). The nodes log through
   ``logging`` as any code of the process does: where the process sends its logs (pytest's
   capture, a configured handler), or, with none configured, nowhere (not Python's
   last-resort stderr: a search plays thousands of runs).
"""

from __future__ import annotations

import importlib
import logging
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from cluster.ground.settings import Settings, VizSettings, load_settings
from cluster.node import Node, open_node
from cluster.rpc import Faults, rpc_call
from cluster.runtime import RuntimeView

from .inmemoryhttp import InMemoryHttp
from .net import SimNet, on_host
from .virtualtime import VirtualClock, repeatable

__all__ = ["BASE_PORT", "NodeSlot", "WholeCluster", "open_whole_cluster"]

BASE_PORT = 9413
VIZ_BASE_PORT = 8080
QUIET_LOGGERS = ("cluster", "swim", "dashboard")  # rule 4
RPC_TIMEOUT = 10.0  # seconds for a fault request to a node's RPC
IN_MEMORY_DASHBOARD = "dashboard.serve:in_memory"  # by name: the node room imports no HTTP
Asgi = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


@dataclass(eq=False)
class NodeSlot:
    """One node's slot: the running instance (None when down) and what its past ones saw."""

    index: int
    settings: Settings
    node: Node | None = None
    asgi: Asgi | None = None
    scope: trio.CancelScope | None = None
    ended: trio.Event = field(default_factory=trio.Event)
    events: list[dict[str, Any]] = field(default_factory=list)  # of instances that ended
    forwards: list[dict[str, Any]] = field(default_factory=list)  # of instances that ended
    starts: int = 0
    requests: set[trio.CancelScope] = field(default_factory=set)  # HTTP it is answering


class WholeCluster:
    """Rules 1-4: the nodes, the network between them, and their faults."""

    def __init__(
        self,
        n: int,
        nursery: trio.Nursery,
        net: SimNet,
        directory: Path,
        seed: int,
        swim: Mapping[str, Any] | None = None,
    ) -> None:
        self.net = net
        self.seed = seed
        self._nursery = nursery
        hostfile = directory / "hostfile"
        hostfile.write_text("".join(f"127.0.0.1:{BASE_PORT + i}\n" for i in range(n)))
        self.nodes = [NodeSlot(i, _settings(i, hostfile, directory, swim or {})) for i in range(n)]

    # ---- life cycle (rule 2) -------------------------------------------------------------

    async def start(self, i: int) -> Node:
        """Start node ``i`` (a new instance) and return it once its sockets are bound."""
        slot = self.nodes[i]
        if slot.node is not None:
            raise RuntimeError(f"node {i} is running")
        slot.starts += 1
        slot.ended = trio.Event()
        node: Node = await self._nursery.start(self._run, slot)
        return node

    async def _run(self, slot: NodeSlot, task_status: trio.TaskStatus[Node]) -> None:
        serve = _in_memory_dashboard(slot)
        seed = self.seed * 1000 + slot.index * 7 + slot.starts
        ended, instance = slot.ended, None
        scope = trio.CancelScope()
        try:
            with scope, on_host(slot.index):
                slot.scope = scope
                async with open_node(slot.settings, seed=seed, dashboard=serve) as node:
                    instance = slot.node = node
                    task_status.started(node)
                    await node.stop_requested.wait()
            if instance is not None and not scope.cancelled_caught:
                slot.events.extend(_history(instance))  # a graceful stop: its leave is heard
                slot.forwards.extend(_forwards(instance, "stopped"))
        finally:
            if slot.scope is scope:  # a restart may already have the slot's next instance
                slot.node, slot.asgi, slot.scope = None, None, None
            ended.set()

    def kill(self, i: int) -> None:
        """SIGKILL (rule 2): its sockets closed, its tasks cancelled; no leave is heard, and
        what its member records while its tasks end (its own leave) is not its history."""
        slot = self.nodes[i]
        self.net.kill(i)
        if slot.node is not None:
            slot.events.extend(_history(slot.node))
            slot.forwards.extend(_forwards(slot.node, "killed"))
        if slot.scope is not None:
            slot.scope.cancel()
        for request in slot.requests:  # its HTTP answers end with it (``inmemoryhttp`` rule 4)
            request.cancel()
        slot.node, slot.asgi, slot.scope = None, None, None

    async def stop(self, i: int) -> None:
        """A graceful stop: the node leaves, then ends."""
        slot = self.nodes[i]
        if slot.node is not None:
            slot.node.request_stop()
            await slot.ended.wait()

    async def restart(self, i: int) -> Node:
        """Kill node ``i`` if it runs (and wait for its tasks to end), then start a new one."""
        ended = self.nodes[i].ended
        if self.nodes[i].node is not None:
            self.kill(i)
        await ended.wait()
        self.net.thaw(i)
        return await self.start(i)

    def pause(self, i: int) -> None:
        self.net.freeze(i)

    def resume(self, i: int) -> None:
        self.net.thaw(i)

    def up(self, i: int) -> bool:
        return self.nodes[i].node is not None

    # ---- what the nodes say --------------------------------------------------------------

    def node(self, i: int) -> Node:
        node = self.nodes[i].node
        if node is None:
            raise LookupError(f"node {i} is not running")
        return node

    def views(self, i: int) -> dict[int, str] | None:
        node = self.nodes[i].node
        if node is None:
            return None
        return {m.node_id: str(m.state.value) for m in node.swim.members()}

    def events(self) -> list[dict[str, Any]]:
        """Rule 3: every node's events, past instances and running ones."""
        found: list[dict[str, Any]] = []
        for slot in self.nodes:
            found.extend(slot.events)
            if slot.node is not None:
                found.extend(_history(slot.node))
        found.sort(key=lambda e: (e["mono"], e["observer"]))
        return found

    async def faults(self, i: int, action: str, **values: Any) -> Any:
        """A fault request to node ``i``'s own RPC (``cluster.rpc.Faults``: ``disk``, ``heal``
        ...), as ``rt_cluster`` sends it, from outside every node: its answer's body, or the
        RPC's errors (the node's refusal, ``PeerUnreachable`` when it is down)."""
        frame = Faults(action, **values)
        with on_host(None):
            return await rpc_call("127.0.0.1", BASE_PORT + i, frame, RPC_TIMEOUT)

    def transport(self) -> InMemoryHttp:
        """An httpx transport to every node's dashboard (``dashboard_url``), in memory."""
        return InMemoryHttp(self._app_of, self.net.wait_thawed, self._serving)

    @contextmanager
    def _serving(self, i: int) -> Iterator[trio.CancelScope]:
        """The scope node ``i`` answers one HTTP request in: its kill cancels it."""
        requests = self.nodes[i].requests
        with trio.CancelScope() as scope:
            requests.add(scope)
            try:
                yield scope
            finally:
                requests.discard(scope)

    def dashboard_url(self, i: int) -> str:
        return f"http://127.0.0.1:{VIZ_BASE_PORT + i}"

    def _app_of(self, port: int) -> tuple[int, Any]:
        i = port - VIZ_BASE_PORT
        if not 0 <= i < len(self.nodes):
            return i, None
        return i, self.nodes[i].asgi

    def forwards(self) -> list[dict[str, Any]]:
        """Rule 3 for the node RPC: every call a node made to a peer (``cluster.node.peers``
        rule 3), ended instances' too, each with its ``node``, by start; a call still open at a
        kill or a stop ends there, its outcome ``killed`` or ``stopped``."""
        found: list[dict[str, Any]] = []
        for slot in self.nodes:
            found.extend(slot.forwards)
            if slot.node is not None:
                found.extend(_forwards(slot.node, "open"))
        found.sort(key=lambda f: (f["start"], f["node"]))
        return found

    async def request(
        self,
        i: int,
        method: str,
        path: str,
        *,
        data: Mapping[str, str] | None = None,
        timeout: float = 10.0,
    ) -> tuple[int, Any]:
        """One HTTP request to node ``i``'s dashboard (its app, in memory: rule 1): the status
        and the JSON body (or the text when it is not JSON). A paused node answers once resumed
        (its server reads nothing before); ``TimeoutError`` when no answer came in ``timeout``
        seconds, ``LookupError`` when the node is down or is killed before it answers."""
        import httpx

        client = httpx.AsyncClient(transport=self.transport(), timeout=timeout)
        try:
            async with client:
                answer = await client.request(method, self.dashboard_url(i) + path, data=data)
        except (httpx.ConnectError, httpx.ReadError) as exc:  # down, or killed while answering
            raise LookupError(str(exc)) from None
        except httpx.TimeoutException:
            raise TimeoutError(
                f"node {i} did not answer {method} {path} in {timeout:g} s"
            ) from None
        try:
            return answer.status_code, answer.json()
        except ValueError:
            return answer.status_code, answer.text


def _settings(i: int, hostfile: Path, directory: Path, swim: Mapping[str, Any]) -> Settings:
    data = directory / f"node-{i}-data"
    data.mkdir(exist_ok=True)
    flags = {
        "host": "127.0.0.1",
        "port": BASE_PORT + i,
        "hostfile": str(hostfile),
        "viz": True,
        "viz_port": VIZ_BASE_PORT + i,
        "data_dir": str(data),
    }
    settings = load_settings("daemon", env={}, flags=flags)
    if swim:
        from dataclasses import replace

        settings = replace(settings, swim={**settings.swim, **swim})
    return settings


def _history(node: Node) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    after = 0
    while True:
        page = node.swim.events(after, 10_000)
        out.extend(entry.log_line() for entry in page.events)
        if not page.events:
            return out
        after = page.next


def _forwards(node: Node, open_as: str) -> list[dict[str, Any]]:
    """The node's calls to peers as records; one still open ends now as ``open_as`` (kept
    open, end None, when ``open_as`` is ``open``)."""
    now = trio.current_time()
    out = []
    for f in node.peers.forwards():
        end, outcome = f.end, f.outcome
        if end is None and open_as != "open":
            end, outcome = now, open_as
        out.append(
            {
                "node": node.node_id,
                "start": f.start,
                "end": end,
                "peer": f.peer,
                "what": f.what,
                "outcome": outcome,
            }
        )
    return out


def _in_memory_dashboard(slot: NodeSlot) -> Any:
    module, _, name = IN_MEMORY_DASHBOARD.partition(":")
    in_memory: Callable[[RuntimeView, VizSettings], AbstractAsyncContextManager[Asgi]]
    in_memory = getattr(importlib.import_module(module), name)

    async def serve(
        runtime: RuntimeView, viz: VizSettings, *, task_status: trio.TaskStatus[tuple[str, int]]
    ) -> None:
        async with in_memory(runtime, viz) as asgi:
            slot.asgi = asgi
            task_status.started((viz.bind, viz.port))
            await trio.sleep_forever()

    return serve


@asynccontextmanager
async def open_whole_cluster(
    n: int, *, seed: int = 0, swim: Mapping[str, Any] | None = None
) -> AsyncIterator[WholeCluster]:
    """N whole nodes started and bound (not yet converged); every one killed at the end.
    Runs inside a trio run whose clock is a ``VirtualClock``."""
    import random

    for name in QUIET_LOGGERS:  # rule 4: no last-resort stderr for the nodes' warnings
        if not any(isinstance(h, logging.NullHandler) for h in logging.getLogger(name).handlers):
            logging.getLogger(name).addHandler(logging.NullHandler())
    clock = trio.lowlevel.current_clock()
    if not isinstance(clock, VirtualClock):
        raise RuntimeError("open_whole_cluster runs inside trio.run(..., clock=VirtualClock())")
    with tempfile.TemporaryDirectory(prefix="rtsim-sim-") as tmp, repeatable(seed, clock):
        net = SimNet(random.Random(seed))
        with net.installed():
            async with trio.open_nursery() as nursery:
                cluster = WholeCluster(n, nursery, net, Path(tmp), seed, swim)
                for i in range(n):
                    await cluster.start(i)
                try:
                    yield cluster
                finally:
                    for i in range(n):
                        cluster.kill(i)
