"""Scenario files: YAML parsed and checked into frozen records, before anything runs.

Rules:
1. Every problem is one ``ScenarioError`` whose message names the file, the step (or
   expectation) and what is wrong; nothing is started for a file that does not check.
2. Node ids are checked against the cluster the steps build: ``nodes`` at the start, plus one
   id per ``add`` (ids ``nodes``, ``nodes+1``, ...). ``leader`` names the leader at that moment.
3. Times are seconds after the start (the moment the cluster has converged).
4. This module reads the file and its top-level keys; ``steps`` checks the ``steps:`` and
   ``expect:`` lists, ``values`` the numbers and ids, ``records`` holds what they build.
5. An expectation without ``within`` (or with ``within: auto``) gets the bound ``bounds``
   derives for the cluster's size at its step, the scenario's swim settings and the mode
   (real processes add the loop-lag allowances), at ``confidence`` (default 99.9 %).
6. The YAML is read by ``cluster.ground.safeyaml`` (at most 1 MiB, no anchors or aliases, bounded
   depth), so no file can make the loader hang or grow without bound.
7. ``serf: M`` (0..``MAX_AGENTS``) runs M real Serf agents beside the nodes, members
   ``nodes`` .. ``nodes + M - 1`` (``records`` rule 3); bounds count every member. Serf is a
   real program: in sim a file with agents is refused, unless its ``sim:`` section sets
   ``serf: 0`` (its own steps and expect, where they name agents). The node count of such a
   file is not overridden (``-n``): the agents' numbers would move under its steps. A file
   with a ``disk`` step is refused in sim too: the simulator runs no devices.
8. A mapping made by code (``scenario_from_mapping``) passes the same checks as a file: only
   the YAML text is skipped, so what a mapping plays, its file replays.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from cluster.ground.safeyaml import YamlError, YamlTooLarge, load, load_file
from swim import SwimConfig

from .bounds import CONFIDENCE, BoundError, derive
from .records import (
    MAX_AGENTS,
    PROPERTY_NAMES,
    TRUSTED,
    Expectation,
    Scenario,
    ScenarioError,
    Step,
)
from .steps import parse_expectations, parse_steps
from .storage import parse_storage
from .values import Checker

__all__ = [
    "Expectation",
    "Scenario",
    "ScenarioError",
    "Step",
    "load_scenario",
    "parse_scenario",
    "scenario_from_mapping",
]

TOP_KEYS = {
    "name",
    "description",
    "nodes",
    "seed",
    "settings",
    "swim",
    "workload",
    "duration",
    "steps",
    "expect",
    "sim",
    "pass_rate",
    "confidence",
    "property",
    "storage",
    "serf",
}
_FAULTS = ("partition", "loss", "delay")
SIM_KEYS = TOP_KEYS - {"sim", "name", "description"}  # what a ``sim:`` section may override


def load_scenario(path: str | Path, *, nodes: int | None = None, sim: bool = False) -> Scenario:
    """Read and check the scenario file at ``path`` (see ``parse_scenario``)."""
    path = Path(path)
    try:
        data = load_file(path)
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except YamlTooLarge as exc:
        raise ScenarioError(f"{path}: {exc}, the limit of a scenario file") from None
    except YamlError as exc:
        raise ScenarioError(f"{path}: not valid YAML: {exc}") from None
    return _checked(data, str(path), nodes, sim)


def parse_scenario(
    text: str | bytes, source: str, *, nodes: int | None = None, sim: bool = False
) -> Scenario:
    """Check a scenario; ``nodes`` overrides its size. With ``sim`` the keys of its ``sim:``
    section (``nodes``, ``steps``, ``expect``, ``duration``, ...) replace the top-level ones."""
    try:
        data = load(text)
    except YamlError as exc:
        raise ScenarioError(f"{source}: not valid YAML: {exc}") from None
    return _checked(data, source, nodes, sim)


def scenario_from_mapping(
    data: Mapping[str, Any], source: str, *, nodes: int | None = None, sim: bool = False
) -> Scenario:
    """A scenario's mapping, as code made it (explore's draws), checked as its YAML file
    would be (``parse_scenario``) without writing and reading the text (rule 8)."""
    return _checked(data, source, nodes, sim)


def _checked(data: Any, source: str, nodes: int | None, sim: bool) -> Scenario:
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{source}: expected a mapping with nodes, steps and expect")
    if sim and isinstance(data.get("sim"), Mapping):
        over = dict(data["sim"])
        bad = sorted(set(map(str, over)) - SIM_KEYS)
        if bad:
            raise ScenarioError(f"{source}: sim.{bad[0]}: not a key the simulation can override")
        data = {**data, **over, "sim": {}}
    return _scenario(Checker(source), data, nodes, sim)


def _scenario(
    c: Checker, d: Mapping[str, Any], nodes_override: int | None, sim_mode: bool
) -> Scenario:
    unknown = sorted(set(map(str, d)) - TOP_KEYS)
    if unknown:
        key = unknown[0] if unknown[0].isprintable() else repr(unknown[0])
        raise c.fail(key[:60], f"unknown key (known: {', '.join(sorted(TOP_KEYS))})")
    for key in ("name", "description"):
        if not isinstance(d.get(key) or "", str):
            raise c.fail(key, "expected text")
    nodes = c.integer(d.get("nodes"), "nodes", low=1, high=1000)
    sim, sim_nodes = _sim_section(c, d.get("sim") or {})
    serf = _serf(c, d.get("serf", 0), sim_mode, nodes_override)
    if nodes_override is not None:
        nodes = nodes_override
    seed = c.integer(d.get("seed", 0), "seed", low=0, high=2**63)
    settings = _settings(c, d)
    agents = tuple(range(nodes, nodes + serf))
    steps = parse_steps(c, d.get("steps") or [], nodes + serf, agents)
    names = {s.name for s in steps}
    expects = parse_expectations(c, d.get("expect") or [], names, nodes + serf, steps)
    confidence = c.number(d.get("confidence", CONFIDENCE), "confidence", low=0.5, high=0.999999)
    expects = _derived(c, expects, steps, nodes + serf, settings, confidence, real=not sim_mode)
    pass_rate = c.number(d.get("pass_rate", 1.0), "pass_rate", low=0.0, high=1.0)
    if "duration" in d:
        duration = c.number(d["duration"], "duration", low=0.1)
    else:
        last = max((s.at + (s.duration or 0) for s in steps), default=0.0)
        bound = max((e.within for e in expects), default=0.0)
        http = max((s.expect.within[1] for s in steps if s.expect), default=0.0)
        duration = last + max(bound, http) + 2.0
    if any(e.kind == "no_lost_writes" for e in expects) and d.get("storage") is None:
        raise c.fail("expect", "no_lost_writes needs a storage section (the array it checks)")
    for s in steps:
        if s.at > duration:
            raise c.fail(s.label(), f"at {s.at:g}s is after the end (duration {duration:g})")
        if s.kind == "disk" and sim_mode and d.get("storage") is None:
            raise c.fail(
                s.label(),
                "disk faults need node processes or whole simulated nodes: the membership "
                "simulator runs no disks (a file with a storage: section runs whole nodes)",
            )
    return Scenario(
        name=str(d.get("name") or Path(c.source).stem),
        source=c.source,
        nodes=nodes,
        seed=seed,
        settings=settings,
        steps=steps,
        expectations=expects,
        duration=duration,
        description=str(d.get("description") or ""),
        sim_nodes=sim_nodes,
        sim_overrides=dict(sim),
        pass_rate=pass_rate,
        explore_property=_property(c, d.get("property")),
        storage=parse_storage(c, d.get("storage"), nodes),
        serf=serf,
    )


def _serf(c: Checker, value: Any, sim_mode: bool, nodes_override: int | None) -> int:
    """Rule 7: the number of Serf agents, strictly; refused where they cannot run."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_AGENTS:
        raise c.fail(
            "serf",
            f"expected the number of Serf agents, an integer 0..{MAX_AGENTS}, got {value!r:.40}",
        )
    if value and sim_mode:
        raise c.fail(
            "serf",
            f"{value} Serf agents run on real processes only, not in sim (a sim: section "
            "with serf: 0 gives the file a simulated variant)",
        )
    if value and nodes_override is not None:
        raise c.fail(
            "serf",
            "the node count of a file with Serf agents cannot be overridden (-n): the agents "
            "are numbered after the nodes, so its steps would name other members",
        )
    return value


