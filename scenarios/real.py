"""Run a scenario on real node processes: a throwaway local cluster on free ports (``run_real``),
or any running cluster (``play``, which ``attach`` uses for ``--hostfile``).

Rules:
1. The throwaway cluster lives in ``<out>/cluster`` (logs and event logs stay there for
   inspection); every process is ended in a ``finally``, whatever happened.
2. Actions are stamped with ``time.monotonic()`` just before they take effect: the same clock
   the nodes stamp their events with, so one timeline holds both.
3. Steps run in order at their times; an HTTP step runs beside the timeline (it may wait
   seconds for its answer) and a ``pause`` with ``for`` schedules its own resume.
4. Events are read from every node over HTTP (``collect``), never from files: in the
   background all along, once more just before a step pauses, stops, kills or restarts a
   node (so its events up to then are kept), and once more at the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import trio
import yaml

from cluster.local import ClusterError, LocalCluster, launch, plan_cluster, save_record

from .collect import EventCollector, open_collector
from .nodes import ClusterNodes, Nodes
from .spec import Scenario, Step
from .storage import StorageRun
from .trace import Action, HttpResult, Trace

__all__ = ["OnAction", "Played", "Say", "http_request", "play", "run_real"]

HTTP_TIMEOUT = 15.0
OnAction = Callable[[Action, float], None]
Say = Callable[[str], None]


async def http_request(
    host: str, port: int, method: str, path: str, timeout: float = HTTP_TIMEOUT
) -> tuple[int | None, float, str]:
    """One HTTP/1.1 request; (status or None, seconds to the status line, error text)."""
    t = time.monotonic()
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: application/json\r\n"
        "Connection: close\r\nContent-Length: 0\r\n\r\n"
    )
    buf = b""
    try:
        with trio.fail_after(timeout):
            stream = await trio.open_tcp_stream(host, port)
            async with stream:
                await stream.send_all(head.encode())
                while b"\r\n" not in buf:
                    chunk = await stream.receive_some(4096)
                    if not chunk:
                        break
                    buf += chunk
    except trio.TooSlowError:
        return None, time.monotonic() - t, f"no answer within {timeout:g}s"
    except (OSError, trio.BrokenResourceError) as exc:
        return None, time.monotonic() - t, f"connection failed: {exc}"
    elapsed = time.monotonic() - t
    parts = buf.split(b"\r\n", 1)[0].split()
    if len(parts) < 2 or not parts[1].isdigit():
        return None, elapsed, f"not an HTTP answer: {buf[:60]!r}"
    return int(parts[1]), elapsed, ""


class _Actions(list[Action]):
    """The actions of a run; each one is told to ``on_action`` as it is recorded."""

    def __init__(self, on_action: OnAction | None) -> None:
        super().__init__()
        self.on_action = on_action
        self.t0 = 0.0

    def append(self, a: Action) -> None:
        super().append(a)
        if self.on_action is not None:
            self.on_action(a, self.t0)


class _RealRun:
    def __init__(
        self,
        scenario: Scenario,
        nodes: Nodes,
        collector: EventCollector,
        on_action: OnAction | None = None,
    ) -> None:
        self.scenario = scenario
        self.nodes = nodes
        self.collector = collector
        self.actions = _Actions(on_action)
        self.http: list[HttpResult] = []

    def live(self) -> list[int]:
        return [i for i in self.nodes.ids() if self.nodes.state(i) != "gone"]

    async def leader(self) -> int:
        for i in self.live():
            if self.nodes.state(i) == "paused":
                continue
            body = await self.nodes.topology(i)
            if body is not None and body.get("leader_node_id") is not None:
                return int(body["leader_node_id"])
        raise ClusterError("no running node answered with a leader")

    async def target(self, step: Step) -> int:
        if step.target == "leader":
            return await self.leader()
        assert isinstance(step.target, int)
        return step.target

    async def apply(self, step: Step, nursery: trio.Nursery) -> None:
        kind = step.kind
        if kind in ("kill", "stop", "pause", "resume"):
            await self.signal(step, nursery)
        elif kind == "restart":
            await self.restart(step)
        elif kind == "add":
            await self.add(step)
        elif kind in ("partition", "heal", "loss", "delay"):
            await self.fault(step)
        else:
            assert isinstance(step.target, int)
            self.actions.append(Action(time.monotonic(), "http", step.name, (step.target,)))
            nursery.start_soon(self.request, step)

    async def signal(self, step: Step, nursery: trio.Nursery) -> None:
        """kill, stop, pause or resume one node; its events are read first (rule 4)."""
        nodes, kind = self.nodes, step.kind
        i = await self.target(step)
        if kind != "resume":
            await self.catch_up(i)
            self.collector.rest(i)  # no background read of a process that is going away
        t = time.monotonic()
        if kind == "kill":
            await nodes.kill(i)
        elif kind == "stop":
            await nodes.stop(i)
        elif kind == "pause":
            nodes.pause(i)
            if step.duration is not None:
                nursery.start_soon(self.resume_later, i, t + step.duration, step.name)
        else:
            nodes.resume(i)
            self.collector.follow(i, nodes.dashboard(i))
        self.actions.append(Action(t, kind, step.name, (i,)))

    async def catch_up(self, node: int) -> None:
        """Read the node's events before a step stops it; a paused node's were read before
        its pause (and it would not answer)."""
        if self.nodes.state(node) != "paused":
            await self.collector.catch_up(node)

    async def restart(self, step: Step) -> None:
        i = await self.target(step)
        if self.nodes.state(i) != "gone":
            await self.catch_up(i)
            self.collector.rest(i)
            self.actions.append(Action(time.monotonic(), "stop", f"{step.name}:stop", (i,)))
            await self.nodes.stop(i)
        t = time.monotonic()
        await self.nodes.start(i)
        self.actions.append(Action(t, "restart", step.name, (i,)))
        self.collector.follow(i, self.nodes.dashboard(i))

    async def add(self, step: Step) -> None:
        ids = []
        t = time.monotonic()
        for _ in range(step.count):
            i = await self.nodes.add(step.induct)
            self.collector.follow(i, self.nodes.dashboard(i))
            ids.append(i)
        self.actions.append(Action(t, "add", step.name, tuple(ids)))

    async def fault(self, step: Step) -> None:
        nodes, kind, name = self.nodes, step.kind, step.name
        if kind == "partition":
            groups = step.partition_groups(nodes.ids())
            t = time.monotonic()
            await nodes.partition(groups)
            self.actions.append(Action(t, kind, name, groups=groups))
        elif kind == "heal":
            t = time.monotonic()
            await nodes.heal()
            self.actions.append(Action(t, kind, name))
        else:
            ids = [step.target] if isinstance(step.target, int) else self.live()
            t = time.monotonic()
            for i in ids:
                await nodes.fault(i, kind, step.value)
            self.actions.append(Action(t, kind, name, tuple(ids), value=step.value))

    async def resume_later(self, node: int, when: float, name: str) -> None:
        await trio.sleep(max(0.0, when - time.monotonic()))
        t = time.monotonic()
        self.nodes.resume(node)
        self.collector.follow(node, self.nodes.dashboard(node))
        self.actions.append(Action(t, "resume", f"{name}:resume", (node,)))

    async def request(self, step: Step) -> None:
        assert isinstance(step.target, int)
        url = self.nodes.dashboard(step.target)
        t = time.monotonic()
        if not url:
            self.http.append(
                HttpResult(
                    step.name,
                    step.target,
                    step.method,
                    step.path,
                    t,
                    0.0,
                    None,
                    "the node serves no dashboard",
                )
            )
            return
        hostport = url.split("://", 1)[-1].rstrip("/")
        host, _, port = hostport.rpartition(":")
        limit = max(HTTP_TIMEOUT, step.expect.within[1] + 5) if step.expect else HTTP_TIMEOUT
        status, elapsed, error = await http_request(host, int(port), step.method, step.path, limit)
        self.http.append(
            HttpResult(step.name, step.target, step.method, step.path, t, elapsed, status, error)
        )


@dataclass(frozen=True, slots=True)
class Played:
    """What ``play`` saw: the start and end (``time.monotonic()``), the actions, the HTTP
    answers, the events read and how they were read (``collect``'s summary)."""

    t0: float
    end: float
    actions: tuple[Action, ...]
    http: tuple[HttpResult, ...]
    events: list[dict[str, Any]]
    collection: dict[str, Any]
    storage: dict[str, Any] | None = None  # the durability check (``storage`` rule 3)

    def trace(self, scenario: Scenario, initial: tuple[int, ...], launched: float) -> Trace:
        return Trace(
            mode="real",
            t0=self.t0,
            end=self.end,
            initial=initial,
            events=self.events,
            actions=list(self.actions),
            http=list(self.http),
            launched=launched,
            probe_interval=float(scenario.swim.get("probe_interval", 1.0)),
            collection=self.collection,
            storage=self.storage,
        )


async def play(
    scenario: Scenario, nodes: Nodes, *, on_action: OnAction | None = None, say: Say | None = None
) -> Played:
    """Play the steps of ``scenario`` on ``nodes`` from now on (the start), reading every
    node's events over HTTP (rule 4). ``ClusterError`` when a node serves no dashboard."""
    for i in nodes.ids():
        if nodes.state(i) != "gone" and not nodes.dashboard(i):
            raise ClusterError(f"node {i} serves no dashboard: its events cannot be read")
    storage = StorageRun(scenario.storage) if scenario.storage else None
    if storage is not None:
        try:
            await storage.set_up(nodes.dashboard)
        except (RuntimeError, httpx.HTTPError) as exc:
            raise ClusterError(f"the scenario's array could not be made: {exc}") from None
    async with open_collector() as collector:
        run = _RealRun(scenario, nodes, collector, on_action)
        for i in run.live():
            collector.follow(i, nodes.dashboard(i))
        t0 = run.actions.t0 = time.monotonic()
        async with trio.open_nursery() as nursery:
            if storage is not None:
                nursery.start_soon(storage.serve_writes, nodes.dashboard)
            for step in scenario.steps:
                await trio.sleep_until(_trio_time(t0 + step.at))
                await run.apply(step, nursery)
            if say is not None:
                say(f"steps done; watching until +{scenario.duration:g} s")
            await trio.sleep_until(_trio_time(t0 + scenario.duration))
            nursery.cancel_scope.cancel()
        end = time.monotonic()
        await collector.finish()
    checked = await storage.check(nodes.dashboard) if storage is not None else None
    return Played(
        t0,
        end,
        tuple(run.actions),
        tuple(run.http),
        collector.events(),
        collector.summary(t0),
        checked,
    )


def write_node_config(scenario: Scenario, out: Path) -> Path:
    """The node configuration file of a real run: the scenario's settings sections."""
    config = out / "node.yaml"
    settings = dict(scenario.settings)
    out.mkdir(parents=True, exist_ok=True)
    config.write_text(yaml.safe_dump(settings, sort_keys=False) if settings else "{}\n")
    return config


async def run_real(
    scenario: Scenario,
    out: Path,
    *,
    seed: int | None = None,
    on_action: OnAction | None = None,
    say: Say | None = None,
) -> Trace:
    """Play ``scenario`` on node processes under ``out/cluster``; the trace of the run.

    ``on_action`` hears each action as it is carried out; ``say`` gets the launch's lines."""
    directory = out / "cluster"
    config = write_node_config(scenario, out)
    record = plan_cluster(
        directory,
        scenario.name.replace(" ", "-")[:60] or "scenario",
        scenario.nodes,
        base_port=0,
        runtime_base_port=0,
        config=str(config),
    )
    cluster = LocalCluster(record)
    try:
        launched = time.monotonic()
        if say is not None:
            say(f"launching {scenario.nodes} node processes in {directory}")
        await launch(
            cluster, wait=True, timeout=60.0 + 2.0 * scenario.nodes, on_spawned=save_record
        )
        if say is not None:
            say(f"converged after {time.monotonic() - launched:.1f} s; steps start now")
        played = await play(scenario, ClusterNodes(cluster), on_action=on_action, say=say)
        if say is not None:
            say("stopping the cluster")
    finally:
        with trio.CancelScope(shield=True):
            try:
                await cluster.down(grace=5.0)
            finally:
                save_record(cluster.record)
    return played.trace(scenario, tuple(range(scenario.nodes)), launched)


def _trio_time(mono: float) -> float:
    """A ``time.monotonic()`` deadline on trio's clock."""
    return trio.current_time() + (mono - time.monotonic())
