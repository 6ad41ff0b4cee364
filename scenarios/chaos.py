"""Chaos tests in Python: ``open_cluster`` and the ``Cluster`` every mode shares.

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
   ``realcluster``). In sim, time is virtual: ``sleep`` and the waits move it, so a 60 s wait
   costs milliseconds, and one seed replays the same events, one for one.
3. Every fault is recorded as an ``Action`` (named ``<kind><n>``, ``kill1``, ``heal4``), stamped
   just before it takes effect; ``history()`` is those actions and the events on one clock,
   what ``check`` and the checkers (``checks``) judge.
4. A wait without ``within`` ends at the bound derived for the action that set it off
   (``checks.bound_for``), counted from that action: the last action on that node
   (``wait_dead``, ``wait_alive``; a partition's groups and a heal act on every node they
   hold) or on any node (``wait_converged``); with ``within``, seconds from the call. When
   time runs out: ``WaitTimeout``, naming who sees what.
5. Node ids are ints; states are ``alive``, ``suspect``, ``dead``, ``left`` (``backend``).
6. ``aclose`` reads every node's events one last time before it ends them: a closed cluster
   still answers ``history``, ``events`` and ``check`` (``final_history`` without awaiting),
   so a failed test's report is written after its processes are gone.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from swim import SwimConfig

from . import checks, waits
from .backend import MODES, Backend, view_name
from .checks import Checker, CheckResult, History, Verdict, report
from .records import Bound
from .simcluster import SimBackend
from .trace import Action, Trace
from .waits import Wait, WaitTimeout

if TYPE_CHECKING:
    from .arrays import Array

FINAL_READ = 20.0  # seconds the last read of every node's events may take at the close

__all__ = ["MODES", "Cluster", "Wait", "WaitTimeout", "open_cluster", "start_cluster"]


class Cluster:
    """A running cluster (``open_cluster``): faults, waits, views, events and checks."""

    def __init__(self, backend: Backend, n: int, seed: int, config: SwimConfig) -> None:
        self.backend = backend
        self.mode = backend.mode
        self.seed = seed
        self.config = config
        self.actions: list[Action] = []
        self.waits: list[Wait] = []  # every wait, as an expectation a replay can check
        self.checked: list[Verdict] = []  # every verdict of ``check``, for the replay too
        self.initial = tuple(range(n))
        self._closed = False  # aclose ran (``closed``)
        self._final: tuple[list[dict[str, Any]], float] | None = None  # events, end (rule 6)

    # ---- who is there ---------------------------------------------------------------------

    @property
    def nodes(self) -> list[int]:
        """Every node id started so far (killed ones included), in order."""
        return self.trace(end=self.backend.now()).all_nodes()

    @property
    def running(self) -> list[int]:
        """The nodes up now: not killed, not stopped, not paused."""
        return self.trace(end=self.backend.now()).up_nodes(self.backend.now())

    @property
    def directory(self) -> Path | None:
        """Real mode: the cluster directory (``cluster.json``, each node's log and event log);
        None in sim."""
        return self.backend.directory

    def dashboard_url(self, i: int) -> str | None:
        """Node ``i``'s dashboard (None in sim)."""
        self._known(i)
        return self.backend.dashboard_url(i)

    def state(self, i: int) -> str:
        """Node ``i``'s process as this cluster left it: ``running``, ``paused`` or ``down``
        (killed)."""
        self._known(i)
        for a in reversed(self.actions):
            if i in a.nodes and a.kind in ("kill", "pause", "resume", "restart", "add"):
                return {"kill": "down", "pause": "paused"}.get(a.kind, "running")
        return "running"

    def _require(self, i: int, *states: str) -> None:
        now = self.state(i)
        if now not in states:
            raise ValueError(f"node {i} is {now}, not {' or '.join(states)}")

    def _known(self, *ids: int) -> None:
        for i in ids:
            if i not in self.nodes:
                raise ValueError(f"no node {i} (nodes: {', '.join(map(str, self.nodes))})")

    # ---- faults ---------------------------------------------------------------------------

    def _record(self, kind: str, nodes: Iterable[int] = (), **kw: Any) -> Action:
        a = Action(self.backend.now(), kind, f"{kind}{len(self.actions) + 1}", tuple(nodes), **kw)
        self.actions.append(a)
        return a

    async def make_array(
        self,
        *,
        owner: int = 0,
        members: Iterable[int] = (1, 2),
        parity: Iterable[int] = (3,),
        capacity: str = "4M",
    ) -> Array:
        """An erasure-coded array on node ``owner`` over one device on each node of
        ``members`` (data) and ``parity``: its writes, waits and durability check
        (``scenarios.arrays``). Real processes only."""
        from .arrays import make_array

        return await make_array(
            self.dashboard_url,
            self.mode,
            owner=owner,
            members=tuple(members),
            parity=tuple(parity),
            capacity=capacity,
        )

    async def kill(self, i: int) -> None:
        """Crash node ``i`` (SIGKILL; sim: silent from now on)."""
        self._require(i, "running", "paused")
        await self.backend.prepare("kill", i)
        self._record("kill", (i,))
        await self.backend.kill(i)

    async def pause(self, i: int) -> None:
        """Freeze node ``i`` (SIGSTOP; its sockets stay open, packets queue)."""
        self._require(i, "running")
        await self.backend.prepare("pause", i)
        self._record("pause", (i,))
        await self.backend.pause(i)

    async def resume(self, i: int) -> None:
        """Let a paused node ``i`` run again (SIGCONT)."""
        self._require(i, "paused")
        self._record("resume", (i,))
        await self.backend.resume(i)

    async def restart(self, i: int) -> None:
        """Start node ``i`` again with its id and port (stopped first if running)."""
        self._known(i)
        await self.backend.prepare("restart", i)
        self._record("restart", (i,))
        await self.backend.restart(i)

    async def add(self) -> int:
        """Start one more node; its id (the next one)."""
        t = self.backend.now()
        i = await self.backend.add()
        self.actions.append(Action(t, "add", f"add{len(self.actions) + 1}", (i,)))
        return i

    async def partition(self, *groups: Iterable[int]) -> None:
        """Cut the cluster into ``groups`` (traffic only inside a group); the nodes no group
        lists form one more group: ``partition([0, 1])`` is {0, 1} against the rest."""
        listed = [tuple(sorted(set(g))) for g in groups]
        flat = [i for g in listed for i in g]
        self._known(*flat)
        if len(flat) != len(set(flat)):
            raise ValueError(f"a node is in two groups: {listed}")
        rest = tuple(i for i in self.nodes if i not in flat)
        cut = tuple(g for g in (*listed, rest) if g)
        self._record("partition", groups=cut)
        await self.backend.partition(cut)

    async def heal(self) -> None:
        """Remove every partition, loss and delay."""
        self._record("heal")
        await self.backend.heal()

    async def loss(self, percent: float, nodes: Iterable[int] | None = None) -> None:
        """Drop ``percent`` (0..100) of the packets each of ``nodes`` (default all running)
        sends and receives."""
        if not 0.0 <= percent <= 100.0:
            raise ValueError(f"loss is a percentage (0..100), not {percent}")
        ids = self._targets(nodes)
        self._record("loss", ids, value=float(percent))
        await self.backend.loss(percent, ids)

    async def delay(self, ms: float, nodes: Iterable[int] | None = None) -> None:
        """Delay every packet of ``nodes`` (default all running) by ``ms`` milliseconds."""
        if not 0.0 <= ms <= 60_000.0:
            raise ValueError(f"delay is 0..60000 ms, not {ms}")
        ids = self._targets(nodes)
        self._record("delay", ids, value=float(ms))
        await self.backend.delay(ms, ids)

    def _targets(self, nodes: Iterable[int] | None) -> list[int]:
        ids = self.running if nodes is None else sorted(set(nodes))
        self._known(*ids)
        return ids

    # ---- time and waits -------------------------------------------------------------------

    async def sleep(self, seconds: float) -> None:
        """Let ``seconds`` pass (virtual in sim)."""
        await self.backend.advance(seconds)

    async def views(self) -> dict[int, dict[int, str]]:
        """``{observer: {subject: state}}`` of every running node (states: ``alive``,
        ``suspect``, ``dead``, ``left``); an observer that did not answer is left out."""
        got = await self.backend.views(self.running)
        return {o: row for o, row in got.items() if row is not None}

    async def wait_dead(
        self, i: int, by: Iterable[int] | None = None, within: float | None = None
    ) -> float:
        """Until every observer (``by``; default every running node but ``i``) holds ``i``
        dead or left; seconds waited. ``WaitTimeout`` past ``within`` s (rule 4)."""
        self._known(i)
        return await self._wait_seen(i, ("dead", "left"), "dead", by, within)

    async def wait_alive(
        self, i: int, by: Iterable[int] | None = None, within: float | None = None
    ) -> float:
        """Until every observer (``by``; default every running node but ``i``) holds ``i``
        alive; seconds waited. ``WaitTimeout`` past ``within`` s (rule 4)."""
        self._known(i)
        return await self._wait_seen(i, ("alive",), "alive", by, within)

    async def wait_converged(self, within: float | None = None) -> float:
        """Until every running node holds every running node alive; seconds waited."""
        return await self._wait(
            "converged", None, None, within, waits.converged(lambda: self.running)
        )

    async def _wait_seen(
        self,
        i: int,
        states: tuple[str, ...],
        word: str,
        by: Iterable[int] | None,
        within: float | None,
    ) -> float:
        fixed = None if by is None else sorted(set(by) - {i})

        def observers() -> list[int]:
            return fixed if fixed is not None else [o for o in self.running if o != i]

        by_ids = None if fixed is None else tuple(fixed)
        return await self._wait(word, i, by_ids, within, waits.seen_as(i, states, word, observers))

    async def _wait(
        self,
        kind: str,
        node: int | None,
        by: tuple[int, ...] | None,
        within: float | None,
        cond: waits.Condition,
    ) -> float:
        start = self.backend.now()
        deadline, why, after = self._deadline(kind, node, within, start)
        ref = start if after is None else after.t
        wait = Wait(kind, node, by, "start" if after is None else after.step, deadline - ref)
        while True:
            v = await self.backend.views(sorted({*self.running, *cond.observers()}))
            if cond.done(v):
                self.waits.append(wait)
                return self.backend.now() - start
            now = self.backend.now()
            if now >= deadline:
                self.waits.append(replace(wait, ok=False))
                raise WaitTimeout(
                    f"{cond.what}: not within {why}; {cond.seen(v) or 'no observer'} "
                    f"(mode {self.mode}, seed {self.seed}, +{now - self.t0:.2f} s)"
                )
            await self.backend.advance(min(waits.POLL[self.mode], deadline - now))

    def _deadline(
        self, kind: str, node: int | None, within: float | None, t: float
    ) -> tuple[float, str, Action | None]:
        """The deadline of a wait begun at ``t``, why, and the action it counts from."""
        trace = self.trace(end=t)
        a = checks.last_action(trace, checks.ANY_ACTION, node)
        if within is not None:
            return t + within, f"{within:g} s", a
        b: Bound = checks.bound_for(kind, a, trace, self.config, real=self.mode != "sim")
        since = "the start" if a is None else f"{a.step} at +{a.t - self.t0:.2f} s"
        why = f"{b.seconds:g} s of {since} ({b.formula})"
        return (a.t if a else self.t0) + b.seconds, why, a

    # ---- history --------------------------------------------------------------------------

    @property
    def t0(self) -> float:
        return self.backend.t0

    def trace(self, events: list[dict[str, Any]] | None = None, end: float | None = None) -> Trace:
        """The actions (and ``events``) as a ``Trace`` ending at ``end`` (default now)."""
        return Trace(
            mode="sim" if self.mode == "sim" else "real",  # netns: real processes
            t0=self.backend.t0,
            end=self.backend.now() if end is None else end,
            initial=self.initial,
            events=events or [],
            actions=list(self.actions),
            launched=self.backend.launched,
            probe_interval=self.config.probe_interval,
        )

    async def history(self) -> History:
        """What happened so far: the actions and every event, each view rebuilt."""
        if self._final is not None:
            return self.final_history()
        return History.of(self.trace(await self.backend.events()), self.config)

    def final_history(self) -> History:
        """Once closed: the history up to the close (rule 6); ``RuntimeError`` before."""
        if self._final is None:
            raise RuntimeError("the cluster is still open: await c.history()")
        events, end = self._final
        return History.of(self.trace(events, end), self.config)

    async def events(self) -> list[dict[str, Any]]:
        """Every membership change so far, oldest first: ``{observer, subject, old, new, cause,
        t}`` (``t``: seconds after the start, negative while the cluster formed)."""
        out = []
        h = await self.history()
        for e in sorted(h.trace.events, key=lambda e: float(e["mono"])):
            old, new = view_name(e.get("old")), view_name(e.get("new"))
            if old == new:
                continue  # alive <-> probe_failed: no change in the API's words
            out.append(
                {
                    "observer": int(e["observer"]),
                    "subject": int(e["subject"]),
                    "old": old,
                    "new": new,
                    "cause": str(e.get("cause", "")),
                    "t": round(float(e["mono"]) - self.t0, 6),
                }
            )
        return out

    async def check(self, *checkers: Checker) -> CheckResult:
        """Run ``checkers`` (``scenarios.checks``) and ``never_dead()`` (no false death) over
        the history so far."""
        h = await self.history()
        verdicts = tuple(c(h) for c in (checks.never_dead(), *checkers))
        self.checked += verdicts[1:]
        ok = all(v.ok for v in verdicts)
        return CheckResult(ok, verdicts, report(h, verdicts, self.seed))

    @property
    def closed(self) -> bool:
        """Whether ``aclose`` ran: everything this cluster started is gone."""
        return self._closed

    async def aclose(self) -> None:
        """End everything this cluster started (once; shielded from cancellation)."""
        if self._closed:
            return
        self._closed = True
        with trio.CancelScope(shield=True):
            events: list[dict[str, Any]] = []
            try:
                with trio.move_on_after(FINAL_READ):
                    events = await self.backend.events()
            finally:
                self._final = (events, self.backend.now())
                await self.backend.aclose()


async def start_cluster(
    n: int,
    mode: str = "sim",
    *,
    seed: int | None = None,
    swim: SwimConfig | Mapping[str, Any] | None = None,
    directory: Path | None = None,
    name: str | None = None,
    serf: int = 0,
) -> Cluster:
    """Start ``n`` nodes and return once they have converged; the caller owns it and must
    ``aclose`` it (``open_cluster`` does). ``directory``/``name``: real mode's cluster
    directory and name (default a fresh temporary one); ``serf``: see ``open_cluster``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if not 1 <= n <= 1024:
        raise ValueError(f"a cluster has 1..1024 nodes, not {n}")
    if serf and (mode != "real" or not 0 < serf <= 64):
        raise ValueError(f"Serf agents (1..64) run in mode 'real' only, not {serf} in {mode!r}")
    config = swim if isinstance(swim, SwimConfig) else SwimConfig.from_mapping(dict(swim or {}))
    seed = secrets.randbelow(2**31) if seed is None else seed
    backend: Backend
    if mode == "sim":
        backend = await SimBackend.start(n, config, seed)
    else:
        from .realcluster import RealBackend  # processes only when asked for

        backend = await RealBackend.start(
            n, config, directory=directory, name=name, namespaces=mode == "netns", serf=serf
        )
    return Cluster(backend, n + serf, seed, config)


@asynccontextmanager
async def open_cluster(
    n: int,
    mode: str = "sim",
    *,
    seed: int | None = None,
    swim: SwimConfig | Mapping[str, Any] | None = None,
    directory: Path | None = None,
    name: str | None = None,
    serf: int = 0,
) -> AsyncIterator[Cluster]:
    """``n`` nodes (``mode``: ``"sim"``, ``"real"`` or ``"netns"``), converged, ended on exit
    (rule 1).

    ``seed``: the simulation's seed (default a random one; ``c.seed`` says which);
    ``swim``: ``SwimConfig`` or its fields as a mapping (seconds); ``serf``: that many real
    Serf agents beside the nodes (mode ``"real"``; the nodes then speak memberlist), members
    ``n`` and up, whose views come from ``serf members``."""
    c = await start_cluster(
        n, mode, seed=seed, swim=swim, directory=directory, name=name, serf=serf
    )
    try:
        yield c
    finally:
        await c.aclose()
