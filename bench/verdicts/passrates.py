"""``python -m bench.verdicts passrates``: how often each library scenario passes, on held-out
seeds in the simulation and on real processes beside a loaded neighbour cluster.

Method:
- Simulation: ``--sim-runs`` K runs per scenario on seeds ``s + 1000 .. s + 1000 + K - 1``,
  where ``s`` is the file's (``--sim``) seed: held out from the seeds the bounds were tuned
  on. The runs are split over ``--jobs`` worker processes, each doing
  ``run_scenario(sc, sim=True, seed=...)`` and sending back a compact record. A file that
  plays on real processes only (Serf agents, disk faults without an array) has no simulated
  runs. A file with a ``storage:`` section plays on whole simulated nodes (seconds a run, not
  milliseconds): it gets ``--storage-sim-runs`` runs instead.
- Real processes: ``--real-runs`` runs per scenario at the file's size, each on a fresh
  cluster, while a 5-node neighbour cluster with its workload on runs beside them
  (``bench.verdicts.load``). After each run every process of its cluster is proved gone.
- Figures per scenario and mode: runs passed; per expectation its pass rate and the
  p50/p90/p99/p99.9/max of its measured value (nearest rank; a run where the thing never
  happened counts as +inf, shown as null); for a derived bound, bound / measured p99.9
  (safe when >= 1, tight when <= 2). Saved to ``bench/results/verdicts.json``, merged per
  scenario and mode with what an earlier invocation saved (so sim and real may run apart).

Figures only: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import fcntl
import functools
import json
import multiprocessing
import os
import platform
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import psutil

from scenarios import Scenario, find_scenario, library, load_scenario, run_scenario, write_outputs
from scenarios.reporting.aggregate import aggregate, percentiles, run_line

from .load import end_leftovers, open_neighbour

__all__ = [
    "HELD_OUT",
    "add_arguments",
    "compact",
    "figures",
    "held_out_seeds",
    "merge_json",
    "real_runs",
    "run",
    "say",
    "selected",
    "sim_runs",
    "stats",
]

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
HELD_OUT = 1000  # the first seed played is the file's seed plus this
NOT_PASSED_KEPT = 50  # runs that did not pass, listed per scenario and mode
Run = dict[str, Any]
Say = Callable[[str], None]


def say(line: str) -> None:
    print(line, flush=True)


def selected(only: str | None) -> list[Path]:
    """The library's scenario files, or those named (comma-separated) in ``only``."""
    if not only:
        return library()
    return [find_scenario(name.strip()) for name in only.split(",") if name.strip()]


def held_out_seeds(sc: Scenario, runs: int) -> range:
    return range(sc.seed + HELD_OUT, sc.seed + HELD_OUT + runs)


# ---- one run, compact ------------------------------------------------------------------------


def compact(results: Run) -> Run:
    """What the figures need of one run's ``results.json`` (a few hundred bytes), in the
    shape ``scenarios.reporting.aggregate`` reads. ``false_suspicions`` and ``expected_suspicions``
    count every accusation of the class, suspicions and deaths alike (``suspicions``)."""
    exps = results.get("expectations") or []
    keep = ("index", "kind", "description", "status", "measured", "unit", "bound", "bound_detail")
    sus = results.get("suspicions") or {}
    return {
        "seed": results.get("seed"),
        "verdict": results["verdict"],
        "error": results.get("error"),
        "duration": results.get("duration"),
        "failed": [e["description"] for e in exps if e["status"] == "fail"],
        "expectations": [{k: e.get(k) for k in (*keep, "bound_source")} for e in exps],
        "detection": [
            {
                k: d.get(k)
                for k in ("step", "kind", "subject", "first_suspect", "first_dead", "full_dead")
            }
            for d in results.get("detection") or []
        ],
        "convergence": [
            {"step": c.get("step"), "seconds": c.get("seconds")}
            for c in results.get("convergence") or []
        ],
        "false_suspicions": {"count": sus.get("false", 0)},
        "expected_suspicions": {"count": sus.get("expected", 0)},
        **{k: {"count": (results.get(k) or {}).get("count", 0)} for k in _DEATHS},
    }


