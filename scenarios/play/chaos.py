"""Chaos tests in Python: the ``Cluster`` every mode shares (``opening.open_cluster`` makes one).

Usage::

    async with open_cluster(3, mode="sim", seed=7) as c:
        await c.kill(2)
        await c.wait_dead(2)          # within the bound the protocol's timing gives
        assert (await c.check()).ok   # no false death, every checker passed

Rules:
1. One context manager owns everything it started: ``open_cluster`` returns once every node
   lists every node alive (the start, ``t = 0``) and ends every process and namespace (real,
   netns) when it is left, however (shielded from cancellation).
2. The same calls in every mode; the mode only chooses the ``Backend`` (``simcluster``,
   ``wholesim``, ``realcluster``, ``attach``). In sim, time is virtual: ``sleep`` and the
   waits move it, so a 60 s wait costs milliseconds, and one seed replays the same events,
   one for one. A scenario file and explore play through these same calls (``engine``).
3. Every fault is recorded as an ``Action`` (named ``<kind><n>``, ``kill1``, ``heal4``, or the
   ``name`` given; what a call brings about on its own is ``<name>:<kind>``), stamped just
   before it takes effect and told to ``on_action``;
   ``history()`` is those actions and the events on one clock, what ``check`` and the
   checkers (``checks``) judge.
4. The waits and their bounds: ``waits`` (rule 4 there). Time moves only through
   ``sleep_until``, which carries out the resume of a timed ``pause`` at its moment, recorded
   as ``<name>:resume``.
5. Node ids are ints; states are ``alive``, ``suspect``, ``dead``, ``left`` (``backend``).
   ``strict`` (the default) refuses a fault that would do nothing (``ValueError``); a
   scenario file is played as written (``engine``), as the network would take it.
6. The history, the checks and the close: ``history`` (a closed cluster still answers for
   its history).
7. ``opening.start_cluster`` tells ``opened`` of every cluster it starts (``open_cluster``
   and the pytest fixture start theirs through it), so a failed test names each one it
   opened.
8. Who is there (``nodes``, ``running``) follows from the actions alone: each is stamped
   when it is made, so none lies ahead of the clock, and the answer holds until the next one
   (worked out once per action, however often a wait looks).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from swim import SwimConfig

from ..judge.checks import Verdict
from ..judge.trace import Action, HttpResult
from .backend import MODES, Backend
from .faultcalls import FaultCalls
from .history import Recorded
from .waits import Wait, Waits, WaitTimeout

if TYPE_CHECKING:
    from .arrays import Array

HTTP_TIMEOUT = 15.0  # seconds an ``http`` request may take at least

__all__ = ["HTTP_TIMEOUT", "MODES", "Cluster", "Wait", "WaitTimeout"]


class Cluster(Recorded, Waits, FaultCalls):
    """A running cluster (``open_cluster``): faults, waits, views, events and checks."""

    def __init__(
        self,
        backend: Backend,
        n: int,
        seed: int,
        config: SwimConfig,
        *,
        strict: bool = True,
        on_action: Callable[[Action], None] | None = None,
        agents: Mapping[int, str] | None = None,
    ) -> None:
        self.backend = backend
        self.mode = backend.mode
        self.seed = seed
        self.config = config
        self.strict = strict  # rule 5
        self.on_action = on_action  # rule 3
        self.actions: list[Action] = []
        self.http_results: list[HttpResult] = []  # the answers of ``http``
        self.waits: list[Wait] = []  # every wait, as an expectation a replay can check
        self.checked: list[Verdict] = []  # every verdict of ``check``, for the replay too
        self.initial = tuple(range(n))
        self.agents = dict(agents or {})  # Serf agents among the members: number -> name
        self._resumes: list[tuple[float, int, str]] = []  # timed pauses: (when, node, name)
        self._closed = False  # aclose ran (``closed``)
        self._final: tuple[list[dict[str, Any]], float] | None = None  # events, end (rule 6)
        self._who: tuple[int, list[int], list[int]] | None = None  # rule 8

    # ---- who is there ---------------------------------------------------------------------

    @property
    def nodes(self) -> list[int]:
        """Every node id started so far (killed ones included), in order."""
        return list(self._nodes_now()[1])

    @property
    def running(self) -> list[int]:
        """The nodes up now: not killed, not stopped, not paused."""
        return list(self._nodes_now()[2])

    def _nodes_now(self) -> tuple[int, list[int], list[int]]:
        """The actions counted, every node and the nodes up now: worked out once per action
        (rule 8)."""
        if self._who is None or self._who[0] != len(self.actions):
            now = self.backend.now()
            trace = self.trace(end=now)
            self._who = (len(self.actions), trace.all_nodes(), trace.up_nodes(now))
        return self._who

    @property
    def directory(self) -> Path | None:
        """Real mode: the cluster directory (``cluster.json``, each node's log and event log);
        None in sim."""
        return self.backend.directory

    def dashboard_url(self, i: int) -> str | None:
        """Node ``i``'s dashboard (None in the membership simulator)."""
        self._known(i)
        return self.backend.dashboard_url(i)

    @property
    def transport(self) -> Any:
        """How HTTP reaches the dashboards: an httpx transport (whole nodes in the simulator:
        their apps in memory), or None (the network)."""
        return self.backend.transport

    def state(self, i: int) -> str:
        """Node ``i``'s process as this cluster left it: ``running``, ``paused`` or ``down``
        (killed or stopped)."""
        self._known(i)
        for a in reversed(self.actions):
            if i in a.nodes and a.kind in ("kill", "stop", "pause", "resume", "restart", "add"):
                return {"kill": "down", "stop": "down", "pause": "paused"}.get(a.kind, "running")
        return "running"

    async def leader(self) -> int:
        """The leader as the first running node that names one sees it."""
        leader = await self.backend.leader(self.running)
        if leader is None:
            raise LookupError("no running node knows a leader")
        return leader

    def _require(self, i: int, *states: str) -> None:
        now = self.state(i)
        if self.strict and now not in states:
            raise ValueError(f"node {i} is {now}, not {' or '.join(states)}")

    def _known(self, *ids: int) -> None:
        for i in ids:
            if i not in self.nodes:
                raise ValueError(f"no node {i} (nodes: {', '.join(map(str, self.nodes))})")

    # ---- faults ---------------------------------------------------------------------------

    def _record(
        self, kind: str, nodes: Iterable[int] = (), name: str | None = None, **kw: Any
    ) -> Action:
        step = name or self._next(kind)
        return self._told(Action(self.backend.now(), kind, step, tuple(nodes), **kw))

    def _next(self, kind: str) -> str:
        """``<kind><n>``: ``n`` counts the calls so far (rule 3), not what a call brought
        about on its own (a timed pause's ``:resume``, a restart's ``:stop``)."""
        return f"{kind}{sum(1 for a in self.actions if ':' not in a.step) + 1}"

    def _told(self, a: Action) -> Action:
        self.actions.append(a)
        if self.on_action is not None:
            self.on_action(a)
        return a

    async def make_array(
        self,
        *,
        owner: int = 0,
        members: Iterable[int] = (1, 2),
        parity: Iterable[int] = (3,),
        capacity: str = "4M",
        auto_replace_after_s: float | None = None,
    ) -> Array:
        """An erasure-coded array on node ``owner`` over one device on each node of
        ``members`` (data) and ``parity``: its writes, waits and durability check
        (``arrays``). Real processes, or whole nodes in the simulator (``whole=True``). With
        ``auto_replace_after_s``, a member away that long is replaced onto a spare."""
        from .arrays import make_array

        return await make_array(
            self.dashboard_url,
            self.transport,
            self.mode,
            owner=owner,
            members=tuple(members),
            parity=tuple(parity),
            capacity=capacity,
            auto_replace_after_s=auto_replace_after_s,
        )

    async def kill(self, i: int, *, name: str | None = None) -> None:
        """Crash node ``i`` (SIGKILL; sim: silent from now on)."""
        self._require(i, "running", "paused")
        await self.backend.prepare("kill", i)
        self._record("kill", (i,), name)
        await self.backend.kill(i)

    async def stop(self, i: int, *, name: str | None = None) -> None:
        """Stop node ``i`` gracefully: it announces its leave, then ends (SIGTERM)."""
        self._require(i, "running")
        await self.backend.prepare("stop", i)
        self._record("stop", (i,), name)
        await self.backend.stop(i)

    async def pause(self, i: int, seconds: float | None = None, *, name: str | None = None) -> None:
        """Freeze node ``i`` (SIGSTOP; its sockets stay open, packets queue); with
        ``seconds``, it is resumed that long after (rule 4)."""
        self._require(i, "running")
        await self.backend.prepare("pause", i)
        a = self._record("pause", (i,), name)
        await self.backend.pause(i)
        if seconds is not None:
            self._resumes.append((a.t + seconds, i, a.step))
            self._resumes.sort()

    async def resume(self, i: int, *, name: str | None = None) -> None:
        """Let a paused node ``i`` run again (SIGCONT)."""
        self._require(i, "paused")
        self._record("resume", (i,), name)
        await self.backend.resume(i)

    async def restart(self, i: int, *, name: str | None = None) -> None:
        """Start node ``i`` again with its id and port; a running process is stopped first
        where the backend stops it (real: gracefully, recorded as ``<name>:stop``)."""
        self._known(i)
        await self.backend.prepare("restart", i)
        step = name or self._next("restart")
        if self.backend.restart_stops and self.state(i) != "down":
            self._record("stop", (i,), f"{step}:stop")
            await self.backend.stop(i)
        self._record("restart", (i,), step)
        await self.backend.restart(i)

    async def add(self) -> int:
        """Start one more node; its id (the next one)."""
        return (await self.add_nodes(1))[0]

    async def add_nodes(
        self, count: int, *, induct: bool = False, name: str | None = None
    ) -> tuple[int, ...]:
        """Start ``count`` more nodes (``induct``: each asks a seed for its id); their ids,
        recorded as one action."""
        t = self.backend.now()
        ids = tuple([await self.backend.add(induct) for _ in range(count)])
        self._told(Action(t, "add", name or self._next("add"), ids))
        return ids

    async def partition(self, *groups: Iterable[int], name: str | None = None) -> None:
        """Cut the cluster into ``groups`` (traffic only inside a group); the nodes no group
        lists form one more group: ``partition([0, 1])`` is {0, 1} against the rest."""
        listed = [tuple(sorted(set(g))) for g in groups]
        flat = [i for g in listed for i in g]
        self._known(*flat)
        if len(flat) != len(set(flat)):
            raise ValueError(f"a node is in two groups: {listed}")
        rest = tuple(i for i in self.nodes if i not in flat)
        cut = tuple(g for g in (*listed, rest) if g)
        self._record("partition", name=name, groups=cut)
        await self.backend.partition(cut)

    async def heal(self, *, name: str | None = None) -> None:
        """Remove every partition, loss, delay and cut, and reset every clock and disk."""
        self._record("heal", name=name)
        await self.backend.heal()

    async def loss(
        self, percent: float, nodes: Iterable[int] | None = None, *, name: str | None = None
    ) -> None:
        """Drop ``percent`` (0..100) of the packets each of ``nodes`` (default all running)
        sends and receives."""
        if not 0.0 <= percent <= 100.0:
            raise ValueError(f"loss is a percentage (0..100), not {percent}")
        ids = self._targets(nodes)
        self._record("loss", ids, name, value=float(percent))
        await self.backend.loss(percent, ids)

    async def delay(
        self, ms: float, nodes: Iterable[int] | None = None, *, name: str | None = None
    ) -> None:
        """Delay every packet of ``nodes`` (default all running) by ``ms`` milliseconds."""
        if not 0.0 <= ms <= 60_000.0:
            raise ValueError(f"delay is 0..60000 ms, not {ms}")
        ids = self._targets(nodes)
        self._record("delay", ids, name, value=float(ms))
        await self.backend.delay(ms, ids)

    def _targets(self, nodes: Iterable[int] | None) -> list[int]:
        ids = self.running if nodes is None else sorted(set(nodes))
        self._known(*ids)
        return ids

    async def http(
        self,
        i: int,
        path: str,
        method: str = "GET",
        timeout: float = HTTP_TIMEOUT,
        *,
        name: str | None = None,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> HttpResult | None:
        """One request to node ``i``'s dashboard, recorded with its answer (``http_results``);
        None in sim, which has no dashboards (the action says "not applicable"). Started
        with ``nursery.start``, it is under way, its action recorded, once that returns."""
        self._known(i)
        if self.mode == "sim" and self.transport is None:  # the membership simulator
            self._record("http", name=name, note="not applicable in sim")
            task_status.started()
            return None
        a = self._record("http", (i,), name)
        task_status.started()
        t = self.backend.now()
        answer = await self.backend.http(i, method, path, timeout)
        status, elapsed, error = answer or (None, 0.0, "the node serves no dashboard")
        got = HttpResult(a.step, i, method, path, t, elapsed, status, error)
        self.http_results.append(got)
        return got

    # ---- time -----------------------------------------------------------------------------

    async def sleep(self, seconds: float) -> None:
        """Let ``seconds`` pass (virtual in sim)."""
        await self.sleep_until(self.backend.now() + seconds)

    async def sleep_until(self, t: float) -> None:
        """Let time pass until the trace clock reads ``t``, resuming each timed pause at its
        moment on the way (rule 4)."""
        while self._resumes and self._resumes[0][0] <= t:
            when, i, name = self._resumes.pop(0)
            await self.backend.advance_to(when)
            self._record("resume", (i,), f"{name}:resume")
            await self.backend.resume(i)
        await self.backend.advance_to(t)

    async def views(self) -> dict[int, dict[int, str]]:
        """``{observer: {subject: state}}`` of every running node (states: ``alive``,
        ``suspect``, ``dead``, ``left``); an observer that did not answer is left out."""
        got = await self.backend.views(self.running)
        return {o: row for o, row in got.items() if row is not None}
