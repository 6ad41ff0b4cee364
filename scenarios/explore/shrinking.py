"""Shrinking a failing schedule to a 1-minimal one.

A candidate is the schedule with one change: a step dropped (the final heal stays), one node
fewer (when no step names the last one), a fault made shorter (a pause's ``for`` or the time
from a partition or a cut to the next heal halved), a fault made weaker (loss and delay
halved; a cut from or to one node fewer; a clock's jump halved, its rate halfway to 1), or a
step moved later (halfway to the next one). The first candidate that still violates the same
property is taken and the search starts over; when none does, no single change keeps the
failure: the schedule is 1-minimal.

Rules:
1. Every candidate is an ordinary scenario mapping (``draw.finish`` sets its duration), played
   by ``runs.play``: what the shrinker keeps, a file replays.
2. ``deadline`` (``time.monotonic()``) bounds the whole shrink; past it, the smallest failing
   schedule so far is returned, marked not minimal.
3. A candidate the scenario format refuses (a dropped ``add`` whose node a later step names)
   is passed over, as one that no longer fails.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..format.records import ScenarioError
from .drawing import finish
from .playing import Outcome, play

__all__ = ["Shrunk", "shrink"]


@dataclass(frozen=True)
class Shrunk:
    mapping: dict[str, Any]
    outcome: Outcome
    tries: int
    minimal: bool
    seconds: float


def _named(step: dict[str, Any], node: int) -> bool:
    for key in ("kill", "pause", "resume", "restart", "stop"):
        if step.get(key) == node:
            return True
    if "partition" in step:
        return any(node in g for g in step["partition"] if isinstance(g, list))
    if isinstance(step.get("cut"), dict):
        return any(node in _ids(step["cut"].get(end)) for end in ("from", "to"))
    for key in ("loss", "delay", "clock"):
        if isinstance(step.get(key), dict) and step[key].get("node") == node:
            return True
    return False


def _ids(value: Any) -> list[int]:
    """A cut's end as drawn: an id or a list of ids."""
    return list(value) if isinstance(value, list) else [value]


def _weaker(step: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A cut from or to one node fewer; a clock's jump halved or its rate halfway to 1."""
    cut = step.get("cut")
    if isinstance(cut, dict):
        for end in ("from", "to"):
            ids = _ids(cut[end])
            for k in range(len(ids) if len(ids) > 1 else 0):
                yield {**step, "cut": {**cut, end: ids[:k] + ids[k + 1 :]}}
    clock = step.get("clock")
    if isinstance(clock, dict):
        offset, rate = float(clock.get("offset", 0.0)), float(clock.get("rate", 1.0))
        if abs(offset) >= 1.0:
            yield {**step, "clock": {**clock, "offset": round(offset / 2, 3)}}
        if abs(rate - 1.0) >= 0.05:
            yield {**step, "clock": {**clock, "rate": round((rate + 1.0) / 2, 3)}}


def candidates(m: dict[str, Any]) -> Iterator[dict[str, Any]]:
    steps = m["steps"]
    for k, s in enumerate(steps):  # drop a step
        if s.get("name") != "final":
            yield {**m, "steps": steps[:k] + steps[k + 1 :]}
    last = int(m["nodes"]) - 1  # one node fewer
    if last >= 2 and not any(_named(s, last) for s in steps) and not any("add" in s for s in steps):
        yield {**m, "nodes": last}
    for k, s in enumerate(steps):  # shorter, weaker, later
        if "for" in s and s["for"] > 0.2:
            yield _with(m, k, {**s, "for": round(s["for"] / 2, 3)})
        for weaker in _weaker(s):
            yield _with(m, k, weaker)
        if "partition" in s or "cut" in s:
            heal = next((j for j in range(k + 1, len(steps)) if "heal" in steps[j]), None)
            if heal is not None and heal < len(steps) - 1:
                gap = steps[heal]["at"] - s["at"]
                if gap > 0.2:
                    yield _with(m, heal, {**steps[heal], "at": round(s["at"] + gap / 2, 3)})
        for key, unit in (("loss", "percent"), ("delay", "ms")):
            if key in s and s[key][unit] > 1:
                yield _with(m, k, {**s, key: {**s[key], unit: max(1, s[key][unit] // 2)}})
        nxt = steps[k + 1]["at"] if k + 1 < len(steps) else None
        if nxt is not None and nxt - s["at"] > 0.2 and s.get("name") != "final":
            yield _with(m, k, {**s, "at": round((s["at"] + nxt) / 2, 3)})


def _with(m: dict[str, Any], k: int, step: dict[str, Any]) -> dict[str, Any]:
    steps = copy.deepcopy(m["steps"])
    steps[k] = step
    return {**m, "steps": steps}


def shrink(
    mapping: dict[str, Any], failed: Outcome, properties: list[str], deadline: float
) -> Shrunk:
    """The smallest schedule found that still fails ``failed``'s property (rule 2)."""
    assert failed.failed is not None
    name = failed.failed[0]
    started = time.monotonic()
    best, outcome, tries = mapping, failed, 0
    progress = True
    while progress:
        progress = False
        for cand in candidates(best):
            if time.monotonic() > deadline:
                return Shrunk(best, outcome, tries, False, time.monotonic() - started)
            cand = finish(cand)
            tries += 1
            try:
                got = play(cand, [name])  # only the property it failed: another may mask it
            except ScenarioError:
                continue  # rule 3: not a schedule (a step names a node whose add was dropped)
            if got.failed is not None and got.failed[0] == name:
                best, outcome, progress = cand, got, True
                break
    return Shrunk(best, outcome, tries, True, time.monotonic() - started)