def _property(c: Checker, value: Any) -> str:
    """The ``property:`` an explore failure file names: a built-in or ``module:function``."""
    if value is None:
        return ""
    if not isinstance(value, str) or not value or len(value) > 200:
        raise c.fail("property", "expected a property's name")
    if value not in PROPERTY_NAMES and ":" not in value:
        known = ", ".join(PROPERTY_NAMES)
        raise c.fail("property", f"{value!r}: one of {known}, or module:function")
    if value not in PROPERTY_NAMES and value not in TRUSTED:
        raise c.fail(
            "property", f"{value!r} is code: give --property {value} to run it from this file"
        )
    return value


def _derived(
    c: Checker,
    expects: tuple[Expectation, ...],
    steps: tuple[Step, ...],
    nodes: int,
    settings: Mapping[str, Any],
    confidence: float,
    *,
    real: bool,
) -> tuple[Expectation, ...]:
    """Rule 5: each ``within: auto`` replaced by the bound derived for its step."""
    config = SwimConfig.from_mapping(settings.get("swim") or {})
    out = []
    for e in expects:
        if e.auto:
            if e.after == "start":
                raise c.fail(e.label(), "a derived bound needs 'after' (the step it follows)")
            step = next(s for s in steps if s.name == e.after)
            size = nodes + sum(s.count for s in steps if s.kind == "add" and s.index <= step.index)
            after = step.kind
            if after == "heal":  # what it healed: the last fault before it
                faults = [s.kind for s in steps[: step.index] if s.kind in _FAULTS]
                after = "heal-" + ("partition" if faults[-1:] == ["partition"] else "loss")
            down = len(_down_before(steps, step))
            try:
                bound = derive(
                    e.kind, after, size, config, real=real, confidence=confidence, down=down
                )
            except BoundError as exc:
                raise c.fail(e.label(), str(exc)) from None
            e = replace(e, within=bound.seconds, derived=bound)
        out.append(e)
    return tuple(out)


