"""Run a scenario in either mode, judge it, write ``results.json`` and ``report.html``.

Exit statuses of ``rt_cluster scenario``: 0 every expectation passed, 1 one failed, 2 the file
was bad or the run could not be carried out.
"""

from __future__ import annotations

import json
import math
import sys
import time
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Any

import trio

from .analysis import analyse
from .report import render_report
from .spec import Scenario, ScenarioError, load_scenario
from .trace import Trace

__all__ = ["LIBRARY", "find_scenario", "library", "run_scenario", "run_scenario_cli"]

LIBRARY = Path(__file__).resolve().parent
EXIT = {"pass": 0, "fail": 1, "error": 2}


def library() -> list[Path]:
    """The scenario files shipped in ``scenarios/``."""
    return sorted(LIBRARY.glob("*.yaml"))


def find_scenario(name: str) -> Path:
    """A path as given, else a library scenario by name (with or without ``.yaml``)."""
    p = Path(name)
    if p.is_file():
        return p
    for cand in (LIBRARY / name, LIBRARY / f"{name}.yaml"):
        if cand.is_file():
            return cand
    names = ", ".join(q.stem for q in library())
    raise ScenarioError(f"{name}: no such file, nor a scenario of that name (library: {names})")


def _clean(x: Any) -> Any:
    """JSON-safe: infinities and NaN become null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    return x


def results_of(scenario: Scenario, trace: Trace, mode: str, seed: int) -> dict[str, Any]:
    an = analyse(trace, scenario)
    results: dict[str, Any] = _clean(
        {
            "scenario": scenario.name,
            "description": scenario.description,
            "source": scenario.source,
            "mode": mode,
            "seed": seed,
            "nodes": len(trace.initial),
            "duration": round(trace.end - trace.t0, 3),
            "verdict": an.verdict,
            "error": None,
            "settings": dict(scenario.settings),
            "expectations": an.expectations,
            "detection": an.detection,
            "false_suspicions": {"count": len(an.false_suspicions), "events": an.false_suspicions},
            "false_deaths": {"count": len(an.false_deaths), "events": an.false_deaths},
            "convergence": an.convergence,
            "steps": [
                {
                    "t": trace.rel(a.t),
                    "kind": a.kind,
                    "step": a.step,
                    "nodes": list(a.nodes),
                    "groups": [list(g) for g in a.groups],
                    "value": a.value,
                }
                for a in sorted(trace.actions, key=lambda a: a.t)
            ],
            "http": [
                {**asdict(h), "at": trace.rel(h.t), "elapsed": round(h.elapsed, 4)}
                for h in trace.http
            ],
            "events": len(trace.events),
        }
    )
    return results


def error_results(
    scenario: Scenario | None, source: str, mode: str, seed: int | None, error: str
) -> dict[str, Any]:
    return {
        "scenario": scenario.name if scenario else Path(source).stem,
        "description": scenario.description if scenario else "",
        "source": source,
        "mode": mode,
        "seed": seed,
        "nodes": scenario.nodes if scenario else None,
        "duration": None,
        "verdict": "error",
        "error": error,
        "expectations": [],
        "detection": [],
        "false_suspicions": {"count": 0, "events": []},
        "false_deaths": {"count": 0, "events": []},
        "convergence": [],
        "steps": [],
        "http": [],
        "events": 0,
    }


def run_scenario(
    scenario: Scenario, *, sim: bool = False, seed: int | None = None, out: Path | None = None
) -> tuple[dict[str, Any], Trace | None]:
    """Run and judge; results (verdict ``error`` when the run itself failed) and the trace."""
    mode = "sim" if sim else "real"
    seed = scenario.seed if seed is None else seed
    trace: Trace | None = None
    try:
        if sim:
            from .sim import run_sim

            trace = run_sim(scenario, seed=seed)
        else:
            from .real import run_real

            assert out is not None
            trace = trio.run(lambda: run_real(scenario, out, seed=seed))
    except Exception as exc:  # the run failed: an error verdict, not a crash
        detail = "; ".join(_leaves(exc))
        return error_results(scenario, scenario.source, mode, seed, detail), None
    return results_of(scenario, trace, mode, seed), trace


def _leaves(exc: BaseException) -> list[str]:
    """The messages of the real errors inside (possibly nested) exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return [m for inner in exc.exceptions for m in _leaves(inner)]
    return ["".join(traceback.format_exception_only(type(exc), exc)).strip()]


def write_outputs(out: Path, results: dict[str, Any], trace: Trace | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / "report.html").write_text(render_report(results, trace))


def run_scenario_cli(
    file: str,
    *,
    sim: bool = False,
    seed: int | None = None,
    out: str | None = None,
    n: int | None = None,
) -> int:
    """``rt_cluster scenario``: print a summary, write the outputs, return the exit status."""
    mode = "sim" if sim else "real"
    try:
        path = find_scenario(file)
        scenario = load_scenario(path, nodes=n, sim=sim)
    except ScenarioError as exc:
        print(f"rt_cluster scenario: {exc}", file=sys.stderr)
        return 2
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out_dir = (
        Path(out) if out else Path.home() / ".rt" / "scenarios" / f"{path.stem}-{mode}-{stamp}"
    )
    print(
        f"scenario {scenario.name!r} ({mode}, {scenario.nodes} nodes, seed "
        f"{scenario.seed if seed is None else seed}, {scenario.duration:g}s) -> {out_dir}",
        flush=True,
    )
    results, trace = run_scenario(scenario, sim=sim, seed=seed, out=out_dir)
    write_outputs(out_dir, results, trace)
    print(summary(results), flush=True)
    return EXIT[results["verdict"]]


def summary(results: dict[str, Any]) -> str:
    lines = []
    for e in results["expectations"]:
        m = e.get("measured")
        meas = f" (measured {m:g})" if isinstance(m, int | float) else ""
        lines.append(f"  {e['status']:<14} {e['description']}{meas}")
    for d in results["detection"]:
        sus, first, full = (
            "-" if d[k] is None else f"{d[k]:.2f}s"
            for k in ("first_suspect", "first_dead", "full_dead")
        )
        lines.append(
            f"  detection of {d['subject']} after {d['kind']}: first suspect {sus}, "
            f"first dead {first}, full dead {full}"
        )
    lines.append(
        f"  false suspicions {results['false_suspicions']['count']}, false deaths "
        f"{results['false_deaths']['count']}"
    )
    if results.get("error"):
        lines.append(f"  error: {results['error']}")
    lines.append(f"verdict: {results['verdict'].upper()}")
    return "\n".join(lines)