_DEATHS = ("false_deaths", "expected_deaths")


@functools.cache
def _scenario(path: str, nodes: int | None) -> Scenario:
    return load_scenario(path, nodes=nodes, sim=True)


def _sim_task(task: tuple[str, int | None, int]) -> Run:
    """One simulated run in a worker process (the scenario is read once per worker)."""
    path, nodes, seed = task
    results, _ = run_scenario(_scenario(path, nodes), sim=True, seed=seed)
    return compact(results)


def _worker_init() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's; it ends the pool
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def sim_runs(
    path: Path, seeds: Sequence[int], *, nodes: int | None = None, jobs: int = 2, label: str = ""
) -> list[Run]:
    """Simulated runs of the file at ``path`` (``nodes`` overrides its size), one per seed,
    over ``jobs`` worker processes; compact records in seed order. A progress line per tenth."""
    tasks = [(str(path), nodes, s) for s in seeds]
    every = max(1, len(tasks) // 10)
    done: list[Run] = []
    t0 = time.monotonic()

    def collect(results: Iterable[Run]) -> None:
        for r in results:
            done.append(r)
            if len(done) % every == 0 or len(done) == len(tasks):
                bad = sum(x["verdict"] != "pass" for x in done)
                say(
                    f"  {label} sim: {len(done)}/{len(tasks)} runs, {bad} not passed, "
                    f"{time.monotonic() - t0:.0f} s"
                )

    if jobs <= 1:
        collect(map(_sim_task, tasks))
    else:
        context = multiprocessing.get_context("fork")
        with context.Pool(jobs, initializer=_worker_init) as pool:
            collect(pool.imap_unordered(_sim_task, tasks, chunksize=4))
    return sorted(done, key=lambda r: int(r["seed"]))


def real_runs(
    path: Path, seeds: Sequence[int], work: Path, *, nodes: int | None = None, label: str = ""
) -> list[Run]:
    """Runs on real processes (``nodes`` overrides the size), each in ``work/<label>-<seed>``
    with its results and report; after each, whatever of its cluster still runs is ended and
    named in the record's ``leftovers``."""
    sc = load_scenario(path, nodes=nodes)
    out: list[Run] = []
    for i, seed in enumerate(seeds):
        run_dir = work / f"{label}-{seed}"
        try:
            results, trace = run_scenario(sc, seed=seed, out=run_dir)
            write_outputs(run_dir, results, trace)
        finally:
            left = end_leftovers(run_dir / "cluster")
        out.append({**compact(results), "out": str(run_dir), "leftovers": left})
        tail = f"; LEFT RUNNING (ended now): {', '.join(left)}" if left else ""
        say(f"  {label} real: {run_line(i, len(seeds), results)}{tail}")
    return out


# ---- figures ---------------------------------------------------------------------------------


def stats(values: Sequence[float | None], unit: str = "s") -> dict[str, Any]:
    """``scenarios.reporting.aggregate.percentiles`` without the values (1,000 of them per
    figure)."""
    return _without_values(percentiles(values, unit))


def _without_values(p: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in p.items() if k != "values"}


def _bound_over(exp: Run) -> float | None:
    """Derived bound / measured p99.9 (the upper end of a [lo, hi] bound); None otherwise."""
    bound = exp.get("bound")
    hi = bound[-1] if isinstance(bound, list) and bound else bound
    p = exp["measured"]["p99.9"]
    if exp.get("bound_source") != "derived" or not isinstance(hi, int | float) or not p:
        return None
    return round(float(hi) / float(p), 3)


def figures(runs: list[Run]) -> dict[str, Any]:
    """The figures of K runs of one scenario in one mode (see the module docstring): the
    aggregate of ``scenarios.reporting.aggregate`` without its values, each derived bound over its
    p99.9, and the runs that did not pass."""
    section = aggregate(runs, 1.0)["aggregate"]
    del section["pass_rate"]
    for exp in section["expectations"]:
        exp["measured"] = _without_values(exp["measured"])
        exp["bound_over_p99.9"] = _bound_over(exp)
    for row in section["detection"]:
        for k in ("first_suspect", "first_dead", "full_dead"):
            row[k] = _without_values(row[k])
    for row in section["convergence"]:
        row["seconds"] = _without_values(row["seconds"])
    for k in ("false_suspicions", "expected_suspicions", *_DEATHS):
        section[k] = _without_values(section[k])
    return {
        **section,
        "seeds": [runs[0]["seed"], runs[-1]["seed"]] if runs else None,
        "not_passed": [
            {k: r.get(k) for k in ("seed", "verdict", "error", "failed", "out", "leftovers")}
            for r in runs
            if r["verdict"] != "pass"
        ][:NOT_PASSED_KEPT],
        "leftovers": sum(bool(r.get("leftovers")) for r in runs),
    }


# ---- the benchmark ---------------------------------------------------------------------------


def _git(*args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10, check=False
        )
    except OSError:
        return ""
    return done.stdout.strip()


def host() -> dict[str, Any]:
    """The machine, its load now, and the code measured: the commit, ``-dirty`` when files
    other than the benchmarks' own results differ from it."""
    code = _git("describe", "--always")
    if code and _git("status", "--porcelain", "--", ".", ":(exclude)bench/results"):
        code += "-dirty"
    return {
        "cpus": psutil.cpu_count(),
        "python": platform.python_version(),
        "load_avg": [round(x, 2) for x in psutil.getloadavg()],
        "commit": code or None,
    }


def merge_json(path: Path, key: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Apply ``change`` to the dict under ``key`` of the JSON file at ``path`` (created when
    missing or unreadable): locked, re-read and replaced atomically, so two benchmarks may
    save into one file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = os.open(path.parent, os.O_RDONLY)  # the directory's lock: no file left behind
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            doc = {}
        if not isinstance(doc.get(key), dict):
            doc = {key: {}}
        change(doc)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(doc, indent=2) + "\n")
        os.replace(tmp, path)
    finally:
        os.close(lock)  # closing releases the lock


def save(path: Path, name: str, mode: str, section: dict[str, Any]) -> None:
    """Merge one scenario's section for ``mode`` into the JSON file at ``path``."""

    def change(doc: dict[str, Any]) -> None:
        doc.update(updated=time.strftime("%Y-%m-%dT%H:%M:%S"), method=__doc__)
        doc["scenarios"].setdefault(name, {})[mode] = section

    merge_json(path, "scenarios", change)


def _section(sc: Scenario, runs: list[Run], t0: float) -> dict[str, Any]:
    return {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "nodes": sc.nodes,
        "wall_s": round(time.monotonic() - t0, 1),
        "host": host(),
        **figures(runs),
    }


def _sim_phase(paths: list[Path], args: argparse.Namespace, out: Path) -> None:
    for path in paths:
        if load_scenario(path).real_only:  # Serf agents or disks: the simulator refuses it
            say(f"{path.stem}: real processes only (spec rule 7); no simulated runs")
            continue
        sc = load_scenario(path, sim=True)
        count = args.sim_runs if sc.storage is None else args.storage_sim_runs
        seeds = held_out_seeds(sc, count)
        say(
            f"{path.stem}: {count} simulated runs at N={sc.nodes}, seeds "
            f"{seeds[0]}..{seeds[-1]}, {args.jobs} jobs"
        )
        t0 = time.monotonic()
        runs = sim_runs(path, seeds, jobs=args.jobs, label=path.stem)
        _not_passed(path.stem, "sim", runs)
        save(out, path.stem, "sim", _section(sc, runs, t0))


def _not_passed(label: str, mode: str, runs: list[Run], shown: int = 5) -> None:
    """A line for each of the first ``shown`` runs that did not pass: seed and what failed."""
    bad = [r for r in runs if r["verdict"] != "pass"]
    for r in bad[:shown]:
        what = r["error"] or "; ".join(r["failed"])
        say(f"  {label} {mode} seed {r['seed']}: {str(r['verdict']).upper()}: {what}")
    if len(bad) > shown:
        say(f"  {label} {mode}: {len(bad) - shown} more not passed (seeds in the JSON)")


def _real_phase(paths: list[Path], args: argparse.Namespace, out: Path) -> None:
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="rt-bench-verdicts-"))
    failed = False
    with open_neighbour(work / "neighbour", say=say) as nb:
        for path in paths:
            sc = load_scenario(path)
            seeds = held_out_seeds(sc, args.real_runs)
            say(f"{path.stem}: {args.real_runs} real runs at N={sc.nodes} beside the neighbour")
            t0, cpu0 = time.monotonic(), nb.cpu_seconds()
            runs = real_runs(path, seeds, work, label=path.stem)
            section = _section(sc, runs, t0)
            cpu = (nb.cpu_seconds() - cpu0) / max(1e-9, time.monotonic() - t0)
            section["beside"] = {
                "nodes": len(nb.record.nodes),
                "running_after": nb.running(),
                "workload_steps_per_s_per_node": nb.rate,
                "cpu_pct_per_node": round(100 * cpu / len(nb.record.nodes), 1),
            }
            failed |= section["passed"] < section["runs"]
            save(out, path.stem, "real", section)
    if failed or args.work:
        say(f"real runs kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


def _cell(e: Run | None) -> str:
    if e is None or e["pass_rate"] is None:
        return "-"
    text = e["description"]
    text = text if len(text) <= 46 else text[:45] + "…"
    return f"{text} {e['passed']}/{e['applicable']}"


def table(doc: dict[str, Any], names: list[str]) -> str:
    """scenario | sim passed | worst sim expectation | min bound/p99.9 | real passed."""
    lines = [
        f"{'scenario':18} {'sim passed':>11}  {'worst expectation (sim) and its passes':54} "
        f"{'bound/p99.9':>11} {'real passed':>11}"
    ]
    for name in names:
        entry = doc.get("scenarios", {}).get(name, {})
        sim, real = entry.get("sim"), entry.get("real")
        rated = [e for e in (sim or {}).get("expectations", []) if e["pass_rate"] is not None]
        worst = min(rated, key=lambda e: e["pass_rate"], default=None)
        ratios = [e["bound_over_p99.9"] for e in rated if e["bound_over_p99.9"] is not None]
        lines.append(
            f"{name:18} {_passed(sim):>11}  {_cell(worst):54} "
            f"{(f'{min(ratios):.2f}' if ratios else '-'):>11} {_passed(real):>11}"
        )
    return "\n".join(lines)


def _passed(section: dict[str, Any] | None) -> str:
    return "-" if section is None else f"{section['passed']}/{section['runs']}"


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--sim-runs", type=int, default=1000, help="simulated runs per scenario")
    ap.add_argument(
        "--storage-sim-runs",
        type=int,
        default=100,
        help="simulated runs per scenario with an array (whole nodes: seconds each)",
    )
    ap.add_argument("--real-runs", type=int, default=10, help="real runs per scenario")
    ap.add_argument("--only", default=None, help="comma-separated scenario names")
    ap.add_argument("--no-sim", action="store_true", help="skip the simulated runs")
    ap.add_argument("--no-real", action="store_true", help="skip the real runs")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes for simulated runs")
    ap.add_argument("--work", default=None, help="directory for real runs (kept)")
    ap.add_argument("--out", default=str(RESULTS / "verdicts.json"), help="JSON file")


def run(args: argparse.Namespace) -> int:
    paths = selected(args.only)
    out = Path(args.out)
    if not args.no_sim and args.sim_runs > 0:
        _sim_phase(paths, args, out)
    if not args.no_real and args.real_runs > 0:
        _real_phase(paths, args, out)
    doc = json.loads(out.read_text()) if out.is_file() else {}
    say("\n" + table(doc, [p.stem for p in paths]))
    say(f"\nsaved {out}")
    return 0
