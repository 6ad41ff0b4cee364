"""Run a scenario in either mode, once or K times, judge it, write ``results.json`` and
``report.html``.

Rules:
1. Exit statuses of ``rt_cluster scenario``: 0 every run passed (or at least the file's
   ``pass_rate`` of them), 1 otherwise, 2 the file was bad or no run could be carried out.
2. The command says what it does as it happens: the plan, a line per step (one run) or per
   run (``--runs K``), the summary, and where the report is.
3. ``--runs K`` plays seeds ``seed .. seed + K - 1``; real runs each get ``run-NNN/`` (their
   cluster, results and report); one ``results.json`` holds every run and the aggregate
   (``aggregate``), and the report shows the distributions and the timeline of one run (the
   first that failed, else the first).
4. ``--hostfile H`` plays on the running cluster H names (``attach``): the scenario is read at
   H's size, and a step that cannot be carried out there is refused before any node is
   contacted (exit status 2, one line); ``--sim`` and ``-n`` do not go with it, nor a file
   with Serf agents (``serf:``), which starts its own beside the nodes it launches.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from cluster.local import ClusterError
from cluster.rt_cluster.hints import did_you_mean

from .format.spec import Scenario, ScenarioError, load_scenario
from .judge.trace import Action, Trace
from .reporting.aggregate import aggregate, run_line
from .reporting.results import action_line, error_results, results_of, write_outputs
from .reporting.summary import summary, summary_many

__all__ = [
    "LIBRARY",
    "find_scenario",
    "library",
    "run_many",
    "run_scenario",
    "run_scenario_cli",
]

Progress = Callable[[str], None]

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
    names = [q.stem for q in library()]
    close = did_you_mean(Path(name).stem, names)
    if close is not None:  # offered, never taken (hints rule 1)
        raise ScenarioError(
            f"{name}: no such file, nor a scenario of that name; did you mean {close!r}?"
        )
    raise ScenarioError(
        f"{name}: no such file, nor a scenario of that name (library: {', '.join(names)})"
    )


def run_scenario(
    scenario: Scenario,
    *,
    sim: bool = False,
    seed: int | None = None,
    out: Path | None = None,
    progress: Progress | None = None,
    hostfile: str | None = None,
) -> tuple[dict[str, Any], Trace | None]:
    """Run and judge; results (verdict ``error`` when the run itself failed) and the trace.

    ``progress`` gets a line per step as it is carried out (and, on real processes, the
    launch). With ``hostfile`` the run plays on that running cluster (rule 4)."""
    mode = "sim" if sim else "real"
    seed = scenario.seed if seed is None else seed
    trace: Trace | None = None
    try:
        on_action = None if progress is None else _step_lines(progress)
        if sim:
            from .play.sim import run_sim

            trace = run_sim(scenario, seed=seed, on_action=on_action)
        elif hostfile is not None:
            from .play.attach import run_attached

            trace = trio.run(
                lambda: run_attached(scenario, hostfile, on_action=on_action, say=progress)
            )
        else:
            from .play.real import run_real

            assert out is not None
            trace = trio.run(
                lambda: run_real(scenario, out, seed=seed, on_action=on_action, say=progress)
            )
    except Exception as exc:  # the run failed: an error verdict, not a crash
        detail = "; ".join(_leaves(exc))
        results = error_results(scenario, scenario.source, mode, seed, detail, hostfile)
        if (
            scenario.explore_property == "no_exception"
        ):  # an explore failure file: the property fails
            results["verdict"] = "fail"
            results["property"] = {"name": "no_exception", "status": "fail", "detail": detail}
        return results, None
    return results_of(scenario, trace, mode, seed, hostfile), trace


def _step_lines(progress: Progress) -> Callable[[Action, float], None]:
    """Rule 2: a line per action, as it is carried out."""

    def line(a: Action, t0: float) -> None:
        progress(f"  {a.t - t0:+7.2f} s  {a.step}: {action_line(a)}")

    return line


def run_many(
    scenario: Scenario,
    runs: int,
    *,
    sim: bool = False,
    seed: int | None = None,
    out: Path | None = None,
    progress: Progress | None = None,
    hostfile: str | None = None,
) -> tuple[dict[str, Any], Trace | None, int | None]:
    """Rule 3: ``runs`` runs; (results with the aggregate, the trace shown, its seed)."""
    first = scenario.seed if seed is None else seed
    each: list[dict[str, Any]] = []
    shown: tuple[Trace | None, int | None] = (None, None)
    for i in range(runs):
        run_out = out / f"run-{i:03d}" if out is not None and not sim else None
        results, trace = run_scenario(
            scenario, sim=sim, seed=first + i, out=run_out, hostfile=hostfile
        )
        if run_out is not None:
            write_outputs(run_out, results, trace)
            results["out"] = run_out.name
        if trace is not None and (shown[0] is None or (results["verdict"] != "pass" and _ok(each))):
            shown = (trace, first + i)
        each.append(results)
        if progress is not None:
            progress(run_line(i, runs, results))
    summed = aggregate(each, scenario.pass_rate)
    top = {
        key: each[0].get(key) if each else None
        for key in ("scenario", "description", "source", "mode", "hostfile", "nodes", "settings")
    }
    results = {
        **top,
        "runs_requested": runs,
        "seeds": [first, first + runs - 1],
        "pass_rate_required": scenario.pass_rate,
        **summed,
        "runs": [_brief(r) for r in each],
    }
    return results, shown[0], shown[1]


def _ok(runs: list[dict[str, Any]]) -> bool:
    return all(r["verdict"] == "pass" for r in runs)


def _brief(r: dict[str, Any]) -> dict[str, Any]:
    """One run's line in the many-runs results."""
    return {
        "seed": r.get("seed"),
        "verdict": r["verdict"],
        "error": r.get("error"),
        "duration": r.get("duration"),
        "failed": [e["description"] for e in r.get("expectations", []) if e["status"] == "fail"],
        "out": r.get("out"),
    }


