"""``python -m bench.explore``: how fast ``rt_cluster explore`` searches, and whether, how fast
and to how few steps it finds each planted bug (``plants``); then the unmutated protocol
searched for ``--clean-s`` seconds, where any violation is a false alarm or a real bug.

Figures, printed and saved to ``bench/results/explore.json``:
- ``speed``: runs per second and virtual seconds per wall second of 5-node schedules with
  ``--jobs 2``, searched in this process for ``--speed-s`` (goal: at least 10 runs/s), and the
  same with one job (``speed_by_jobs``), each with runs per CPU second (its jobs' included:
  the steadier figure on a shared machine);
- ``command``: ``rt_cluster explore -n 5 --runs R --jobs J --seed 4242`` as a whole command
  (start-up, search and report), J = 1 and 2: runs per wall second and per CPU second (goal,
  with 2 jobs: at least 100 runs/s);
- per plant: found or not within ``--plant-s`` (goal: all, within 10 minutes; the two that
  only a one-way cut or a clock jump reveals: within two minutes), the run and
  seconds it took, the property, the steps after shrinking (goal: at most 5), the shrink's
  seconds (goal: at most 60) and replays of the shrunk file with the same event digest
  (goal: 10 of 10); for the plants of ``REVEALED_BY``, the same again with ``--faults`` of
  their kind alone, and with the kinds before it only (``old_kinds``: goal, not found);
- ``clean``: runs and violations of the unmutated code (goal: 0), searched for ``--clean-s``
  (two hours) at sizes 3-7, a fresh seed every ``--clean-segment-s`` (the wall clock's day,
  hour and minute), so each long search covers schedules no earlier one chose;
- ``storage`` (issue 47): the same for searches with storage (``explore --storage``: whole
  simulated nodes and an array, its properties): per storage plant
  (``storageplants.STORAGE_PLANTS``) found or not within ``--plant-s`` (goal: each within 10
  minutes with ``--jobs 2``), its property, steps and replays (goal: the same digest, 3 of 3:
  a replay costs seconds here); then ``storage_clean``, main searched with storage for
  ``--storage-clean-s`` (goal: an hour, no violation).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

import swim
from bench.explore.plants import PLANTS, planted
from bench.explore.storageplants import STORAGE_PLANTS
from scenarios.explore import FAULT_KINDS, SEARCH_SHARE, Options, Search, play, run_search
from scenarios.judge.properties import STORAGE_PROPERTIES

RESULTS = Path(__file__).resolve().parents[1] / "results" / "explore.json"
BIN = Path(sys.executable).parent
GOAL_RUNS_PER_S = 100.0  # whole command, 5 nodes, --jobs 2 (issue 45)
GOAL_STORAGE_FIND_S = 600.0  # each storage plant found within this, --jobs 2 (issue 47)
REVEALED_BY = {"direct_answer": "cut", "older_boot_ignored": "clock"}  # issue 46
OLD_KINDS = tuple(k for k in FAULT_KINDS if k not in ("cut", "clock"))


def _quiet(lines: list[str]) -> Any:
    def say(line: str) -> None:
        lines.append(line)

    return say


def _searched(lines: list[str]) -> tuple[str, int, float]:
    """The search's closing line, its runs and its seconds of searching (shrinks not counted)."""
    done = next(line for line in lines if line.startswith("searched"))
    return done, int(done.split()[1]), float(done.split(" in ")[1].split(" s ")[0])


def _cpu_s() -> float:
    """CPU seconds of this process and of its children reaped so far (a search's jobs)."""
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def bench_speed(seconds: float, jobs: int, work: Path) -> dict[str, Any]:
    """A search of 5-node schedules for ``seconds`` in this process: runs per wall second and
    per CPU second (its jobs' included; the machine may be shared)."""
    lines: list[str] = []
    search = Search(
        Options(5, 5),
        budget_s=seconds / SEARCH_SHARE,
        seed=7,
        jobs=jobs,
        out=work / f"speed-{jobs}",
    )
    cpu = _cpu_s()
    run_search(search, say=_quiet(lines))
    cpu = _cpu_s() - cpu
    done, runs, wall = _searched(lines)
    print(f"  speed, --jobs {jobs}: {done}; {runs / cpu:.1f} runs per CPU s")
    rate = float(done.split("(")[1].split("/s")[0])
    virtual = float(done.split(", ")[-1].split("x")[0])
    return {
        "jobs": jobs,
        "runs": runs,
        "wall_s": wall,
        "runs_per_s": rate,
        "virtual_x": virtual,
        "cpu_s": round(cpu, 2),
        "runs_per_cpu_s": round(runs / cpu, 1),
    }