def _down_before(steps: tuple[Step, ...], step: Step) -> set[int | str]:
    """Members killed, stopped or paused by the steps before ``step`` and not back yet."""
    down: set[int | str] = set()
    for s in steps[: step.index]:
        if s.kind in ("kill", "stop", "pause") and s.target is not None:
            down.add(s.target)
        elif s.kind in ("resume", "restart") and s.target is not None:
            down.discard(s.target)
    return down


def _sim_section(c: Checker, sim: Any) -> tuple[Mapping[str, Any], int | None]:
    """The ``sim:`` section left in place (not merged) and its node count, if any."""
    if not isinstance(sim, Mapping):
        raise c.fail("sim", "expected a mapping, e.g. {nodes: 30}")
    sim_nodes = None
    if "nodes" in sim:
        sim_nodes = c.integer(sim["nodes"], "sim.nodes", low=1, high=5000)
    if "serf" in sim and (type(sim["serf"]) is not int or sim["serf"] != 0):
        raise c.fail(
            "sim.serf", f"the simulation runs no Serf agents: 0 only, got {sim['serf']!r:.40}"
        )
    for key in sim:
        if str(key) not in SIM_KEYS:
            raise c.fail(f"sim.{key}", "not a key the simulation can override")
    return sim, sim_nodes


def _settings(c: Checker, d: Mapping[str, Any]) -> dict[str, Any]:
    """The node configuration sections: ``settings:`` with ``swim:`` and ``workload:`` on top."""
    settings = d.get("settings") or {}
    if not isinstance(settings, Mapping):
        raise c.fail("settings", "expected a mapping of node configuration sections")
    out = {str(k): v for k, v in settings.items()}
    if "swim" in d:
        out["swim"] = d["swim"]
    if "workload" in d:
        w = d["workload"]
        if isinstance(w, bool):
            w = {"enabled": w}
        elif w in ("on", "off"):
            w = {"enabled": w == "on"}
        out["workload"] = w
    swim_cfg = out.get("swim")
    if swim_cfg is not None:
        if not isinstance(swim_cfg, Mapping):
            raise c.fail("swim", "expected a mapping of swim settings")
        try:
            import swim

            swim.SwimConfig.from_mapping(swim_cfg)
        except ValueError as exc:
            raise c.fail("swim", str(exc)) from None
    w = out.get("workload")
    if w is not None and not isinstance(w, Mapping):
        raise c.fail("workload", "expected on, off, true, false or a mapping")
    return out
