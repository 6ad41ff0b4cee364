"""Scenario files: YAML parsed and checked into frozen records, before anything runs.

Rules:
1. Every problem is one ``ScenarioError`` whose message names the file, the step (or
   expectation) and what is wrong; nothing is started for a file that does not check.
2. Node ids are checked against the cluster the steps build: ``nodes`` at the start, plus one
   id per ``add`` (ids ``nodes``, ``nodes+1``, ...). ``leader`` names the leader at that moment.
3. Times are seconds after the start (the moment the cluster has converged).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["Expectation", "Scenario", "ScenarioError", "Step", "load_scenario", "parse_scenario"]

STEP_KINDS = (
    "kill",
    "stop",
    "pause",
    "resume",
    "restart",
    "add",
    "partition",
    "heal",
    "loss",
    "delay",
    "http",
)
EXPECT_KINDS = ("dead", "never_dead", "alive", "leader_change", "converged")
NODE_STEPS = ("kill", "stop", "pause", "resume", "restart")
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
}
Target = int | str  # a node id, "leader", or "all" where allowed


class ScenarioError(Exception):
    """A scenario file that cannot be run; the message names the file, the step, the problem."""


@dataclass(frozen=True, slots=True)
class HttpExpect:
    status: int
    within: tuple[float, float]  # the answer arrives between these seconds after the request


@dataclass(frozen=True, slots=True)
class Step:
    """One timed action. ``target`` is a node id or ``leader`` for node steps."""

    index: int
    at: float
    kind: str
    name: str
    target: Target | None = None
    duration: float | None = None  # pause: resume after this many seconds
    count: int = 1  # add: how many nodes
    induct: bool = False
    groups: tuple[tuple[int, ...], ...] = ()  # partition
    rest: int | None = None  # partition: the index of the group written ``rest``
    value: float = 0.0  # loss percent, delay ms
    method: str = "GET"  # http
    path: str = ""
    expect: HttpExpect | None = None

    def label(self) -> str:
        return f"step {self.index + 1} ({self.name})"

    def partition_groups(self, ids: list[int]) -> tuple[tuple[int, ...], ...]:
        """The groups with ``rest`` filled in from ``ids`` (the nodes that exist now)."""
        listed = {i for g in self.groups for i in g}
        rest = tuple(i for i in ids if i not in listed)
        return tuple(rest if k == self.rest else g for k, g in enumerate(self.groups))


@dataclass(frozen=True, slots=True)
class Expectation:
    index: int
    kind: str
    subject: Target | None = None  # dead/alive: a node id or "leader" (as of ``after``)
    subjects: tuple[int, ...] | str = "all"  # never_dead
    seen_by: tuple[int, ...] | str = "all"
    within: float = 0.0
    after: str = "start"  # a step name, or "start"

    def label(self) -> str:
        return f"expectation {self.index + 1} ({self.kind})"


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    source: str
    nodes: int
    seed: int
    settings: Mapping[str, Any]  # node configuration sections (swim, workload, ...)
    steps: tuple[Step, ...]
    expectations: tuple[Expectation, ...]
    duration: float
    description: str = ""
    sim_nodes: int | None = None
    sim_overrides: Mapping[str, Any] = field(default_factory=dict)

    @property
    def swim(self) -> Mapping[str, Any]:
        value = self.settings.get("swim") or {}
        return value if isinstance(value, Mapping) else {}

    @property
    def workload(self) -> bool:
        w = self.settings.get("workload")
        return bool(w.get("enabled", True)) if isinstance(w, Mapping) else True

    def step(self, name: str) -> Step:
        for s in self.steps:
            if s.name == name:
                return s
        raise KeyError(name)

    def node_count(self) -> int:
        return self.nodes + sum(s.count for s in self.steps if s.kind == "add")


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None
    return parse_scenario(text, str(path))


def parse_scenario(
    text: str, source: str, *, nodes: int | None = None, sim: bool = False
) -> Scenario:
    """Check a scenario; ``nodes`` overrides its size. With ``sim`` the keys of its ``sim:``
    section (``nodes``, ``steps``, ``expect``, ``duration``, ...) replace the top-level ones."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{source}: not valid YAML: {exc}") from None
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{source}: expected a mapping with nodes, steps and expect")
    if sim and isinstance(data.get("sim"), Mapping):
        over = dict(data["sim"])
        bad = sorted(set(map(str, over)) - (TOP_KEYS - {"sim", "name", "description"}))
        if bad:
            raise ScenarioError(f"{source}: sim.{bad[0]}: not a key the simulation can override")
        data = {**data, **over, "sim": {}}
    return _Parser(source).scenario(data, nodes)


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, problem: str) -> ScenarioError:
        return ScenarioError(f"{self.source}: {where}: {problem}")

    # ---- top level -----------------------------------------------------------------------

    def scenario(self, d: Mapping[str, Any], nodes_override: int | None) -> Scenario:
        unknown = sorted(set(map(str, d)) - TOP_KEYS)
        if unknown:
            raise self.fail(unknown[0], f"unknown key (known: {', '.join(sorted(TOP_KEYS))})")
        nodes = self.integer(d.get("nodes"), "nodes", low=1, high=1000)
        sim = d.get("sim") or {}
        if not isinstance(sim, Mapping):
            raise self.fail("sim", "expected a mapping, e.g. {nodes: 30}")
        sim_nodes = None
        if "nodes" in sim:
            sim_nodes = self.integer(sim["nodes"], "sim.nodes", low=1, high=5000)
        for key in sim:
            if str(key) not in TOP_KEYS - {"sim", "name", "description"}:
                raise self.fail(f"sim.{key}", "not a key the simulation can override")
        if nodes_override is not None:
            nodes = nodes_override
        seed = self.integer(d.get("seed", 0), "seed", low=0, high=2**63)
        settings = self.settings(d)
        steps = self.steps(d.get("steps") or [], nodes)
        names = {s.name for s in steps}
        expects = self.expectations(d.get("expect") or [], names, nodes, steps)
        if "duration" in d:
            duration = self.number(d["duration"], "duration", low=0.1)
        else:
            last = max((s.at + (s.duration or 0) for s in steps), default=0.0)
            bound = max((e.within for e in expects), default=0.0)
            http = max((s.expect.within[1] for s in steps if s.expect), default=0.0)
            duration = last + max(bound, http) + 2.0
        for s in steps:
            if s.at > duration:
                raise self.fail(s.label(), f"at {s.at:g}s is after the end (duration {duration:g})")
        return Scenario(
            name=str(d.get("name") or Path(self.source).stem),
            source=self.source,
            nodes=nodes,
            seed=seed,
            settings=settings,
            steps=steps,
            expectations=expects,
            duration=duration,
            description=str(d.get("description") or ""),
            sim_nodes=sim_nodes,
            sim_overrides=dict(sim),
        )

    def settings(self, d: Mapping[str, Any]) -> dict[str, Any]:
        settings = d.get("settings") or {}
        if not isinstance(settings, Mapping):
            raise self.fail("settings", "expected a mapping of node configuration sections")
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
                raise self.fail("swim", "expected a mapping of swim settings")
            try:
                import swim

                swim.SwimConfig.from_mapping(swim_cfg)
            except ValueError as exc:
                raise self.fail("swim", str(exc)) from None
        w = out.get("workload")
        if w is not None and not isinstance(w, Mapping):
            raise self.fail("workload", "expected on, off, true, false or a mapping")
        return out

    # ---- values --------------------------------------------------------------------------

    def number(self, v: Any, where: str, *, low: float = 0.0, high: float | None = None) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise self.fail(where, f"expected a number, got {v!r}")
        if v < low or (high is not None and v > high):
            rng = f"{low:g}..{high:g}" if high is not None else f">= {low:g}"
            raise self.fail(where, f"{v!r} is out of range ({rng})")
        return float(v)

    def integer(self, v: Any, where: str, *, low: int = 0, high: int | None = None) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(where, f"expected an integer, got {v!r}")
        if v < low or (high is not None and v > high):
            raise self.fail(where, f"{v} is out of range ({low}..{high})")
        return v

    def node(self, v: Any, where: str, count: int, *, allow: tuple[str, ...] = ()) -> Target:
        if isinstance(v, str) and v in allow:
            return v
        if isinstance(v, bool) or not isinstance(v, int):
            extra = f" or {' / '.join(allow)}" if allow else ""
            raise self.fail(where, f"expected a node id{extra}, got {v!r}")
        if not 0 <= v < count:
            raise self.fail(where, f"node {v} does not exist (nodes 0..{count - 1} at that time)")
        return v

    def id_set(self, v: Any, where: str, count: int) -> tuple[int, ...] | str:
        """``all``, an id, a range ``"3-7"`` (inclusive) or a list of ids and ranges."""
        if v == "all":
            return "all"
        if not isinstance(v, list):
            v = [v]
        if not v:
            raise self.fail(where, "expected 'all' or a list of node ids, got []")
        out: list[int] = []
        for x in v:
            if isinstance(x, str) and "-" in x:
                lo, _, hi = x.partition("-")
                if not (lo.strip().isdigit() and hi.strip().isdigit()) or int(lo) > int(hi):
                    raise self.fail(where, f"bad range {x!r}: expected like '3-7'")
                out += [int(self.node(i, where, count)) for i in range(int(lo), int(hi) + 1)]
            else:
                out.append(int(self.node(x, where, count)))
        return tuple(out)

    # ---- steps ---------------------------------------------------------------------------

    def steps(self, raw: Any, nodes: int) -> tuple[Step, ...]:
        if not isinstance(raw, list):
            raise self.fail("steps", "expected a list of steps")
        out: list[Step] = []
        names: set[str] = set()
        count = nodes
        last_at = 0.0
        for i, item in enumerate(raw):
            where = f"step {i + 1}"
            if not isinstance(item, Mapping):
                raise self.fail(where, f"expected a mapping like {{at: 2, kill: 1}}, got {item!r}")
            kinds = [k for k in item if k in STEP_KINDS]
            if len(kinds) != 1:
                raise self.fail(
                    where,
                    f"needs exactly one action of: {', '.join(STEP_KINDS)} (got "
                    f"{', '.join(map(str, item)) or 'none'})",
                )
            kind = kinds[0]
            where = f"step {i + 1} ({kind})"
            allowed = {"at", "name", kind, *_EXTRA.get(kind, ())}
            extra = sorted(set(map(str, item)) - allowed)
            if extra:
                raise self.fail(where, f"unknown key {extra[0]!r} (allowed: {sorted(allowed)})")
            if "at" not in item:
                raise self.fail(where, "missing 'at' (seconds after the start)")
            at = self.number(item["at"], f"{where}: at")
            if at < last_at:
                raise self.fail(where, f"at {at:g}s comes before the previous step ({last_at:g}s)")
            last_at = at
            name = str(item.get("name") or f"{kind}{i + 1}")
            if name in names or name == "start":
                raise self.fail(where, f"step name {name!r} is used twice")
            names.add(name)
            step = self.step(i, at, kind, name, item, where, count)
            if kind == "add":
                count += step.count
            out.append(step)
        return tuple(out)

    def step(
        self,
        i: int,
        at: float,
        kind: str,
        name: str,
        item: Mapping[str, Any],
        where: str,
        count: int,
    ) -> Step:
        v = item[kind]
        if kind in NODE_STEPS:
            target = self.node(v, where, count, allow=("leader",))
            dur = None
            if kind == "pause" and "for" in item:
                dur = self.number(item["for"], f"{where}: for", low=0.001)
            return Step(i, at, kind, name, target=target, duration=dur)
        if kind == "add":
            n = 1 if v is True or v is None else self.integer(v, where, low=1, high=100)
            induct = item.get("induct", False)
            if not isinstance(induct, bool):
                raise self.fail(where, f"induct: expected true or false, got {induct!r}")
            return Step(i, at, kind, name, count=n, induct=induct)
        if kind == "heal":
            return Step(i, at, kind, name)
        if kind == "partition":
            if not isinstance(v, list) or len(v) < 2:
                raise self.fail(where, "expected at least two groups, e.g. [[0, 1], rest]")
            groups: list[tuple[int, ...]] = []
            seen: set[int] = set()
            rest = None
            for k, g in enumerate(v):
                if g == "rest":
                    if rest is not None:
                        raise self.fail(where, "only one group can be 'rest'")
                    rest = k
                    groups.append(())
                    continue
                ids = self.id_set(g, where, count)
                if isinstance(ids, str):
                    raise self.fail(where, "a group is a list of node ids, or 'rest'")
                for x in ids:
                    if x in seen:
                        raise self.fail(where, f"node {x} is in more than one group")
                    seen.add(x)
                groups.append(tuple(ids))
            missing = [x for x in range(count) if x not in seen]
            if rest is None and missing:
                raise self.fail(
                    where,
                    f"node {missing[0]} is in no group (list every node, or write "
                    "'rest' for a group of the others)",
                )
            return Step(i, at, kind, name, groups=tuple(groups), rest=rest)
        if kind in ("loss", "delay"):
            unit, high = ("percent", 100.0) if kind == "loss" else ("ms", 60000.0)
            if not isinstance(v, Mapping) or set(v) - {"node", unit} or unit not in v:
                raise self.fail(where, f"expected {{node: ID or all, {unit}: N}}, got {v!r}")
            target = self.node(v.get("node", "all"), where, count, allow=("all",))
            value = self.number(v[unit], f"{where}: {unit}", high=high)
            return Step(i, at, kind, name, target=target, value=value)
        # http
        if not isinstance(v, Mapping):
            raise self.fail(where, f"expected {{node: ID, path: /api/...}}, got {v!r}")
        extra = sorted(set(map(str, v)) - {"node", "path", "method", "expect"})
        if extra:
            raise self.fail(where, f"unknown key {extra[0]!r} (node, path, method, expect)")
        target = self.node(v.get("node"), where, count)
        path = v.get("path")
        if not isinstance(path, str) or not path.startswith("/"):
            raise self.fail(
                where, f"path: expected an absolute path like /api/health, got {path!r}"
            )
        method = str(v.get("method", "GET")).upper()
        if method not in ("GET", "POST", "HEAD"):
            raise self.fail(where, f"method: expected GET, POST or HEAD, got {method!r}")
        expect = None
        if "expect" in v:
            expect = self.http_expect(v["expect"], where)
        return Step(i, at, kind, name, target=target, method=method, path=path, expect=expect)

    def http_expect(self, e: Any, where: str) -> HttpExpect:
        if not isinstance(e, Mapping) or "status" not in e:
            raise self.fail(where, "expect: expected {status: 503, within: [5, 6]}")
        status = self.integer(e["status"], f"{where}: expect.status", low=100, high=599)
        w = e.get("within", 10.0)
        if isinstance(w, list) and len(w) == 2:
            lo = self.number(w[0], f"{where}: expect.within")
            hi = self.number(w[1], f"{where}: expect.within")
        else:
            lo, hi = 0.0, self.number(w, f"{where}: expect.within")
        if hi < lo:
            raise self.fail(where, f"expect.within: [{lo:g}, {hi:g}] is an empty window")
        return HttpExpect(status, (lo, hi))

    # ---- expectations --------------------------------------------------------------------

    def expectations(
        self, raw: Any, names: set[str], nodes: int, steps: tuple[Step, ...]
    ) -> tuple[Expectation, ...]:
        if not isinstance(raw, list):
            raise self.fail("expect", "expected a list of expectations")
        count = nodes + sum(s.count for s in steps if s.kind == "add")
        out = []
        for i, item in enumerate(raw):
            where = f"expectation {i + 1}"
            if not isinstance(item, Mapping):
                raise self.fail(
                    where, f"expected a mapping like {{dead: 1, within: 8}}, got {item!r}"
                )
            kinds = [k for k in item if k in EXPECT_KINDS]
            if len(kinds) != 1:
                raise self.fail(where, f"needs exactly one of: {', '.join(EXPECT_KINDS)}")
            kind = kinds[0]
            where = f"expectation {i + 1} ({kind})"
            allowed = {kind, "seen_by", "within", "after"}
            extra = sorted(set(map(str, item)) - allowed)
            if extra:
                raise self.fail(where, f"unknown key {extra[0]!r} (allowed: {sorted(allowed)})")
            v = item[kind]
            after = str(item.get("after", "start"))
            if after != "start" and after not in names:
                known = ", ".join(["start", *sorted(names)])
                raise self.fail(where, f"after: no step named {after!r} (steps: {known})")
            seen_by = self.id_set(item.get("seen_by", "all"), f"{where}: seen_by", count)
            within = 0.0
            if kind in ("dead", "alive", "leader_change", "converged"):
                if "within" not in item:
                    raise self.fail(where, "missing 'within' (seconds after 'after')")
                within = self.number(item["within"], f"{where}: within", low=0.001)
            subject: Target | None = None
            subjects: tuple[int, ...] | str = "all"
            if kind in ("dead", "alive"):
                subject = self.node(v, where, count, allow=("leader",))
                if subject == "leader" and after == "start":
                    raise self.fail(where, "'leader' needs 'after' (the leader at that step)")
            elif kind == "never_dead":
                subjects = self.id_set(v, where, count)
            elif v not in (True, None, "all"):
                raise self.fail(where, f"expected true, got {v!r}")
            out.append(Expectation(i, kind, subject, subjects, seen_by, within, after))
        return tuple(out)


_EXTRA = {"pause": ("for",), "add": ("induct",)}