def bench_command(runs: int, jobs: int, work: Path) -> dict[str, Any]:
    """``rt_cluster explore -n 5 --runs RUNS --jobs J --seed 4242`` as a whole command, start-up
    and reporting included: runs per wall second, and the command's CPU seconds."""
    cmd = [str(BIN / "rt_cluster"), "explore", "-n", "5", "--runs", str(runs), "--jobs", str(jobs)]
    cmd += ["--seed", "4242", "--out", str(work / f"command-{jobs}")]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed (exit {done.returncode}): {done.stderr}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    row = {
        "command": " ".join(["rt_cluster", *cmd[1:-2]]),
        "jobs": jobs,
        "runs": runs,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "runs_per_s": round(runs / wall, 1),
        "runs_per_cpu_s": round(runs / cpu, 1),
    }
    row["met"] = row["runs_per_s"] >= GOAL_RUNS_PER_S if jobs >= 2 else None  # goal: 2 jobs
    print(f"  command, --jobs {jobs}: {row}")
    return row


def _found(
    status: int, files: list[Path], lines: list[str], took: float, replays: int
) -> dict[str, Any]:
    """A plant's search as figures: found or what it searched; when found, the first failure,
    the shrunk file's steps, the shrink's seconds and ``replays`` replays' digests (all the
    same and failing: ``replays``, else 0)."""
    if status != 1 or not files:
        return {"found": False, "searched": _searched(lines)[0]}
    first = next(line for line in lines if " violated (+" in line)
    data = yaml.safe_load(files[0].read_text())
    replay = {k: v for k, v in data.items() if k != "property"}
    digests = set()
    for _ in range(replays):
        got = play(replay, [data["property"]])
        digests.add(got.digest if got.failed else "passed")
    shrink = next(line for line in lines if line.startswith("failure-"))
    return {
        "found": True,
        "first_failure": first,
        "found_after_s": float(first.split("(+")[1].split(" s)")[0]),
        "property": data["property"],
        "steps": len(data["steps"]),
        "nodes": data["nodes"],
        "shrink_s": float(shrink.split(" in ")[1].split(" s")[0]),
        "search_and_shrink_s": round(took, 1),
        "replays_same_digest": replays if len(digests) == 1 and "passed" not in digests else 0,
    }


def bench_plant(
    name: str, seconds: float, jobs: int, work: Path, faults: tuple[str, ...] = FAULT_KINDS
) -> dict[str, Any]:
    shown = (
        "all" if faults == FAULT_KINDS else "old_kinds" if faults == OLD_KINDS else ",".join(faults)
    )
    out = work / f"{name}-{shown}"
    lines: list[str] = []
    t = time.monotonic()
    with planted(name):
        status = run_search(
            Search(Options(3, 5, faults=faults), budget_s=seconds, seed=1, jobs=jobs, out=out),
            say=_quiet(lines),
        )
        took = time.monotonic() - t
        files = sorted(out.glob("failure-*.yaml"))
        row: dict[str, Any] = {"plant": name, "faults": shown, "when": time.strftime("%H:%M")}
        row["swim"] = "compiled" if swim.native.IN_USE else "python"  # the file's may differ
        row.update(_found(status, files, lines, took, replays=10))
    print(f"  {name}: {row}")
    return row


def bench_storage_plant(name: str, seconds: float, jobs: int, work: Path) -> dict[str, Any]:
    """A search with storage while storage plant ``name`` is in: found or not, when, and its
    shrunk file's replays (on whole nodes, in virtual time)."""
    out = work / f"storage-{name}"
    lines: list[str] = []
    t = time.monotonic()
    with STORAGE_PLANTS[name]():
        search = Search(
            Options(storage=True),
            budget_s=seconds,
            seed=1,
            jobs=jobs,
            out=out,
            properties=list(STORAGE_PROPERTIES),
            first_only=True,  # the find is timed; what comes after it is not measured
        )
        status = run_search(search, say=_quiet(lines))
        took = time.monotonic() - t
        files = sorted(out.glob("failure-*.yaml"))
        row: dict[str, Any] = {"plant": name, "when": time.strftime("%H:%M")}
        row.update(_found(status, files, lines, took, replays=3))  # seconds a replay here
    row["met"] = row["found"] and row["found_after_s"] <= GOAL_STORAGE_FIND_S
    print(f"  storage {name}: {row}")
    return row


