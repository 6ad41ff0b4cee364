"""One exploring run: a scenario mapping played on the simulated network and judged.

Rules:
1. ``play`` never raises for what a machine does: an exception inside the simulation becomes
   the run's ``error`` (the ``no_exception`` property), with the exception's type, text and
   the innermost frame of ``swim/`` it came from.
2. ``digest`` (``trace.events_digest``) is the SHA-256 of the event log: two plays of one
   mapping must give the same digest (the simulator is a pure function of it).
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Any

import yaml

from ..format.records import Scenario
from ..format.spec import parse_scenario
from ..judge.properties import Run, check
from ..judge.trace import events_digest as digest
from ..play.sim import run_sim

__all__ = ["Outcome", "digest", "play", "scenario_of"]


@dataclass(frozen=True)
class Outcome:
    """A judged run: the run, the first property it violates (None: all hold) and how."""

    run: Run
    failed: tuple[str, str] | None
    digest: str
    virtual_s: float


def scenario_of(mapping: dict[str, Any], source: str = "explore") -> Scenario:
    return parse_scenario(yaml.safe_dump(mapping, sort_keys=False), source, sim=True)


def _where(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/swim/" in f.filename]
    if not frames:
        return ""
    f = frames[-1]
    return f" (swim/{f.filename.rsplit('/swim/', 1)[1]}:{f.lineno}, in {f.name})"


def play(mapping: dict[str, Any], properties: list[str]) -> Outcome:
    """Play and judge ``mapping`` (rule 1)."""
    scenario = scenario_of(mapping)
    try:
        trace = run_sim(scenario)
    except Exception as exc:  # rule 1: a property failure, never a crash of the search
        run = Run(scenario, None, f"{type(exc).__name__}: {exc}{_where(exc)}")
        return Outcome(run, check(run, properties), digest([]), 0.0)
    run = Run(scenario, trace)
    return Outcome(run, check(run, properties), digest(trace.events), trace.end - trace.t0)
