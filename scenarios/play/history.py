"""The recorded half of a chaos test's ``Cluster`` (``chaos``): its actions and events as a
``Trace``, the history the checkers judge, and the close.

Rules:
1. Everything here reads what the cluster recorded (its actions, waits, verdicts) and what the
   backend answers (``now``, ``events``); nothing here acts on a node.
2. ``aclose`` reads every node's events one last time before it ends them: a closed cluster
   still answers ``history``, ``events`` and ``check`` (``final_history`` without awaiting),
   so a failed test's report is written after its processes are gone.
"""

from __future__ import annotations

from typing import Any

import trio

from swim import SwimConfig

from ..judge import checks
from ..judge.checks import Checker, CheckResult, History, Verdict, report
from ..judge.trace import Action, HttpResult, Trace, view_name
from .backend import Backend

__all__ = ["FINAL_READ", "Recorded"]

FINAL_READ = 20.0  # seconds the last read of every node's events may take at the close


class Recorded:
    """What a ``Cluster`` recorded, as history (the ``Cluster`` supplies what is declared)."""

    backend: Backend
    mode: str
    seed: int
    config: SwimConfig
    initial: tuple[int, ...]
    agents: dict[int, str]
    actions: list[Action]
    http_results: list[HttpResult]
    checked: list[Verdict]
    _closed: bool
    _final: tuple[list[dict[str, Any]], float] | None

    def trace(self, events: list[dict[str, Any]] | None = None, end: float | None = None) -> Trace:
        """The actions (and ``events``) as a ``Trace`` ending at ``end`` (default now)."""
        return Trace(
            mode="sim" if self.mode == "sim" else "real",  # netns: real processes
            t0=self.backend.t0,
            end=self.backend.now() if end is None else end,
            initial=self.initial,
            events=events or [],
            actions=list(self.actions),
            http=list(self.http_results),
            launched=self.backend.launched,
            probe_interval=self.config.probe_interval,
            boots=self.backend.boots,
            agents=dict(self.agents),
        )

    async def history(self) -> History:
        """What happened so far: the actions and every event, each view rebuilt."""
        if self._final is not None:
            return self.final_history()
        return History.of(self.trace(await self.backend.events()), self.config)

    def final_history(self) -> History:
        """Once closed: the history up to the close (rule 2); ``RuntimeError`` before."""
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
                    "t": round(float(e["mono"]) - self.backend.t0, 6),
                }
            )
        return out

    async def check(self, *checkers: Checker) -> CheckResult:
        """Run ``checkers`` (``judge.checks``) and ``never_dead()`` (no false death) over
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
