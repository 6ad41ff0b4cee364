"""``python -m bench.verdicts calibrate``: the simulation's latencies against real processes'.

For each size N of ``--sizes`` and each scenario (default kill_one, kill_leader, pause_long,
loss_20), both read with ``nodes=N`` (in ``--sim`` too, whose section sets its own size):
``--real-runs`` runs on real processes and ``--sim-runs`` simulated runs on held-out seeds
(the file's seed + 1000 on). Compared, per figure:

- kill_one, kill_leader, pause_long: the detection of the fault's subject, first suspect and
  full dead (seconds after the fault, from ``results["detection"]``);
- loss_20 has no detection (no node is meant to die): suspicions per run (false and expected
  together: under injected loss every suspicion is classed expected) and the convergence
  after the heal (seconds).

Printed side by side: median (p50) and p90 of each, sim/real ratio of the medians (goal of
issue 13: within 15 %), real - sim difference of the medians (seconds; what a delay model in
the simulator would have to add), and the two-sample Kolmogorov-Smirnov statistic D (the
largest gap between the two empirical CDFs, computed here; a run where the thing never
happened counts as +inf) with its asymptotic p-value. Saved to
``bench/results/calibration.json``, merged per scenario and size with earlier invocations.
The real runs have a quiet host unless ``--beside-load`` puts the loaded neighbour beside
them. Figures only: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import shutil
import tempfile
import time
from bisect import bisect_right
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from scenarios import find_scenario, load_scenario

from .load import open_neighbour
from .passrates import (
    RESULTS,
    Run,
    held_out_seeds,
    host,
    merge_json,
    real_runs,
    say,
    sim_runs,
    stats,
)

__all__ = ["SCENARIOS", "add_arguments", "compare", "ks_pvalue", "ks_statistic", "run"]

SCENARIOS = ("kill_one", "kill_leader", "pause_long", "loss_20")
GOAL = 0.15  # medians within 15 % of each other
Figure = Callable[[Run], float | None]


def _detection(key: str) -> Figure:
    def figure(r: Run) -> float | None:
        rows = r["detection"]
        return rows[0].get(key) if rows else None

    return figure


def _suspicions(r: Run) -> float:
    return float(r["false_suspicions"]["count"] + r["expected_suspicions"]["count"])


def _after_heal(r: Run) -> float | None:
    return next((c["seconds"] for c in r["convergence"] if c["step"] == "heal"), None)


DETECTION = {"first_suspect": _detection("first_suspect"), "full_dead": _detection("full_dead")}
FIGURES: dict[str, dict[str, Figure]] = {
    "loss_20": {"suspicions": _suspicions, "converged_after_heal": _after_heal},
}
UNITS = {"suspicions": "events"}


def ks_statistic(a: Sequence[float | None], b: Sequence[float | None]) -> float | None:
    """Two-sample Kolmogorov-Smirnov D: sup |F_a(x) - F_b(x)| (None counts as +inf)."""
    xs = sorted(math.inf if v is None else float(v) for v in a)
    ys = sorted(math.inf if v is None else float(v) for v in b)
    if not xs or not ys:
        return None
    gaps = (abs(bisect_right(xs, v) / len(xs) - bisect_right(ys, v) / len(ys)) for v in xs + ys)
    return round(max(gaps), 4)


def ks_pvalue(d: float | None, n: int, m: int) -> float | None:
    """The asymptotic p-value of D for samples of n and m (Kolmogorov's distribution, with
    Stephens' small-sample correction); rough below a dozen runs a side."""
    if d is None or not n or not m:
        return None
    ne = n * m / (n + m)
    lam = (math.sqrt(ne) + 0.12 + 0.11 / math.sqrt(ne)) * d
    if lam < 0.3:  # Q(0.3) = 1 - 1e-5: the series converges slowly below, to 1
        return 1.0
    p = 2 * sum((1 if k % 2 else -1) * math.exp(-2 * k * k * lam * lam) for k in range(1, 101))
    return round(min(1.0, max(0.0, p)), 4)


def compare(real: list[Run], sim: list[Run], figure: Figure, unit: str = "s") -> dict[str, Any]:
    """Real against simulated values of one figure: their stats, the medians' ratio and
    difference, KS D and p, and whether the medians are within ``GOAL`` of each other."""
    rv = [figure(r) for r in real if r["verdict"] != "error"]
    sv = [figure(r) for r in sim if r["verdict"] != "error"]
    rs, ss = stats(rv, unit), stats(sv, unit)
    ratio = ss["p50"] / rs["p50"] if rs["p50"] and ss["p50"] is not None else None
    diff = rs["p50"] - ss["p50"] if rs["p50"] is not None and ss["p50"] is not None else None
    d = ks_statistic(rv, sv)
    return {
        "real": {**rs, "values": rv},
        "sim": {**ss, "values": sv},
        "median_ratio_sim_over_real": None if ratio is None else round(ratio, 3),
        "median_diff_real_minus_sim": None if diff is None else round(diff, 4),
        "ks_d": d,
        "ks_p": ks_pvalue(d, len(rv), len(sv)),
        "within_goal": None if ratio is None else abs(ratio - 1) <= GOAL,
    }


def _entry(name: str, n: int, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    path = find_scenario(name)
    sim_sc, real_sc = load_scenario(path, nodes=n, sim=True), load_scenario(path, nodes=n)
    label = f"{path.stem}-n{n}"
    say(f"{path.stem} N={n}: {args.sim_runs} simulated runs, {args.real_runs} real runs")
    t0 = time.monotonic()
    sim = sim_runs(
        path, held_out_seeds(sim_sc, args.sim_runs), nodes=n, jobs=args.jobs, label=label
    )
    real = real_runs(path, held_out_seeds(real_sc, args.real_runs), work, nodes=n, label=label)
    figures = FIGURES.get(path.stem, DETECTION)
    return {
        "scenario": path.stem,
        "nodes": n,
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "wall_s": round(time.monotonic() - t0, 1),
        "host": host(),
        "runs": {"real": len(real), "sim": len(sim)},
        "passed": {
            "real": sum(r["verdict"] == "pass" for r in real),
            "sim": sum(r["verdict"] == "pass" for r in sim),
        },
        "figures": {k: compare(real, sim, f, UNITS.get(k, "s")) for k, f in figures.items()},
    }


def _save(path: Path, entry: dict[str, Any]) -> None:
    def change(doc: dict[str, Any]) -> None:
        doc.update(updated=time.strftime("%Y-%m-%dT%H:%M:%S"), method=__doc__, goal=GOAL)
        doc["entries"][f"{entry['scenario']}@{entry['nodes']}"] = entry

    merge_json(path, "entries", change)


def _num(v: Any, spec: str = ".3f") -> str:
    return "-" if v is None else format(v, spec)


def table(entries: list[dict[str, Any]]) -> str:
    head = (
        f"{'scenario':12} {'N':>3} {'figure':20} {'real p50':>9} {'p90':>7} {'sim p50':>9} "
        f"{'p90':>7} {'sim/real':>8} {'real-sim':>8} {'KS D':>6} {'p':>6} {'runs r/s':>9}"
    )
    lines = [head]
    for e in entries:
        for key, c in e["figures"].items():
            r, s = c["real"], c["sim"]
            flag = "" if c["within_goal"] is None else (" ok" if c["within_goal"] else " >15%")
            lines.append(
                f"{e['scenario']:12} {e['nodes']:>3} {key:20} {_num(r['p50']):>9} "
                f"{_num(r['p90']):>7} {_num(s['p50']):>9} {_num(s['p90']):>7} "
                f"{_num(c['median_ratio_sim_over_real'], '.2f'):>8} "
                f"{_num(c['median_diff_real_minus_sim']):>8} {_num(c['ks_d'], '.2f'):>6} "
                f"{_num(c['ks_p'], '.3f'):>6} {r['n']:>4}/{s['n']:<4}{flag}"
            )
    return "\n".join(lines)


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--real-runs", type=int, default=20, help="real runs per scenario and size")
    ap.add_argument("--sim-runs", type=int, default=200, help="simulated runs per scenario, size")
    ap.add_argument("--sizes", default="5,20", help="comma-separated cluster sizes")
    ap.add_argument("--only", default=None, help="comma-separated scenario names")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes for simulated runs")
    ap.add_argument("--beside-load", action="store_true", help="real runs beside a neighbour")
    ap.add_argument("--work", default=None, help="directory for real runs (kept)")
    ap.add_argument("--out", default=str(RESULTS / "calibration.json"), help="JSON file")


def run(args: argparse.Namespace) -> int:
    names = [x.strip() for x in (args.only or ",".join(SCENARIOS)).split(",") if x.strip()]
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="rt-bench-calib-"))
    out = Path(args.out)
    entries = []
    beside = open_neighbour(work / "neighbour", say=say) if args.beside_load else None
    with beside if beside is not None else contextlib.nullcontext():
        for n in sizes:
            for name in names:
                entry = _entry(name, n, args, work)
                _save(out, entry)
                entries.append(entry)
    kept = args.work or any(e["passed"]["real"] < e["runs"]["real"] for e in entries)
    if kept:
        say(f"real runs kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    say("\n" + table(entries))
    say(f"\nsaved {out}")
    return 0
