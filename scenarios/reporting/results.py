"""A judged run as data: ``results.json`` (what the analysis found, the steps, the HTTP answers,
the digest of a simulated run) and the page beside it, ``report.html``.

Rules:
1. ``results.json`` is JSON without infinities or NaN (``clean``: they become null); an
   accusation list keeps its first ``EVENTS_KEPT`` entries, the counts count them all.
2. A run that could not be carried out has the same keys (``error_results``), its verdict
   ``error`` and its ``error`` the reason, so every reader reads one shape.
3. ``nodes`` counts the rtsim nodes the run started with, ``members`` every member (Serf
   agents too); ``agents`` lists each Serf agent with its view as looked at (``serf
   members``): every change, seconds after the start, and the view at the end.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..format.spec import Scenario
from ..judge.analysis import analyse
from ..judge.properties import judged
from ..judge.trace import Action, Trace, events_digest, view_name
from .report import action_text, render_report
from .runs_page import render_runs

__all__ = ["EVENTS_KEPT", "action_line", "clean", "error_results", "results_of", "write_outputs"]

EVENTS_KEPT = 200  # accusations listed per run in results.json (all are counted)


def clean(x: Any) -> Any:
    """JSON-safe: infinities and NaN become null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [clean(v) for v in x]
    return x


def results_of(
    scenario: Scenario, trace: Trace, mode: str, seed: int, hostfile: str | None = None
) -> dict[str, Any]:
    an = analyse(trace, scenario)
    results: dict[str, Any] = clean(
        {
            "scenario": scenario.name,
            "description": scenario.description,
            "source": scenario.source,
            "mode": mode,
            "hostfile": hostfile,
            "seed": seed,
            "nodes": len(trace.initial) - len(trace.agents),
            "members": len(trace.initial),
            "agents": _agents(trace),
            "duration": round(trace.end - trace.t0, 3),
            "verdict": an.verdict,
            "error": None,
            "settings": dict(scenario.settings),
            "expectations": an.expectations,
            "detection": an.detection,
            "suspicions": {
                "false": sum(1 for a in an.accusations if a["class"] == "false"),
                "expected": sum(1 for a in an.accusations if a["class"] == "expected"),
                "events": an.accusations[:EVENTS_KEPT],
            },
            "false_suspicions": _listed(an.false_suspicions),
            "false_deaths": _listed(an.false_deaths),
            "expected_suspicions": {"count": len(an.accused("suspected", "expected"))},
            "expected_deaths": {"count": len(an.accused("dead", "expected"))},
            "convergence": an.convergence,
            "steps": [
                {
                    "t": trace.rel(a.t),
                    "kind": a.kind,
                    "step": a.step,
                    "nodes": list(a.nodes),
                    "groups": [list(g) for g in a.groups],
                    "value": a.value,
                    **_fault_fields(a),
                    "text": action_line(a, _size_at(trace, a.t)),
                }
                for a in sorted(trace.actions, key=lambda a: a.t)
            ],
            "http": [
                {**asdict(h), "at": trace.rel(h.t), "elapsed": round(h.elapsed, 4)}
                for h in trace.http
            ],
            "events": len(trace.events),
            "collection": trace.collection,
        }
    )
    if trace.storage is not None:
        results["storage"] = trace.storage  # the durability check (``storage`` rule 3)
    if mode == "sim":
        results["events_digest"] = events_digest(trace.events)
    if prop := judged(scenario, trace):
        results["property"] = prop
        if prop["status"] == "fail":
            results["verdict"] = "fail"
    return results


def _agents(trace: Trace) -> list[dict[str, Any]]:
    """Rule 3: every Serf agent's view, as the looks at it found it."""
    out = []
    ordered = sorted(trace.events, key=lambda e: float(e["mono"]))
    for i, name in sorted(trace.agents.items()):
        changes = [
            {
                "t": trace.rel(float(e["mono"])),
                "subject": int(e["subject"]),
                "old": view_name(e.get("old")),
                "new": view_name(e.get("new")),
            }
            for e in ordered
            if e.get("observer") == i and float(e["mono"]) <= trace.end
        ]
        view = {str(c["subject"]): c["new"] for c in changes}
        out.append({"member": i, "name": name, "view": view, "changes": changes[:EVENTS_KEPT]})
    return out


def action_line(a: Action, cluster: int | None = None) -> str:
    """The action's arguments, readable (``report.action_text``): "on all" when it names
    every one of the ``cluster`` nodes there were."""
    step = {"kind": a.kind, "nodes": a.nodes, "groups": a.groups, "value": a.value}
    return action_text({**step, **_fault_fields(a)}, cluster)


def _fault_fields(a: Action) -> dict[str, Any]:
    """A clock's rate, a disk fault's pool, errors and full (only on those steps)."""
    if a.kind == "clock":
        return {"rate": a.rate}
    if a.kind == "disk":
        return {"pool": a.pool, "errors": a.errors, "full": a.full}
    return {}


def _size_at(trace: Trace, t: float) -> int:
    """How many nodes the cluster had at ``t``: the first ones and those added before (a Serf
    agent is no node: "on all" names every node, as a loss on ``all`` acts on them)."""
    added = {i for b in trace.actions if b.kind == "add" and b.t < t for i in b.nodes}
    return len((set(trace.initial) | added) - set(trace.agents))


def _listed(events: list[dict[str, Any]]) -> dict[str, Any]:
    return {"count": len(events), "events": events[:EVENTS_KEPT]}


def error_results(
    scenario: Scenario | None,
    source: str,
    mode: str,
    seed: int | None,
    error: str,
    hostfile: str | None = None,
) -> dict[str, Any]:
    return {
        "scenario": scenario.name if scenario else Path(source).stem,
        "description": scenario.description if scenario else "",
        "source": source,
        "mode": mode,
        "hostfile": hostfile,
        "seed": seed,
        "nodes": scenario.nodes if scenario else None,
        "members": scenario.nodes + scenario.serf if scenario else None,
        "agents": [],
        "duration": None,
        "verdict": "error",
        "error": error,
        "expectations": [],
        "detection": [],
        "suspicions": {"false": 0, "expected": 0, "events": []},
        "false_suspicions": {"count": 0, "events": []},
        "false_deaths": {"count": 0, "events": []},
        "expected_suspicions": {"count": 0},
        "expected_deaths": {"count": 0},
        "convergence": [],
        "steps": [],
        "http": [],
        "events": 0,
        "collection": None,
    }


def write_outputs(
    out: Path, results: dict[str, Any], trace: Trace | None, trace_seed: int | None = None
) -> None:
    """``results.json`` and ``report.html`` (the many-runs page when ``results`` has runs)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(clean(results), indent=2) + "\n")
    if "aggregate" in results:
        page = render_runs(results, trace, trace_seed)
    else:
        page = render_report(results, trace)
    (out / "report.html").write_text(page)
