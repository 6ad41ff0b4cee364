"""Many runs of one scenario summed up: pass rates per expectation and percentiles of every figure.

Rules:
1. Pure: a function of the runs' ``results`` (the one-run shape of ``results.results_of``), in
   seed order; nothing here runs anything.
2. Percentiles are by nearest rank over all K runs; a run in which the thing did not happen
   (a death never seen, a cluster that never converged) counts as +infinity, shown as null,
   and is counted in ``missing``: a tail of "never" is not hidden by leaving it out.
3. The verdict: ``error`` when no run could be carried out, else ``pass`` when the share of
   runs that passed is at least the scenario's ``pass_rate`` (default 1: every run), else
   ``fail``. An error run counts as a failed one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["aggregate", "percentiles", "run_line"]

INF = math.inf
Results = dict[str, Any]


def percentiles(values: Sequence[float | None], unit: str = "s") -> dict[str, Any]:
    """n, missing, p50/p90/p99/p99.9/max (nearest rank; None counts as infinity) and the
    values."""
    xs = sorted(INF if v is None else float(v) for v in values)

    def rank(p: float) -> float | None:
        if not xs:
            return None
        v = xs[min(len(xs) - 1, max(0, math.ceil(p * len(xs)) - 1))]
        return None if v == INF else round(v, 4)

    return {
        "n": len(xs),
        "missing": sum(1 for v in values if v is None),
        "p50": rank(0.5),
        "p90": rank(0.9),
        "p99": rank(0.99),
        "p99.9": rank(0.999),
        "max": rank(1.0),
        "unit": unit,
        "values": [None if v is None else round(float(v), 4) for v in values],
    }


def aggregate(runs: list[Results], pass_rate: float) -> dict[str, Any]:
    """The ``aggregate`` section and the verdict of K runs (rule 3)."""
    ok = [r for r in runs if r["verdict"] != "error"]
    passed = sum(1 for r in runs if r["verdict"] == "pass")
    rate = passed / len(runs) if runs else 0.0
    verdict = "pass" if rate >= pass_rate - 1e-12 else "fail"
    if not ok:
        verdict = "error"
    section = {
        "runs": len(runs),
        "passed": passed,
        "failed": sum(1 for r in runs if r["verdict"] == "fail"),
        "errors": len(runs) - len(ok),
        "pass_rate": round(rate, 6),
        "expectations": _expectations(ok),
        "detection": _detection(ok),
        "convergence": _by_step(ok, "convergence", "seconds"),
        **{key: percentiles([_count(r, key) for r in ok], "events") for key in _COUNTS},
    }
    return {"verdict": verdict, "aggregate": section}


_COUNTS = ("false_suspicions", "false_deaths", "expected_suspicions", "expected_deaths")


def _count(r: Results, key: str) -> int:
    return int((r.get(key) or {}).get("count", 0))


def _expectations(runs: list[Results]) -> list[dict[str, Any]]:
    if not runs:
        return []
    out = []
    for k, first in enumerate(runs[0]["expectations"]):
        rows = [r["expectations"][k] for r in runs if k < len(r["expectations"])]
        applicable = [x for x in rows if x["status"] != "not_applicable"]
        passed = sum(1 for x in applicable if x["status"] == "pass")
        keep = ("index", "kind", "description", "bound", "bound_source", "bound_detail", "unit")
        out.append(
            {
                **{key: first.get(key) for key in keep},
                "passed": passed,
                "applicable": len(applicable),
                "pass_rate": round(passed / len(applicable), 6) if applicable else None,
                "measured": percentiles(
                    [x.get("measured") for x in applicable], first.get("unit") or "s"
                ),
            }
        )
    return out


def _detection(runs: list[Results]) -> list[dict[str, Any]]:
    """Per fault (by its place in the run): percentiles of each latency over the runs."""
    if not runs:
        return []
    out = []
    for k, first in enumerate(runs[0]["detection"]):
        rows = [r["detection"][k] for r in runs if k < len(r["detection"])]
        out.append(
            {
                "step": first["step"],
                "kind": first["kind"],
                "subject": first["subject"],
                **{
                    key: percentiles([x.get(key) for x in rows])
                    for key in ("first_suspect", "first_dead", "full_dead")
                },
            }
        )
    return out


def _by_step(runs: list[Results], key: str, field: str) -> list[dict[str, Any]]:
    if not runs:
        return []
    out = []
    for k, first in enumerate(runs[0][key]):
        rows = [r[key][k] for r in runs if k < len(r[key])]
        out.append({"step": first["step"], field: percentiles([x.get(field) for x in rows])})
    return out


def run_line(i: int, k: int, r: Results) -> str:
    """The progress line of run ``i`` of ``k``: its seed, verdict and what failed."""
    failed = [e["description"] for e in r.get("expectations", []) if e["status"] == "fail"]
    prop = r.get("property") or {}
    if prop.get("status") == "fail":  # an explore failure file's property (``properties``)
        failed.append(f"property {prop['name']}: {prop.get('detail', '')}")
    line = f"run {i + 1}/{k} seed {r.get('seed')}: {str(r['verdict']).upper()}"
    timed = [e for e in r.get("expectations", []) if e.get("unit") == "s" and e.get("bound")]
    figures = ", ".join(
        "never" if e.get("measured") is None else f"{e['measured']:.2f} s" for e in timed
    )
    if figures:
        line += f" [{figures}]"
    if r.get("error"):
        line += f": {r['error']}"
    elif failed:
        line += ": failed " + "; ".join(failed)
    return line
