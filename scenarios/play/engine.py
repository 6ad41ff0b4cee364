"""The one scenario engine: a scenario's steps played as calls on the ``Cluster`` every mode
shares (``chaos``), whatever backend runs it (``sim``, ``real``, ``attach``; explore plays
through ``sim``).

Rules:
1. Only this module maps a step kind to an action, each one call of ``Cluster``: ``stop`` a
   graceful leave, ``pause`` with ``for`` a pause that resumes itself, ``leader`` the node
   the first running node names, ``add`` N nodes as one action, a partition's ``rest`` the
   nodes there are at that step, ``loss`` and ``delay`` on ``all`` every node whose process
   is up (running or paused; a Serf agent has no fault injection), ``http`` a request beside
   the timeline.
2. Steps run in order at their times, ``t0 + at`` on the trace clock, ``t0`` the moment
   ``play`` begins; the run ends at ``t0 + duration``. The steps are played as written
   (``Cluster(strict=False)``): a file may resume a running node, as the network takes it.
3. While the steps run, every node's events are read in the background (``watching``), an
   HTTP step runs beside the timeline (it may wait seconds for its answer) and a scenario's
   array takes its writes; the array is checked at the end.
4. The trace is the cluster's own (``Cluster.trace``): the same actions the Python API records,
   with the events read at the end, how they were read, and the array's check.
5. A scenario's array (``arrayrun``, over HTTP) loads only where there is one to make: on
   real processes; the simulated network plays without an HTTP client loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

import trio

from cluster.local import ClusterError

from ..format.records import Scenario, Step
from ..judge.trace import Action, Trace
from .chaos import HTTP_TIMEOUT, Cluster

if TYPE_CHECKING:
    from .arrayrun import StorageRun

__all__ = ["OnAction", "Say", "play"]

OnAction = Callable[[Action, float], None]  # hears each action as it is carried out, with t0
Say = Callable[[str], None]


async def play(
    c: Cluster, scenario: Scenario, *, on_action: OnAction | None = None, say: Say | None = None
) -> Trace:
    """Play the steps of ``scenario`` on ``c`` from now on (the start); the trace (rule 4).
    ``ClusterError`` when the scenario's array cannot be made."""
    storage = await _storage(c, scenario)
    try:
        t0, end = await _steps(c, scenario, storage, on_action, say)
    except BaseExceptionGroup as group:
        leaf = _lone(group)
        if leaf is None:
            raise
        raise leaf from None  # the error itself, as a run with no task beside it raises it
    events = await c.backend.events()
    checked = await storage.check(c.dashboard_url) if storage is not None else None
    trace = c.trace(events, end)
    return replace(
        trace,
        t0=t0,
        collection=c.backend.collection(t0),
        storage=checked,
        forwards=c.backend.forwards(),
    )


async def _storage(c: Cluster, scenario: Scenario) -> StorageRun | None:
    """The scenario's array, made before the start; None without one, or without dashboards
    to make it through (the simulated network: rule 5)."""
    if scenario.storage is None or c.dashboard_url(scenario.storage.array) is None:
        return None
    import httpx  # rule 5

    from .arrayrun import StorageRun

    storage = StorageRun(
        scenario.storage, c.transport, auto_replace_after_s=scenario.storage.replace_after
    )
    try:
        await storage.set_up(c.dashboard_url)
    except (RuntimeError, httpx.HTTPError) as exc:
        raise ClusterError(f"the scenario's array could not be made: {exc}") from None
    return storage


async def _steps(
    c: Cluster,
    scenario: Scenario,
    storage: StorageRun | None,
    on_action: OnAction | None,
    say: Say | None,
) -> tuple[float, float]:
    """Rules 2 and 3: the steps at their times; the start and the end on the trace clock."""
    async with c.backend.watching():
        t0 = c.backend.now()
        if on_action is not None:
            hear = on_action
            c.on_action = lambda a: hear(a, t0)
        async with trio.open_nursery() as nursery:
            if storage is not None:
                nursery.start_soon(storage.serve_writes, c.dashboard_url)
            for step in scenario.steps:
                await c.sleep_until(t0 + step.at)
                await _apply(c, step, nursery)
            if say is not None:
                say(f"steps done; watching until +{scenario.duration:g} s")
            await c.sleep_until(t0 + scenario.duration)
            nursery.cancel_scope.cancel()
        return t0, c.backend.now()


def _lone(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The one error inside (possibly nested) groups; None when there are more."""
    inner = list(group.exceptions)
    if len(inner) != 1:
        return None
    return _lone(inner[0]) if isinstance(inner[0], BaseExceptionGroup) else inner[0]


async def _apply(c: Cluster, step: Step, nursery: trio.Nursery) -> None:
    """Rule 1: the one call of ``c`` that carries ``step`` out."""
    kind, name = step.kind, step.name
    if kind == "add":
        await c.add_nodes(step.count, induct=step.induct, name=name)
    elif kind == "partition":
        await c.partition(*step.partition_groups(c.nodes), name=name)
    elif kind == "heal":
        await c.heal(name=name)
    elif kind in ("loss", "delay"):
        up = [i for i in c.nodes if c.state(i) != "down" and i not in c.agents]
        ids = [step.target] if isinstance(step.target, int) else up
        await (c.loss if kind == "loss" else c.delay)(step.value, ids, name=name)
    elif kind == "cut":
        await c.cut(step.groups[0], step.groups[1], name=name)
    elif kind == "clock":
        assert isinstance(step.target, int)
        await c.clock(step.target, step.value, step.rate, name=name)
    elif kind == "disk":
        assert isinstance(step.target, int)
        args = (step.pool, step.value, step.errors, step.full)
        await c.disk(step.target, *args, name=name)
    elif kind == "http":
        assert isinstance(step.target, int)
        limit = max(HTTP_TIMEOUT, step.expect.within[1] + 5) if step.expect else HTTP_TIMEOUT
        request = partial(c.http, step.target, step.path, step.method, limit, name=name)
        await nursery.start(request)
    else:
        await _node_step(c, step)


async def _node_step(c: Cluster, step: Step) -> None:
    """kill, stop, pause, resume or restart one node, the leader resolved now."""
    if step.target == "leader":
        try:
            i = await c.leader()
        except LookupError as exc:
            raise LookupError(f"{step.label()}: {exc}") from None
    else:
        assert isinstance(step.target, int)
        i = step.target
    if step.kind == "pause":
        await c.pause(i, step.duration, name=step.name)
        return
    verb = {"kill": c.kill, "stop": c.stop, "resume": c.resume, "restart": c.restart}
    await verb[step.kind](i, name=step.name)
