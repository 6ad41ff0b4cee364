"""What one exploring run plays: a scenario drawn from its own seed (swarm testing).

Each run draws its size, which fault kinds it may use and how likely each is, a schedule of
one to ``MAX_FAULTS`` faults, and (``--swim KEY=LOW..HIGH``) protocol settings within the
user's ranges. The schedule is an ordinary scenario file (as a mapping, docs/rt_cluster.md).

Rules:
1. A pure function of the run's seed and the search's options: ``draw(seed, options)`` twice
   gives the same mapping.
2. Faults start at 2 s or later and follow one another by 1 to 12 s; a pause may outlast the
   suspicion timeout (then it is resumed), a partition or a one-way cut may outlast
   ``gossip_to_the_dead_time`` (then healed, or left to the final heal), loss and delay last
   until the final heal; at least two nodes stay running, so a node added or restarted has a
   member to find (through its hostfile: ``swim.resync``, whichever nodes are down).
3. Every schedule ends with every paused node resumed and a heal (``final``), then runs past
   the bounds derived after it plus ``QUIET`` seconds, so liveness can be judged.
4. Only the kinds of ``Options.faults`` are drawn (``--faults``; all of ``FAULT_KINDS`` by
   default). A one-way cut is from one or two running nodes to one or two others. A clock
   fault jumps a node's wall clock either way by at most ``MAX_JUMP_S`` (under a day:
   ``membership`` refuses a boot more than a day ahead of its clock, on purpose) and/or sets
   its rate in 0.5..2.0; the node is often restarted after it (a killed node: brought back),
   so its new boot is taken under the jumped clock.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

from swim import SwimConfig
from swim.lifeguard import suspicion_bounds

from ..format.bounds import BoundError, derive
from ..judge.checks import fallback_bound
from ..judge.properties import DEGRADING, SURE

__all__ = [
    "FAULT_KINDS",
    "SEED_STRIDE",
    "Options",
    "draw",
    "finish",
    "parse_faults",
    "run_seed",
]

SEED_STRIDE = 1_000_003  # run k of a search with seed S draws from S * SEED_STRIDE + k
FAULT_KINDS = (
    "kill",
    "pause",
    "restart",
    "add",
    "partition",
    "loss",
    "delay",
    "rolling",
    "cut",
    "clock",
)
MAX_FAULTS = 4
MAX_JUMP_S = 86_000.0  # rule 4: a clock jump's largest size, under BOOT_AHEAD_S (a day)
JUMPS_S = (1.0, 30.0, 600.0, 3600.0, MAX_JUMP_S)  # sizes a jump is drawn near (rule 4)
QUIET = 10.0  # seconds of the quiet window after the bounds (rule 3)
STORAGE_SETTLE_S = 30.0  # a schedule with storage: seconds from its last step to its end


@dataclass(frozen=True)
class Options:
    """What the search may draw: sizes ``low..high``, swim settings ranges, fault kinds."""

    low: int = 3
    high: int = 5
    swim: dict[str, tuple[float, float]] = field(default_factory=dict)
    faults: tuple[str, ...] = FAULT_KINDS  # rule 4
    storage: bool = False  # whole nodes and an array (``storagedraw``)


def parse_faults(text: str) -> tuple[str, ...]:
    """``--faults KIND,...``: the kinds named, in ``FAULT_KINDS``' order; ValueError names an
    unknown kind (or an empty list)."""
    names = [k.strip() for k in text.split(",")]
    unknown = [k for k in names if k not in FAULT_KINDS]
    if unknown or not names:
        shown = unknown[0][:40] if unknown else ""
        raise ValueError(f"--faults: unknown kind {shown!r} (kinds: {', '.join(FAULT_KINDS)})")
    return tuple(k for k in FAULT_KINDS if k in names)


def run_seed(search_seed: int, k: int) -> int:
    """The seed run ``k`` of a search with ``search_seed`` draws from (``search`` rule 1)."""
    return search_seed * SEED_STRIDE + k


def _swim(rng: random.Random, ranges: dict[str, tuple[float, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    default = SwimConfig().as_dict()
    for key, (lo, hi) in sorted(ranges.items()):
        value = rng.uniform(lo, hi)
        out[key] = round(value) if isinstance(default.get(key), int) else round(value, 3)
    return out


def _bound(kind: str, after: str, n: int, config: SwimConfig) -> float:
    try:
        return derive(kind, after, n, config, real=False, confidence=SURE).seconds
    except BoundError:
        return fallback_bound(kind, n, config, real=False).seconds


def _fault(kind: str, live: list[int]) -> str:
    """Rule 2: the kind drawn, or ``loss`` for a kill or pause that would leave fewer than two
    running nodes."""
    return "loss" if kind in ("kill", "pause") and len(live) <= 2 else kind


def draw(seed: int, options: Options) -> dict[str, Any]:
    """The scenario mapping of run ``seed`` (rule 1)."""
    rng = random.Random(seed)
    n = rng.randint(options.low, options.high)
    swim = _swim(rng, options.swim)
    config = SwimConfig.from_mapping(swim)
    allowed = options.faults
    kinds = [k for k in allowed if rng.random() < 0.5] or [rng.choice(allowed)]
    weights = [rng.uniform(0.2, 1.0) for _ in kinds]
    suspicion = suspicion_bounds(
        config.suspicion_mult, config.suspicion_max_timeout_mult, n, config.probe_interval
    )[1]  # a pause of 0.5 to 3 times the longest suspicion: short ones and long ones
    steps: list[dict[str, Any]] = []
    running = list(range(n))
    down: list[int] = []
    paused: dict[int, float] = {}
    t = round(rng.uniform(2.0, 10.0), 3)
    total = n
    for _ in range(rng.randint(1, MAX_FAULTS)):
        live = [i for i in running if i not in paused]
        kind = _fault(rng.choices(kinds, weights)[0], live)
        if kind == "kill":
            i = rng.choice(live)
            steps.append({"at": t, "kill": i})
            running.remove(i)
            down.append(i)
        elif kind == "pause":
            i = rng.choice(live)
            dur = round(rng.uniform(0.5, 3.0) * suspicion, 3)
            steps.append({"at": t, "pause": i, "for": dur})
            paused[i] = t + dur
        elif kind == "restart":
            i = rng.choice(down) if down and rng.random() < 0.5 else rng.choice(live)
            steps.append({"at": t, "restart": i})
            if i in down:
                down.remove(i)
                running.append(i)
        elif kind == "add":
            steps.append({"at": t, "add": 1})
            running.append(total)
            total += 1
        elif kind == "partition":
            t = _partition(rng, steps, t, total, config)
        elif kind == "loss":
            target = rng.choice(live) if rng.random() < 0.7 else "all"
            steps.append(
                {"at": t, "loss": {"node": target, "percent": rng.choice([10, 20, 40, 60])}}
            )
        elif kind == "delay":
            target = rng.choice(live) if rng.random() < 0.7 else "all"
            steps.append({"at": t, "delay": {"node": target, "ms": rng.choice([50, 150, 400])}})
        elif kind == "cut":
            t = _cut(rng, steps, t, live, total, config)
        elif kind == "clock":
            crash_s = _bound("dead", "kill", total, config)
            t = _clock(rng, steps, t, (running, down, paused), crash_s)
        else:  # rolling restart: every running node, one after another
            gap = round(rng.uniform(1.0, 4.0), 3)
            for i in sorted(live):
                steps.append({"at": t, "restart": i})
                t = round(t + gap, 3)
        t = round(t + rng.uniform(1.0, 12.0), 3)
    for until in paused.values():
        t = max(t, round(until + 0.5, 3))  # a timed pause is resumed by its own ``for``
    steps.append({"at": t, "heal": True, "name": "final"})
    return finish(
        {
            "name": f"explore run {seed}",
            "nodes": n,
            "seed": seed,
            "workload": "off",
            "swim": swim,
            "steps": steps,
        }
    )


def _partition(
    rng: random.Random, steps: list[dict[str, Any]], t: float, total: int, config: SwimConfig
) -> float:
    """Rule 2: two groups of every node, healed after a while (or by the final heal); the
    time of the last step."""
    ids = list(range(total))  # the format wants every node in a group
    rng.shuffle(ids)
    cut = rng.randint(1, len(ids) - 1)
    groups = [sorted(ids[:cut]), sorted(ids[cut:])]
    steps.append({"at": t, "partition": groups})
    hold = round(rng.uniform(1.0, 1.5 * config.gossip_to_the_dead_time), 3)
    if rng.random() < 0.6:
        t = round(t + hold, 3)
        steps.append({"at": t, "heal": True})
    return t


def _cut(
    rng: random.Random,
    steps: list[dict[str, Any]],
    t: float,
    live: list[int],
    total: int,
    config: SwimConfig,
) -> float:
    """Rule 4: a one-way cut from one or two running nodes to one or two others, healed
    after a while or left to the final heal; the time of the last step."""
    src = sorted(rng.sample(live, min(len(live), rng.choice((1, 1, 2)))))
    others = [i for i in range(total) if i not in src]
    dst = sorted(rng.sample(others, min(len(others), rng.choice((1, 1, 2)))))
    steps.append({"at": t, "cut": {"from": src, "to": dst}})
    if rng.random() < 0.5:
        hold = round(rng.uniform(1.0, 1.5 * config.gossip_to_the_dead_time), 3)
        t = round(t + hold, 3)
        steps.append({"at": t, "heal": True})
    return t


def _clock(
    rng: random.Random,
    steps: list[dict[str, Any]],
    t: float,
    state: tuple[list[int], list[int], dict[int, float]],
    crash_s: float,
) -> float:
    """Rule 4: a node's clock jumped (either way) and/or set to run fast or slow, then often
    the node restarted under it: a killed node brought back, or a running one crashed (while
    two others run) and brought back after up to twice ``crash_s`` (the bound of its death,
    so the others often hold it dead by then); the time of the last step."""
    running, down, paused = state
    live = [i for i in running if i not in paused]
    i = rng.choice(down) if down and rng.random() < 0.5 else rng.choice(running)
    shape = rng.random()
    offset = 0.0
    rate = 1.0
    if shape < 0.7:  # a jump, back more often than ahead: a restart after it is the case
        size = min(MAX_JUMP_S, rng.choice(JUMPS_S) * rng.uniform(0.5, 1.0))
        offset = round(size if rng.random() < 0.3 else -size, 3)
    if shape > 0.5:
        rate = round(rng.uniform(0.5, 2.0), 3)
    steps.append({"at": t, "clock": {"node": i, "offset": offset, "rate": rate}})
    if i in paused or rng.random() < 0.4:
        return t
    if i in live and len(live) > 2 and rng.random() < 0.6:  # a crash under the clock
        t = round(t + rng.uniform(0.1, 2.0), 3)
        steps.append({"at": t, "kill": i})
        running.remove(i)
        down.append(i)
        t = round(t + rng.uniform(0.5, 2.0) * crash_s, 3)
    else:
        t = round(t + rng.uniform(0.5, 6.0), 3)
    steps.append({"at": t, "restart": i})
    if i in down:
        down.remove(i)
        running.append(i)
    return t


def finish(mapping: dict[str, Any]) -> dict[str, Any]:
    """``mapping`` with the duration rule 3 gives it: past the bounds after its last step (and
    a re-join), plus the quiet window; with storage, ``STORAGE_SETTLE_S`` past its last step
    (``storagedraw`` rule 4)."""
    if "storage" in mapping:
        last = max((float(s["at"]) + float(s.get("for", 0.0)) for s in mapping["steps"]), default=0)
        return {**mapping, "duration": round(last + STORAGE_SETTLE_S, 3)}
    config = SwimConfig.from_mapping(mapping.get("swim") or {})
    if any(k in s for s in mapping["steps"] for k in DEGRADING):  # as ``properties`` judges it
        config = replace(config, probe_interval=config.probe_interval * config.awareness_max)
    size = int(mapping["nodes"]) + sum(int(s.get("add", 0)) for s in mapping["steps"])
    settle = max(_bound("converged", "heal", size, config), _bound("dead", "kill", size, config))
    last = max((float(s["at"]) + float(s.get("for", 0.0)) for s in mapping["steps"]), default=0.0)
    return {**mapping, "duration": round(last + 2 * settle + QUIET, 3)}
