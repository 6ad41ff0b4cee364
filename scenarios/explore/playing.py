"""One exploring run: a scenario mapping played on the simulated network and judged.

Rules:
1. ``play`` never raises for what a machine does: an exception inside the simulation becomes
   the run's ``error`` (the ``no_exception`` property), with the exception's type, text and
   the innermost frame of ``swim/`` it came from.
2. ``digest`` (``trace.events_digest``) is the SHA-256 of the event log: two plays of one
   mapping must give the same digest (the simulator is a pure function of it). An outcome
   hashes its events only when its digest is asked for (a search asks for none of its runs').
3. ``play_batch`` plays several mappings in one trio loop, one after another, each on a
   network of its own: the same outcomes as one ``play`` each, without a loop's start-up per
   run. A mapping is checked as its YAML file would be (``spec.scenario_from_mapping``).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import trio

from ..format.records import Scenario
from ..format.spec import scenario_from_mapping
from ..judge.properties import Run, check
from ..judge.trace import events_digest as digest
from ..play.sim import play_sim

__all__ = ["Outcome", "digest", "play", "play_batch", "scenario_of"]


@dataclass(frozen=True)
class Outcome:
    """A judged run: the run, the first property it violates (None: all hold) and how."""

    run: Run
    failed: tuple[str, str] | None
    virtual_s: float

    @cached_property
    def digest(self) -> str:
        """The events digest of the run (rule 2; a run that raised has no events)."""
        return digest(self.run.trace.events if self.run.trace is not None else [])


def scenario_of(mapping: dict[str, Any], source: str = "explore") -> Scenario:
    return scenario_from_mapping(mapping, source, sim=True)


def _where(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/swim/" in f.filename]
    if not frames:
        return ""
    f = frames[-1]
    return f" (swim/{f.filename.rsplit('/swim/', 1)[1]}:{f.lineno}, in {f.name})"


async def _judged(mapping: dict[str, Any], properties: list[str]) -> Outcome:
    scenario = scenario_of(mapping)
    try:
        trace = await play_sim(scenario)
    except Exception as exc:  # rule 1: a property failure, never a crash of the search
        run = Run(scenario, None, f"{type(exc).__name__}: {exc}{_where(exc)}")
        return Outcome(run, check(run, properties), 0.0)
    run = Run(scenario, trace)
    return Outcome(run, check(run, properties), trace.end - trace.t0)


def play_batch(
    mappings: Sequence[dict[str, Any]], properties: list[str], until: float | None = None
) -> list[Outcome]:
    """Play and judge each of ``mappings`` in one trio loop (rules 1 and 3); with ``until``
    (``time.monotonic()``), the ones begun before it: no run starts later."""

    async def each() -> list[Outcome]:
        out = []
        for m in mappings:
            if until is not None and time.monotonic() >= until:
                break
            out.append(await _judged(m, properties))
        return out

    clock = None
    if any("storage" in m for m in mappings):  # whole nodes run in virtual time (play.sim rule 4)
        from cluster.sim import VirtualClock

        clock = VirtualClock()
    return trio.run(each, clock=clock)


def play(mapping: dict[str, Any], properties: list[str]) -> Outcome:
    """Play and judge ``mapping`` (rule 1)."""
    return play_batch([mapping], properties)[0]