def _leaves(exc: BaseException) -> list[str]:
    """The messages of the real errors inside (possibly nested) exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return [m for inner in exc.exceptions for m in _leaves(inner)]
    return ["".join(traceback.format_exception_only(type(exc), exc)).strip()]


def run_scenario_cli(
    file: str,
    *,
    sim: bool = False,
    seed: int | None = None,
    out: str | None = None,
    n: int | None = None,
    runs: int = 1,
    hostfile: str | None = None,
) -> int:
    """``rt_cluster scenario``: say what happens, write the outputs, return the exit status."""
    mode = "sim" if sim else "real"
    try:
        path, scenario = _prepare(file, sim=sim, n=n, hostfile=hostfile)
    except (ScenarioError, ClusterError) as exc:
        print(f"rt_cluster scenario: {exc}", file=sys.stderr)
        return 2
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out_dir = (
        Path(out) if out else Path.home() / ".rt" / "scenarios" / f"{path.stem}-{mode}-{stamp}"
    )
    first = scenario.seed if seed is None else seed
    seeds = f"seed {first}" if runs == 1 else f"{runs} runs, seeds {first}..{first + runs - 1}"
    where = f"{mode}, the running cluster of {hostfile}, " if hostfile else f"{mode}, "
    agents = f" and {scenario.serf} Serf agents" if scenario.serf else ""
    print(
        f"scenario {scenario.name!r} ({where}{scenario.nodes} nodes{agents}, {seeds}, "
        f"{scenario.duration:g} s each) -> {out_dir}",
        flush=True,
    )
    if hostfile and scenario.settings:
        print(
            f"  note: the scenario's settings ({', '.join(map(str, scenario.settings))}) are not "
            "applied to a running cluster; its bounds assume them"
        )
    for e in scenario.expectations:
        if e.derived is not None:
            print(f"  bound of {e.label()}: {e.within:g} s derived ({e.derived.formula})")
    kw: dict[str, Any] = {"sim": sim, "seed": seed, "out": out_dir, "hostfile": hostfile}
    if runs == 1:
        results, trace = run_scenario(scenario, progress=_say, **kw)
        write_outputs(out_dir, results, trace)
        print(summary(results), flush=True)
    else:
        results, trace, shown = run_many(scenario, runs, progress=_say, **kw)
        write_outputs(out_dir, results, trace, shown)
        print(summary_many(results), flush=True)
    print(f"report: {out_dir / 'report.html'}", flush=True)
    return EXIT[results["verdict"]]


def _prepare(file: str, *, sim: bool, n: int | None, hostfile: str | None) -> tuple[Path, Scenario]:
    """The scenario file and the scenario as it will run; with ``hostfile``, read at the
    hostfile's size and checked against where its nodes run (rule 4), no node contacted."""
    if hostfile is None:
        path = find_scenario(file)
        return path, load_scenario(path, nodes=n, sim=sim)
    if sim:
        raise ScenarioError("--hostfile plays on a running cluster's processes, not with --sim")
    if n is not None:
        raise ScenarioError("-n does not go with --hostfile: the hostfile says how many nodes")
    from .play.attach import refuse_steps, target_of

    path = find_scenario(file)
    agents = load_scenario(path).serf
    if agents:
        raise ScenarioError(
            f"{path}: serf: a file with {agents} Serf agents starts them beside the nodes it "
            "launches; it does not play on a running cluster (--hostfile)"
        )
    target = target_of(hostfile)
    scenario = load_scenario(path, nodes=len(target.nodes))
    refuse_steps(scenario, target)
    return path, scenario


def _say(line: str) -> None:
    print(line, flush=True)
