"""What a chaos test leaves when it fails: a scenario file that replays it and its report.

Rules:
1. ``scenario_of`` writes what the test did as a scenario file (docs/rt_cluster.md): its size,
   seed and swim settings, every fault as a step at its time after the start (named as the
   test named it: ``kill1``, ``heal3``; an ``http`` request is the test's own and left out),
   and every wait as an expectation with the bound it
   was given, counted from the action it followed. ``never_dead: all`` is always expected,
   as ``Cluster.check`` always checks it, and so is every built-in checker a ``check`` ran
   (``file_form``: its expectation, bound included). ``rt_cluster scenario FILE`` (add
   ``--sim`` for a simulated test) plays it again; a netns test's file plays on real
   processes of this host's loopback (the scenario runner has no namespaces), its
   partitions as the nodes' own filters. A plain ``assert`` of the test has no form in the
   file (its replay of such a failure says PASS): ``Failure.lines`` says so. A test's Serf
   agents (``serf=``) are the file's ``serf:``, numbered as the test numbered them.
2. The file is checked by the scenario parser before it is written: what ``write_failure``
   names can be run.
3. The report is the scenario runner's own (``results.json`` and ``report.html``: the
   per-observer timeline), made from the test's own trace, judged against that file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .format.records import TIMED_KINDS, Expectation
from .format.spec import parse_scenario
from .judge.trace import Action, Trace
from .play.chaos import Cluster
from .play.realcluster import changed_settings
from .play.waits import Wait
from .reporting.results import results_of, write_outputs

__all__ = ["Failure", "file_form", "scenario_of", "write_failure"]


def _steps(a: Action, t0: float) -> list[dict[str, Any]]:
    at = max(0.0, a.t - t0)  # full precision: a simulated replay acts at the same moment
    if a.step.endswith(":stop"):
        return []  # a restart's own stop: the restart step stops the process again
    if a.kind in ("kill", "pause", "resume", "restart", "stop"):
        return [{"at": at, "name": a.step, a.kind: a.nodes[0]}]
    if a.kind == "add":
        return [{"at": at, "name": a.step, "add": len(a.nodes)}]
    if a.kind == "partition":
        return [{"at": at, "name": a.step, "partition": [list(g) for g in a.groups]}]
    if a.kind == "heal":
        return [{"at": at, "name": a.step, "heal": True}]
    if a.kind == "http":
        return []  # a request is the test's own, not a fault: the file does not repeat it
    if a.kind == "cut":
        cut = {"from": list(a.groups[0]), "to": list(a.groups[1])}
        return [{"at": at, "name": a.step, "cut": cut}]
    if a.kind == "clock":
        clock = {"node": a.nodes[0], "offset": a.value, "rate": a.rate}
        return [{"at": at, "name": a.step, "clock": clock}]
    if a.kind == "disk":
        disk = {"node": a.nodes[0], "pool": a.pool, "latency_ms": a.value}
        disk.update(errors=a.errors, full=a.full)
        return [{"at": at, "name": a.step, "disk": disk}]
    key = "percent" if a.kind == "loss" else "ms"
    return [
        {"at": at, "name": a.step if k == 0 else f"{a.step}.{k}", a.kind: {"node": i, key: a.value}}
        for k, i in enumerate(a.nodes)
    ]


def _expect(w: Wait) -> dict[str, Any]:
    e: dict[str, Any] = {w.kind: w.node if w.node is not None else True}
    if w.by is not None:
        e["seen_by"] = list(w.by)
    if w.after != "start":
        e["after"] = w.after
    e["within"] = round(max(w.within, 0.01), 3)
    return e


def file_form(e: Expectation | None) -> dict[str, Any] | None:
    """A checker's expectation as a scenario file writes it (docs/rt_cluster.md), bound
    included; None where the file cannot say the same (a user's own checker, or
    ``max_false_suspicions`` of some nodes only: the file's counts every node)."""
    if e is None or (e.kind == "max_false_suspicions" and e.subjects != "all"):
        return None
    value: Any = {
        "dead": e.subject,
        "alive": e.subject,
        "never_dead": e.subjects if e.subjects == "all" else list(e.subjects),
        "max_false_suspicions": e.limit,
    }.get(e.kind, True)
    out: dict[str, Any] = {e.kind: value}
    if e.seen_by != "all":
        out["seen_by"] = list(e.seen_by)
    if e.after != "start":
        out["after"] = e.after
    if e.kind in TIMED_KINDS:
        out["within"] = round(max(e.within, 0.01), 3)
    return out


def _unique(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def scenario_of(c: Cluster, name: str = "") -> dict[str, Any]:
    """The scenario file (as a mapping) that replays what ``c`` did (rule 1)."""
    t0 = c.t0
    now = c.backend.now()
    return {
        "name": name or f"chaos test, seed {c.seed}",
        "description": f"replays a {c.mode} chaos test: its actions, waits and checks",
        "nodes": len(c.initial) - len(c.agents),
        **({"serf": len(c.agents)} if c.agents else {}),
        "seed": c.seed,
        "workload": "off",
        "swim": changed_settings(c.config),
        "duration": round(max(now - t0, 0.0) + 2.0, 3),
        "steps": [s for a in c.actions for s in _steps(a, t0)],
        "expect": _unique(
            [
                {"never_dead": "all"},
                *(_expect(w) for w in c.waits),
                *(e for v in c.checked if (e := file_form(v.expectation)) is not None),
            ]
        ),
    }


class Failure:
    """Where a failed test's artifacts went: the scenario file and the report's folder."""

    def __init__(self, scenario: Path, report: Path) -> None:
        self.scenario = scenario
        self.report = report

    def lines(self, mode: str, whole: bool = False) -> list[str]:
        """What to say of the artifacts; ``whole``: the cluster ran whole simulated nodes,
        which the file (membership steps, no array) does not bring back."""
        flag = " --sim" if mode == "sim" else ""
        where = " on real processes, without namespaces" if mode == "netns" else ""
        if whole:
            where = " of its actions on the membership simulator; the pytest line replays this run"
        return [
            f"scenario: {self.scenario} (replay{where}: rt_cluster scenario {self.scenario}{flag})",
            "  (the file holds the test's actions, waits and checks, not its plain asserts: "
            "a failed assert replays to verdict: PASS)",
            f"report: {self.report / 'report.html'}",
        ]


def write_failure(c: Cluster, out: Path, name: str = "") -> Failure:
    """Write ``out/scenario.yaml`` (checked, rule 2) and ``out/report.html`` with
    ``results.json`` (rule 3) for the closed cluster ``c`` (its history up to the close)."""
    return _write(c, c.final_history().trace, out, name)


def _write(c: Cluster, trace: Trace, out: Path, name: str) -> Failure:
    text = yaml.safe_dump(scenario_of(c, name), sort_keys=False)
    path = out / "scenario.yaml"
    scenario = parse_scenario(text, str(path), sim=c.mode == "sim")
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    write_outputs(out, results_of(scenario, trace, trace.mode, c.seed), trace)
    return Failure(path, out)
