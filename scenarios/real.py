"""Run a scenario on real node processes: a throwaway local cluster on free ports.

Rules:
1. The cluster lives in ``<out>/cluster`` (logs and event logs stay there for inspection); every
   process is ended in a ``finally``, whatever happened.
2. Actions are stamped with ``time.monotonic()`` just before they take effect: the same clock
   the nodes stamp their event logs with, so one timeline holds both.
3. Steps run in order at their times; an HTTP step runs beside the timeline (it may wait
   seconds for its answer) and a ``pause`` with ``for`` schedules its own resume.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio
import yaml

from cluster.local import ClusterError, LocalCluster, launch, plan_cluster, save_record

from .spec import Scenario, Step
from .trace import Action, HttpResult, Trace

__all__ = ["http_request", "run_real"]

HTTP_TIMEOUT = 15.0


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


def read_events(path: str) -> list[str]:
    try:
        return Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return []


OnAction = Callable[[Action, float], None]


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
        self, scenario: Scenario, cluster: LocalCluster, on_action: OnAction | None = None
    ) -> None:
        self.scenario = scenario
        self.cluster = cluster
        self.actions = _Actions(on_action)
        self.http: list[HttpResult] = []
        self.lines: dict[str, list[str]] = {}  # event log path -> lines kept across restarts

    def keep_events(self, node_id: int) -> None:
        """Copy a node's event log before it restarts (in case the new process truncates it)."""
        path = self.cluster.record.node(node_id).events
        kept = self.lines.setdefault(path, [])
        seen = set(kept)
        kept.extend(line for line in read_events(path) if line not in seen)

    def events(self) -> list[dict[str, Any]]:
        out = []
        for rec in self.cluster.record.nodes:
            self.keep_events(rec.node_id)
        for lines in self.lines.values():
            for line in lines:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if isinstance(ev, dict) and {"mono", "observer", "subject", "new"} <= set(ev):
                    out.append(ev)
        return out

    async def leader(self) -> int:
        for rec in self.cluster.live_nodes():
            if self.cluster.state_of(rec) != "running":
                continue
            body = await self.cluster.topology(rec, timeout=2.0)
            if body is not None and body.get("leader_node_id") is not None:
                return int(body["leader_node_id"])
        raise ClusterError("no running node answered with a leader")

    async def target(self, step: Step) -> int:
        if step.target == "leader":
            return await self.leader()
        assert isinstance(step.target, int)
        return step.target

    async def apply(self, step: Step, nursery: trio.Nursery) -> None:
        c, kind, name = self.cluster, step.kind, step.name
        if kind in ("kill", "stop", "pause", "resume"):
            i = await self.target(step)
            t = time.monotonic()
            if kind == "kill":
                await c.kill(i)
            elif kind == "stop":
                await c.stop(i)
            elif kind == "pause":
                c.pause(i)
                if step.duration is not None:
                    nursery.start_soon(self.resume_later, i, t + step.duration, name)
            else:
                c.resume(i)
            self.actions.append(Action(t, kind, name, (i,)))
        elif kind == "restart":
            i = await self.target(step)
            if c.state_of(c.record.node(i)) != "gone":
                self.actions.append(Action(time.monotonic(), "stop", f"{name}:stop", (i,)))
                await c.stop(i)
            self.keep_events(i)
            t = time.monotonic()
            await c.start_node(i)
            self.actions.append(Action(t, kind, name, (i,)))
        elif kind == "add":
            ids = []
            t = time.monotonic()
            for _ in range(step.count):
                rec = await c.add(induct=step.induct)
                ids.append(rec.node_id)
            self.actions.append(Action(t, kind, name, tuple(ids)))
        elif kind == "partition":
            groups = step.partition_groups([n.node_id for n in c.record.nodes])
            t = time.monotonic()
            await c.partition(groups)
            self.actions.append(Action(t, kind, name, groups=groups))
        elif kind == "heal":
            t = time.monotonic()
            await c.heal()
            self.actions.append(Action(t, kind, name))
        elif kind in ("loss", "delay"):
            if isinstance(step.target, int):
                ids = [step.target]
            else:
                ids = [n.node_id for n in c.live_nodes()]
            t = time.monotonic()
            for i in ids:
                await c.faults(c.record.node(i), kind, value=step.value)
            self.actions.append(Action(t, kind, name, tuple(ids), value=step.value))
        else:
            assert isinstance(step.target, int)
            self.actions.append(Action(time.monotonic(), "http", name, (step.target,)))
            nursery.start_soon(self.request, step)

    async def resume_later(self, node: int, when: float, name: str) -> None:
        await trio.sleep(max(0.0, when - time.monotonic()))
        t = time.monotonic()
        self.cluster.resume(node)
        self.actions.append(Action(t, "resume", f"{name}:resume", (node,)))

    async def request(self, step: Step) -> None:
        assert isinstance(step.target, int)
        rec = self.cluster.record.node(step.target)
        url = rec.dashboard
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
    say: Callable[[str], None] | None = None,
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
    run = _RealRun(scenario, cluster, on_action)
    swim_cfg = scenario.swim
    try:
        launched = time.monotonic()
        if say is not None:
            say(f"launching {scenario.nodes} node processes in {directory}")
        await launch(
            cluster, wait=True, timeout=60.0 + 2.0 * scenario.nodes, on_spawned=save_record
        )
        t0 = run.actions.t0 = time.monotonic()
        if say is not None:
            say(f"converged after {t0 - launched:.1f} s; steps start now")
        async with trio.open_nursery() as nursery:
            for step in scenario.steps:
                await trio.sleep_until(_trio_time(t0 + step.at))
                await run.apply(step, nursery)
            if say is not None:
                say(f"steps done; watching until +{scenario.duration:g} s")
            await trio.sleep_until(_trio_time(t0 + scenario.duration))
            nursery.cancel_scope.cancel()
        end = time.monotonic()
        if say is not None:
            say("stopping the cluster")
    finally:
        with trio.CancelScope(shield=True):
            try:
                await cluster.down(grace=5.0)
            finally:
                save_record(cluster.record)
    return Trace(
        mode="real",
        t0=t0,
        end=end,
        initial=tuple(range(scenario.nodes)),
        events=run.events(),
        actions=list(run.actions),
        http=run.http,
        launched=launched,
        probe_interval=float(swim_cfg.get("probe_interval", 1.0)),
    )


def _trio_time(mono: float) -> float:
    """A ``time.monotonic()`` deadline on trio's clock."""
    return trio.current_time() + (mono - time.monotonic())
