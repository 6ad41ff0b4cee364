"""The ``steps:`` and ``expect:`` lists of a scenario file, checked into ``Step`` and
``Expectation`` records.

Rules:
1. Steps come in time order with unique names (``start`` is reserved); each has ``at`` and
   exactly one action, and only the keys that action allows.
2. Node ids are checked against the cluster as it is at that step: ``nodes`` at the start plus
   one id per node added before it; expectations see every node the steps ever add.
3. The first problem found is the one reported, as a ``ScenarioError`` naming the step or
   expectation.
4. A Serf agent (``serf:``, ``records`` rule 3) takes the node steps (kill, stop, pause,
   resume, restart) as a node does; what an agent has no door for is refused here: an
   ``http`` step (no dashboard), ``loss`` or ``delay`` on it (no fault injection: on ``all``
   they act on the rtsim nodes), a partition that puts agents in two groups (only rtsim nodes
   drop packets), and ``induct`` (a node of a mixed cluster joins by name).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from .faultvalues import check_clock, check_disk
from .records import (
    EXPECT_KINDS,
    NODE_STEPS,
    STEP_KINDS,
    TIMED_KINDS,
    Expectation,
    HttpExpect,
    Step,
    Target,
)
from .values import Checker

_CUT_KEYS, _CLOCK_KEYS = {"from", "to"}, {"node", "offset", "rate"}
_DISK_KEYS = {"node", "pool", "latency_ms", "errors", "full"}

__all__ = ["parse_expectations", "parse_steps"]

_EXTRA = {"pause": ("for",), "add": ("induct",)}  # keys a step allows besides at, name, action
_HTTP_KEYS = {"node", "path", "method", "expect"}


# ---- steps ----------------------------------------------------------------------------------


def parse_steps(c: Checker, raw: Any, nodes: int, agents: tuple[int, ...] = ()) -> tuple[Step, ...]:
    """The steps of a cluster that starts with ``nodes`` members, ``agents`` of them Serf
    agents (rule 4)."""
    if not isinstance(raw, list):
        raise c.fail("steps", "expected a list of steps")
    out: list[Step] = []
    names: set[str] = set()
    count = nodes
    last_at = 0.0
    for i, item in enumerate(raw):
        kind = _step_kind(c, i, item)
        where = f"step {i + 1} ({kind})"
        if "at" not in item:
            raise c.fail(where, "missing 'at' (seconds after the start)")
        at = c.number(item["at"], f"{where}: at")
        if at < last_at:
            raise c.fail(where, f"at {at:g}s comes before the previous step ({last_at:g}s)")
        last_at = at
        name = str(item.get("name") or f"{kind}{i + 1}")
        if name in names or name == "start":
            raise c.fail(where, f"step name {name!r} is used twice")
        names.add(name)
        step = _STEPS[kind](c, Step(i, at, kind, name), item, where, count)
        if agents:
            _refused_on_agents(c, step, where, count, agents)
        if kind == "add":
            count += step.count
        out.append(step)
    return tuple(out)


def _step_kind(c: Checker, i: int, item: Any) -> str:
    """The one action of step ``i``, once its keys are known to be allowed."""
    where = f"step {i + 1}"
    if not isinstance(item, Mapping):
        raise c.fail(where, f"expected a mapping like {{at: 2, kill: 1}}, got {item!r}")
    kinds = [k for k in item if k in STEP_KINDS]
    if len(kinds) != 1:
        raise c.fail(
            where,
            f"needs exactly one action of: {', '.join(STEP_KINDS)} (got "
            f"{', '.join(map(str, item)) or 'none'})",
        )
    kind = str(kinds[0])
    allowed = {"at", "name", kind, *_EXTRA.get(kind, ())}
    extra = sorted(set(map(str, item)) - allowed)
    if extra:
        raise c.fail(
            f"step {i + 1} ({kind})", f"unknown key {extra[0]!r} (allowed: {sorted(allowed)})"
        )
    return kind


# Each takes the step with its common fields, the step's mapping (the action's value is
# ``item[s.kind]``), the place for messages and the number of nodes at that step; it returns
# the complete step.
_StepParser = Callable[[Checker, Step, Mapping[str, Any], str, int], Step]


def _node_step(c: Checker, s: Step, item: Mapping[str, Any], where: str, count: int) -> Step:
    v = item[s.kind]
    target = c.node(v, where, count, allow=("leader",))
    dur = None
    if s.kind == "pause" and "for" in item:
        dur = c.number(item["for"], f"{where}: for", low=0.001)
    return replace(s, target=target, duration=dur)


def _add_step(c: Checker, s: Step, item: Mapping[str, Any], where: str, count: int) -> Step:
    v = item[s.kind]
    n = 1 if v is True or v is None else c.integer(v, where, low=1, high=100)
    induct = item.get("induct", False)
    if not isinstance(induct, bool):
        raise c.fail(where, f"induct: expected true or false, got {induct!r}")
    return replace(s, count=n, induct=induct)


def _heal_step(c: Checker, s: Step, item: Mapping[str, Any], where: str, count: int) -> Step:
    return s


def _partition_step(c: Checker, s: Step, item: Mapping[str, Any], where: str, count: int) -> Step:
    v = item[s.kind]
    if not isinstance(v, list) or len(v) < 2:
        raise c.fail(where, "expected at least two groups, e.g. [[0, 1], rest]")
    groups: list[tuple[int, ...]] = []
    seen: set[int] = set()
    rest = None
    for k, g in enumerate(v):
        if g == "rest":
            if rest is not None:
                raise c.fail(where, "only one group can be 'rest'")
            rest = k
            groups.append(())
            continue
        ids = c.id_set(g, where, count)
        if isinstance(ids, str):
            raise c.fail(where, "a group is a list of node ids, or 'rest'")
        for x in ids:
            if x in seen:
                raise c.fail(where, f"node {x} is in more than one group")
            seen.add(x)
        groups.append(tuple(ids))
    missing = [x for x in range(count) if x not in seen]
    if rest is None and missing:
        raise c.fail(
            where,
            f"node {missing[0]} is in no group (list every node, or write "
            "'rest' for a group of the others)",
        )
    return replace(s, groups=tuple(groups), rest=rest)


def _fault_step(c: Checker, s: Step, item: Mapping[str, Any], where: str, count: int) -> Step:
    v = item[s.kind]
    unit, high = ("percent", 100.0) if s.kind == "loss" else ("ms", 60000.0)
    if not isinstance(v, Mapping) or set(v) - {"node", unit} or unit not in v:
        raise c.fail(where, f"expected {{node: ID or all, {unit}: N}}, got {v!r}")
    target = c.node(v.get("node", "all"), where, count, allow=("all",))
    value = c.number(v[unit], f"{where}: {unit}", high=high)
    return replace(s, target=target, value=value)


def _ids(c: Checker, v: Any, where: str, count: int) -> tuple[int, ...]:
    """Node ids as a partition group takes them, or a string "0,1" / "2-4,6"."""
    if isinstance(v, str) and "," in v:
        v = [
            int(x) if x.strip().isdigit() and x.strip().isascii() else x.strip()
            for x in v.split(",")
        ]
    ids = c.id_set(v, where, count)
    return tuple(range(count)) if isinstance(ids, str) else tuple(sorted(set(ids)))


def _keys(c: Checker, v: Any, where: str, allowed: set[str], required: set[str], form: str) -> None:
    if not isinstance(v, Mapping):
        raise c.fail(where, f"expected {form}, got {v!r}")
    extra = sorted(set(map(str, v)) - allowed)
    if extra:
        raise c.fail(where, f"unknown key {extra[0]!r} (allowed: {sorted(allowed)})")
    missing = sorted(required - set(map(str, v)))
    if missing:
        raise c.fail(where, f"missing {missing[0]!r} (expected {form})")


def _cut_step(c: Checker, s: Step, item: Mapping[str, Any], where: str, count: int) -> Step:
    v = item[s.kind]
    _keys(c, v, where, _CUT_KEYS, _CUT_KEYS, "{from: IDS, to: IDS}")
    froms, tos = (
        _ids(c, v["from"], f"{where}: from", count),
        _ids(c, v["to"], f"{where}: to", count),
    )
    if both := sorted(set(froms) & set(tos)):
        raise c.fail(where, f"a cut from a node to itself: node {both[0]} is in from and to")
    return replace(s, groups=(froms, tos))


def _clock_step(c: Checker, s: Step, item: Mapping[str, Any], where: str, count: int) -> Step:
    v = item[s.kind]
    _keys(c, v, where, _CLOCK_KEYS, {"node"}, "{node: ID, offset: S, rate: R}")
    target = c.node(v["node"], f"{where}: node", count)
    try:
        offset, rate = check_clock(v.get("offset", 0.0), v.get("rate", 1.0))
    except ValueError as exc:
        raise c.fail(where, str(exc)) from None
    return replace(s, target=target, value=offset, rate=rate)


def _disk_step(c: Checker, s: Step, item: Mapping[str, Any], where: str, count: int) -> Step:
    v = item[s.kind]
    form = "{node: ID, pool: NAME, latency_ms: M, errors: PCT, full: BOOL}"
    _keys(c, v, where, _DISK_KEYS, {"node", "pool"}, form)
    target = c.node(v["node"], f"{where}: node", count)
    full = v.get("full", False)
    if not isinstance(full, bool):
        raise c.fail(where, f"full: expected true or false, got {full!r}")
    try:
        pool, ms, pct = check_disk(v["pool"], v.get("latency_ms", 0.0), v.get("errors", 0.0))
    except ValueError as exc:
        raise c.fail(where, str(exc)) from None
    return replace(s, target=target, pool=pool, value=ms, errors=pct, full=full)


def _http_step(c: Checker, s: Step, item: Mapping[str, Any], where: str, count: int) -> Step:
    v = item[s.kind]
    if not isinstance(v, Mapping):
        raise c.fail(where, f"expected {{node: ID, path: /api/...}}, got {v!r}")
    extra = sorted(set(map(str, v)) - _HTTP_KEYS)
    if extra:
        raise c.fail(where, f"unknown key {extra[0]!r} (node, path, method, expect)")
    target = c.node(v.get("node"), where, count)
    path = v.get("path")
    if not isinstance(path, str) or not path.startswith("/"):
        raise c.fail(where, f"path: expected an absolute path like /api/health, got {path!r}")
    method = str(v.get("method", "GET")).upper()
    if method not in ("GET", "POST", "HEAD"):
        raise c.fail(where, f"method: expected GET, POST or HEAD, got {method!r}")
    expect = None
    if "expect" in v:
        expect = _http_expect(c, v["expect"], where)
    return replace(s, target=target, method=method, path=path, expect=expect)


def _http_expect(c: Checker, e: Any, where: str) -> HttpExpect:
    if not isinstance(e, Mapping) or "status" not in e:
        raise c.fail(where, "expect: expected {status: 503, within: [5, 6]}")
    status = c.integer(e["status"], f"{where}: expect.status", low=100, high=599)
    w = e.get("within", 10.0)
    if isinstance(w, list) and len(w) == 2:
        lo = c.number(w[0], f"{where}: expect.within")
        hi = c.number(w[1], f"{where}: expect.within")
    else:
        lo, hi = 0.0, c.number(w, f"{where}: expect.within")
    if hi < lo:
        raise c.fail(where, f"expect.within: [{lo:g}, {hi:g}] is an empty window")
    return HttpExpect(status, (lo, hi))


_STEPS: dict[str, _StepParser] = {
    **dict.fromkeys(NODE_STEPS, _node_step),
    "add": _add_step,
    "heal": _heal_step,
    "partition": _partition_step,
    "loss": _fault_step,
    "delay": _fault_step,
    "http": _http_step,
    "cut": _cut_step,
    "clock": _clock_step,
    "disk": _disk_step,
}


def _refused_on_agents(
    c: Checker, s: Step, where: str, count: int, agents: tuple[int, ...]
) -> None:
    """Rule 4: what a Serf agent has no door for."""
    if s.kind == "add" and s.induct:
        raise c.fail(
            where, "induct: a node of a cluster with Serf agents joins by name; leave it out"
        )
    if s.kind == "http" and s.target in agents:
        raise c.fail(where, f"member {s.target} is a Serf agent (serf-{s.target}): no dashboard")
    if s.kind in ("loss", "delay", "clock", "disk") and s.target in agents:
        raise c.fail(
            where,
            f"member {s.target} is a Serf agent (serf-{s.target}), without fault injection "
            f"({s.kind} on all acts on the rtsim nodes)",
        )
    if s.kind == "cut" and set(s.groups[0]) & set(agents):
        raise c.fail(where, "a Serf agent cannot cut what it sends (no fault injection)")
    if s.kind == "partition":
        groups = s.partition_groups(list(range(count)))
        split = [g for g in groups if set(g) & set(agents)]
        if len(split) > 1:
            names = ", ".join(f"serf-{i}" for g in split for i in g if i in agents)
            raise c.fail(
                where,
                f"Serf agents {names} are in different groups: only rtsim nodes drop packets, "
                "so the path between two agents cannot be cut; put every agent in one group",
            )


# ---- expectations ---------------------------------------------------------------------------


def parse_expectations(
    c: Checker, raw: Any, names: set[str], nodes: int, steps: tuple[Step, ...]
) -> tuple[Expectation, ...]:
    """The expectations, given the step ``names`` they may refer to."""
    if not isinstance(raw, list):
        raise c.fail("expect", "expected a list of expectations")
    count = nodes + sum(s.count for s in steps if s.kind == "add")
    return tuple(_expectation(c, i, item, names, count) for i, item in enumerate(raw))


def _expectation(c: Checker, i: int, item: Any, names: set[str], count: int) -> Expectation:
    where = f"expectation {i + 1}"
    if not isinstance(item, Mapping):
        raise c.fail(where, f"expected a mapping like {{dead: 1, within: 8}}, got {item!r}")
    kinds = [k for k in item if k in EXPECT_KINDS]
    if len(kinds) != 1:
        raise c.fail(where, f"needs exactly one of: {', '.join(EXPECT_KINDS)}")
    kind = str(kinds[0])
    where = f"expectation {i + 1} ({kind})"
    allowed = {kind, "seen_by", "within", "after"}
    extra = sorted(set(map(str, item)) - allowed)
    if extra:
        raise c.fail(where, f"unknown key {extra[0]!r} (allowed: {sorted(allowed)})")
    v = item[kind]
    after = str(item.get("after", "start"))
    if after != "start" and after not in names:
        known = ", ".join(["start", *sorted(names)])
        raise c.fail(where, f"after: no step named {after!r} (steps: {known})")
    seen_by = c.id_set(item.get("seen_by", "all"), f"{where}: seen_by", count)
    within, auto = 0.0, False
    if kind in TIMED_KINDS:
        w = item.get("within", "auto")
        if w == "auto":
            auto = True  # derived from the protocol's timing (``bounds``)
        else:
            within = c.number(w, f"{where}: within", low=0.001)
    subject: Target | None = None
    subjects: tuple[int, ...] | str = "all"
    limit = 0
    if kind in ("dead", "alive"):
        subject = c.node(v, where, count, allow=("leader",))
        if subject == "leader" and after == "start":
            raise c.fail(where, "'leader' needs 'after' (the leader at that step)")
    elif kind == "never_dead":
        subjects = c.id_set(v, where, count)
    elif kind == "max_false_suspicions":
        limit = c.integer(v, where, low=0, high=10**9)
    elif v not in (True, None, "all"):
        raise c.fail(where, f"expected true, got {v!r}")
    return Expectation(i, kind, subject, subjects, seen_by, within, after, limit=limit, auto=auto)
