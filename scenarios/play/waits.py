"""What a chaos test waits for: the waits of ``Cluster`` (``Waits``), their conditions over
the cluster's views, and the records of waits.

Rules:
1. A condition is judged on one look at the views (``{observer: {subject: state}}``, None
   for an observer that did not answer); ``Condition.seen`` words that look for the timeout
   message: who sees what, only where it differs from what was awaited.
2. The observers of a condition are asked again at every look (``observers``): by default
   the nodes running at that moment, so a node paused or killed meanwhile is not waited on.
3. ``Wait`` is a wait as a scenario expectation (``replay`` writes it into a file): its bound
   is counted from the action it followed, in seconds.
4. A wait without ``within`` ends at the bound derived for the action that set it off
   (``checks.bound_for``), counted from that action: the last action on that node
   (``wait_dead``, ``wait_alive``; a partition's groups and a heal act on every node they
   hold) or on any node (``wait_converged``); with ``within``, seconds from the call. When
   time runs out: ``WaitTimeout``, naming who sees what.
5. Time moves only through the cluster's ``sleep_until``, so a timed pause resumes on time
   while a wait polls.
6. A wait yields to trio once per look: the sleep between two looks yields, and the views
   are read without a yield of their own where they are at hand (``views_nowait``: sim).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import trio

from swim import SwimConfig

from ..format.records import Bound
from ..judge import checks
from ..judge.trace import Action, Trace
from .backend import Backend

__all__ = [
    "POLL",
    "Condition",
    "Views",
    "Wait",
    "WaitTimeout",
    "Waits",
    "converged",
    "seen_as",
]

POLL = {"sim": 0.05, "real": 0.1, "netns": 0.1}  # seconds between looks at the views while waiting
Views = dict[int, dict[int, str] | None]


class WaitTimeout(AssertionError):
    """A wait ran out of time; the message says what was awaited and who sees what."""


@dataclass(frozen=True, slots=True)
class Wait:
    """One wait of a test, as a scenario expectation: ``kind`` (dead, alive, converged) of
    ``node`` seen by ``by`` (None: every node up), ``within`` seconds after the action
    ``after`` (or the start); ``ok`` False when it timed out."""

    kind: str
    node: int | None
    by: tuple[int, ...] | None
    after: str
    within: float
    ok: bool = True


@dataclass(frozen=True, slots=True)
class Condition:
    """What a wait awaits (``what``), whether one look shows it (``done``), who saw what
    (``seen``) and whom to ask (``observers``)."""

    what: str
    done: Callable[[Views], bool]
    seen: Callable[[Views], str]
    observers: Callable[[], list[int]]


def seen_as(
    i: int, states: tuple[str, ...], word: str, observers: Callable[[], list[int]]
) -> Condition:
    """Every observer holds node ``i`` in one of ``states`` (``word`` names them)."""

    def done(v: Views) -> bool:
        return all(_holds(v, o, i, states) for o in observers())

    def seen(v: Views) -> str:
        return "; ".join(f"node {o} sees {i} {_of(v, o, i)}" for o in observers())

    return Condition(f"node {i} seen {word} by {ids(observers())}", done, seen, observers)


def converged(running: Callable[[], list[int]]) -> Condition:
    """Every running node holds every running node alive."""

    def done(v: Views) -> bool:
        ups = running()
        return all(_holds(v, o, s, ("alive",)) for o in ups for s in ups)

    def seen(v: Views) -> str:
        rows = []
        for o in running():
            row = v.get(o)
            if row is None:
                rows.append(f"node {o} did not answer")
                continue
            off = [f"{s} {row.get(s, 'unknown')}" for s in running() if row.get(s) != "alive"]
            if off:
                rows.append(f"node {o} sees " + ", ".join(off))
        return "; ".join(rows)

    return Condition("converged", done, seen, running)


def _holds(v: Views, o: int, s: int, states: tuple[str, ...]) -> bool:
    row = v.get(o)
    return row is not None and row.get(s) in states


def _of(v: Views, o: int, s: int) -> str:
    row = v.get(o)
    return "(no answer)" if row is None else row.get(s, "unknown")


def ids(nodes: Iterable[int]) -> str:
    """``0, 1, 2``; ``nobody`` for none."""
    return ", ".join(map(str, nodes)) or "nobody"


class Waits:
    """The waits of a ``Cluster`` (``chaos``), which supplies what is declared here."""

    backend: Backend
    mode: str
    seed: int
    config: SwimConfig
    waits: list[Wait]  # every wait, as an expectation a replay can check

    @property
    def t0(self) -> float:
        return self.backend.t0

    if TYPE_CHECKING:  # supplied by ``Cluster``

        @property
        def running(self) -> list[int]: ...

        def _known(self, *ids: int) -> None: ...

        def trace(
            self, events: list[dict[str, Any]] | None = None, end: float | None = None
        ) -> Trace: ...

        async def sleep_until(self, t: float) -> None: ...

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
        return await self._wait("converged", None, None, within, converged(lambda: self.running))

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
        return await self._wait(word, i, by_ids, within, seen_as(i, states, word, observers))

    async def _wait(
        self,
        kind: str,
        node: int | None,
        by: tuple[int, ...] | None,
        within: float | None,
        cond: Condition,
    ) -> float:
        start = self.backend.now()
        deadline, why, after = self._deadline(kind, node, within, start)
        ref = start if after is None else after.t
        wait = Wait(kind, node, by, "start" if after is None else after.step, deadline - ref)
        await trio.lowlevel.checkpoint()  # rule 6: the first look's yield; later, the sleep's
        while True:
            v = await self._look(sorted({*self.running, *cond.observers()}))
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
            await self.sleep_until(now + min(POLL[self.mode], deadline - now))

    async def _look(self, observers: list[int]) -> Views:
        """The views, without a yield of their own where they are at hand (rule 6)."""
        try:
            return self.backend.views_nowait(observers)
        except trio.WouldBlock:
            return await self.backend.views(observers)

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