def bench_clean(
    seconds: float,
    jobs: int,
    work: Path,
    sizes: tuple[int, int],
    segment_s: float,
    storage: bool = False,
) -> dict[str, Any]:
    """The unmutated code, searched in segments of ``segment_s`` seconds, each from a seed
    nobody chose: the wall clock's day, hour and minute when the segment starts (DDHHMM);
    with ``storage``, runs with an array on whole nodes, judged by the storage properties."""
    segments: list[dict[str, Any]] = []
    violations: list[str] = []
    left = seconds
    while left > 1.0:
        seed = int(time.strftime("%d%H%M"))
        if any(s["seed"] == seed for s in segments):
            seed += len(segments)  # two segments in one minute: the second one's own
        span = min(segment_s, left)
        lines: list[str] = []
        t = time.monotonic()
        run_search(
            Search(
                Options(*sizes, storage=storage),
                budget_s=span / SEARCH_SHARE,
                seed=seed,
                jobs=jobs,
                out=work / f"{'storage-' if storage else ''}clean-{seed}",
                properties=list(STORAGE_PROPERTIES) if storage else Search().properties,
            ),
            say=_quiet(lines),
        )
        done, runs, searched = _searched(lines)
        left -= searched
        found = [line for line in lines if " violated (+" in line]
        drawn = next((line for line in lines if line.startswith("drawn: sizes")), "")
        segments.append(
            {
                "seed": seed,
                "runs": runs,
                "searched_s": searched,
                "wall_s": round(time.monotonic() - t, 1),
                "violations": len(found),
                "sizes": drawn.removeprefix("drawn: sizes "),
            }
        )
        violations += [f"seed {seed}: {line}" for line in found]
        what = "storage clean" if storage else "clean"
        print(f"  {what}, seed {seed}: {done}; violations {len(found)}")
    return {
        "runs": sum(s["runs"] for s in segments),
        "seconds": seconds,
        "sizes": f"{sizes[0]}-{sizes[1]}",
        "jobs": jobs,
        "seeds": [s["seed"] for s in segments],
        "segments": segments,
        "violations": violations,
        "ok": not violations,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.explore", description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--speed-s", type=float, default=30.0, help="seconds of the speed search")
    ap.add_argument(
        "--command-runs", type=int, default=400, help="runs of the whole-command speed figure"
    )
    ap.add_argument("--plant-s", type=float, default=600.0, help="budget per planted bug")
    ap.add_argument("--clean-s", type=float, default=7200.0, help="seconds on unmutated code")
    ap.add_argument("--clean-sizes", default="3-7", help="sizes A-B of the clean search")
    ap.add_argument(
        "--clean-segment-s", type=float, default=600.0, help="seconds a seed of the clean search"
    )
    ap.add_argument(
        "--storage-clean-s", type=float, default=3600.0, help="seconds on main with storage"
    )
    ap.add_argument(
        "--plant", action="append", choices=sorted([*PLANTS, *STORAGE_PLANTS]), help="only these"
    )
    ap.add_argument(
        "--only",
        action="append",
        choices=("speed", "plants", "clean", "storage", "storage_clean"),
        help="some figures",
    )
    args = ap.parse_args(argv)
    only = set(args.only or ("speed", "plants", "clean", "storage", "storage_clean"))
    work = Path(tempfile.mkdtemp(prefix="rtsim-bench-explore-"))
    try:
        old = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    except ValueError:
        old = {}
    out: dict[str, Any] = {  # the figures not measured this time are kept
        **old,
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "swim": "compiled" if swim.native.IN_USE else "python",  # swim.native
    }
    if "speed" in only:
        jobs = sorted({1, args.jobs})
        speeds = {j: bench_speed(args.speed_s, j, work) for j in jobs}
        out["speed"] = speeds[args.jobs]
        out["speed_by_jobs"] = list(speeds.values())
        out["command"] = [bench_command(args.command_runs, j, work) for j in jobs]
    if "plants" in only:
        rows = []
        for p in [p for p in args.plant or PLANTS if p in PLANTS]:
            rows.append(bench_plant(p, args.plant_s, args.jobs, work))
            if p in REVEALED_BY:
                rows.append(bench_plant(p, args.plant_s, args.jobs, work, (REVEALED_BY[p],)))
                rows.append(bench_plant(p, args.plant_s, args.jobs, work, OLD_KINDS))
        measured = {(r["plant"], r.get("faults", "all")) for r in rows}
        kept = [
            r for r in old.get("plants", []) if (r["plant"], r.get("faults", "all")) not in measured
        ]
        out["plants"] = kept + rows  # the plants not searched this time keep their rows
    if "clean" in only:
        low, _, high = args.clean_sizes.partition("-")
        sizes = (int(low), int(high or low))
        out["clean"] = bench_clean(args.clean_s, args.jobs, work, sizes, args.clean_segment_s)
    if "storage" in only:
        picked = [p for p in args.plant or STORAGE_PLANTS if p in STORAGE_PLANTS]
        rows = [bench_storage_plant(p, args.plant_s, args.jobs, work) for p in picked]
        kept = [r for r in old.get("storage", []) if r["plant"] not in picked]
        out["storage"] = kept + rows
    if "storage_clean" in only:
        out["storage_clean"] = bench_clean(
            args.storage_clean_s, args.jobs, work, (4, 5), args.clean_segment_s, storage=True
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    try:  # what another invocation saved meanwhile is kept: only this one's figures change
        latest = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    except ValueError:
        latest = {}
    measured = {k: v for k, v in out.items() if k not in old or old[k] != v}
    RESULTS.write_text(json.dumps({**latest, **measured}, indent=2) + "\n")
    print(f"saved {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
