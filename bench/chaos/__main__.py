"""``python -m bench.chaos``: what the chaos-test API (docs/testing.md) costs, beside a plain
``rt_cluster up``, and what it leaves behind.

Four figures, saved to ``bench/results/chaos.json`` and printed:

- ``start``: seconds from the fixture's call (``start_cluster(3, mode)``, what ``await
  rt_cluster(3, mode=...)`` runs) to a converged 3-node cluster, beside ``rt_cluster up -n 3``
  as a whole command (it too returns once the nodes converged), the two in turn, ``--runs``
  times each, for real mode and (as root) netns mode beside ``up --netns``. Goal: median at
  most 5 s and at most 1 s above ``up``'s.
- ``sim``: the sim fixture's cost per test: a pytest session of ``--tests`` trio tests that
  each open a 3-node sim cluster, beside the same tests opening none, the two in turn; the
  difference of their wall times over the tests. Goal: at most 50 ms.
- ``leftovers``: real-mode tests through the fixture, passing, failing, under ``-x`` and
  interrupted by SIGINT at seeded random moments (during a start, a test body or a teardown),
  ``--leftover-tests`` in all; then every process of this host whose command line names the
  run's folder, and (netns) every namespace named after its clusters, is counted. Goal: 0.
- ``simtest``: one chaos test in sim (a 3-node cluster, converged, a kill, the death seen),
  ``--simtest-seeds`` of them one after another in this process, each in its own trio loop:
  wall and CPU ms per test, median and 90th percentile (``simtest``). Goal: median at most
  5 ms.

Never pass/fail; the goals are printed beside the figures (``bench.summary`` puts them in the
README's table).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import trio

import swim
from bench.chaos.simtest import bench_simtest
from cluster.local import live_members
from cluster.local.netns import leftovers, network_key, privileged
from scenarios import start_cluster

RESULTS = Path(__file__).resolve().parents[1] / "results" / "chaos.json"
BIN = Path(sys.executable).parent
GOAL_START_S, GOAL_ABOVE_UP_S, GOAL_SIM_MS = 5.0, 1.0, 50.0
FIGURES = ("start", "sim", "simtest", "leftovers")

SIM_TESTS = """
import pytest

@pytest.mark.parametrize("k", range({n}))
async def test_one(rt_cluster, k):
    {body}
"""

REAL_TESTS = """
import os, pathlib, pytest

@pytest.mark.parametrize("k", range({n}))
async def test_real(rt_cluster, k):
    c = await rt_cluster(2, mode="{mode}", swim={{"probe_interval": 0.3}})
    with open(os.environ["RT_BENCH_DIRS"], "a") as f:
        f.write(str(c.directory) + "\\n")
    await c.kill(1)
    await c.wait_dead(1)
    assert k % {fail_every} != {fail_every} - 1, "fails on purpose"
"""


def _stats(xs: list[float]) -> dict[str, float]:
    return {
        "min": round(min(xs), 3),
        "median": round(statistics.median(xs), 3),
        "max": round(max(xs), 3),
    }


# ---- start: fixture call to converged, beside rt_cluster up ---------------------------------


async def _fixture_start(mode: str, home: Path) -> float:
    t = time.monotonic()
    c = await start_cluster(3, mode, directory=home, name=home.name)
    took = time.monotonic() - t
    await c.aclose()
    return took


def _up(home: Path, netns: bool) -> float:
    env = {**os.environ, "RT_CLUSTER_HOME": str(home)}
    ports = [] if netns else ["--base-port", "0", "--runtime-base-port", "0"]
    extra = ["--netns"] if netns else []
    t = time.monotonic()
    done = subprocess.run(
        [str(BIN / "rt_cluster"), "up", "-n", "3", "--name", "b", *ports, *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    took = time.monotonic() - t
    down = subprocess.run(
        [str(BIN / "rt_cluster"), "down", "--name", "b"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode or down.returncode:
        raise SystemExit(f"rt_cluster up/down failed: {done.stderr}{down.stderr}")
    return took


def bench_start(runs: int, work: Path) -> list[dict[str, Any]]:
    rows = []
    modes = ["real", "netns"] if privileged() else ["real"]
    for mode in modes:
        ours, up = [], []
        for k in range(runs):
            ours.append(trio.run(_fixture_start, mode, work / f"{mode}-fixture-{k}"))
            up.append(_up(work / f"{mode}-up-{k}", netns=mode == "netns"))
            print(f"  start {mode} run {k + 1}: fixture {ours[-1]:.2f} s, up {up[-1]:.2f} s")
        row = {"mode": mode, "fixture_s": _stats(ours), "up_s": _stats(up)}
        row["above_up_s"] = round(row["fixture_s"]["median"] - row["up_s"]["median"], 3)
        row["met"] = (
            row["fixture_s"]["median"] <= GOAL_START_S and row["above_up_s"] <= GOAL_ABOVE_UP_S
        )
        rows.append(row)
    return rows


# ---- sim: the fixture's cost per test --------------------------------------------------------


def _pytest(folder: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, float]:
    t = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=folder,
        env=env or os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=3600,
    )
    return done.returncode, time.monotonic() - t


def _session(folder: Path, tests: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pytest.ini").write_text("[pytest]\ntrio_mode = true\n")
    (folder / "test_bench.py").write_text(tests)
    return folder


def bench_sim(n: int, runs: int, work: Path) -> dict[str, Any]:
    with_fixture = _session(
        work / "sim-fixture", SIM_TESTS.format(n=n, body="await rt_cluster(3, mode='sim')")
    )
    without = _session(work / "sim-bare", SIM_TESTS.format(n=n, body="pass"))
    ours, bare = [], []
    for k in range(runs):
        for folder, out in ((with_fixture, ours), (without, bare)):
            code, took = _pytest(folder)
            if code:
                raise SystemExit(f"the sim session in {folder} failed (exit {code})")
            out.append(took)
        print(
            f"  sim run {k + 1}: {n} tests, {ours[-1]:.2f} s with clusters, {bare[-1]:.2f} s bare"
        )
    per_test = [(a - b) / n * 1000 for a, b in zip(ours, bare, strict=True)]
    row = {
        "tests": n,
        "with_s": _stats(ours),
        "without_s": _stats(bare),
        "per_test_ms": _stats(per_test),
    }
    row["met"] = row["per_test_ms"]["median"] <= GOAL_SIM_MS
    return row


# ---- leftovers: real tests that pass, fail, stop at -x, or are interrupted ------------------


def _interrupted(folder: Path, env: dict[str, str], after: float) -> None:
    """One pytest session SIGINTed ``after`` seconds in (then, if it lingers, SIGKILLed: what
    that leaves is counted too)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=folder,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        proc.wait(timeout=after)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _processes_naming(folder: Path) -> list[int]:
    """Every process of this host whose working directory, command line or ``TMPDIR`` is
    under ``folder`` (every session runs there, with ``TMPDIR`` there, and node processes
    inherit both): counted from /proc, not from any ledger of ours."""
    key = str(folder)
    found = []
    for p in psutil.process_iter(["pid", "cmdline", "cwd"]):
        try:
            seen = [*(p.info["cmdline"] or ()), p.info["cwd"] or "", p.environ().get("TMPDIR", "")]
        except psutil.Error:
            continue
        if p.pid != os.getpid() and any(key in x for x in seen):
            found.append(p.pid)
    return found


def bench_leftovers(total: int, mode: str, seed: int, work: Path) -> dict[str, Any]:
    rng = random.Random(seed)
    dirs = work / "dirs.txt"
    env = {**os.environ, "RT_BENCH_DIRS": str(dirs), "TMPDIR": str(work)}
    plain = max(total * 6 // 10, 1)
    folder = _session(work / "plain", REAL_TESTS.format(n=plain, mode=mode, fail_every=4))
    code, _ = _pytest(folder, env=env)
    print(f"  leftovers: {plain} tests, every 4th failing (exit {code})")
    folder = _session(work / "x", REAL_TESTS.format(n=10, mode=mode, fail_every=3))
    code, _ = _pytest(folder, "-x", env=env)
    print(f"  leftovers: -x after the 3rd of 10 tests (exit {code})")

    def started() -> list[str]:
        return dirs.read_text().split() if dirs.exists() else []

    sessions = 0
    while len(started()) < total:
        folder = _session(
            work / f"int-{sessions}", REAL_TESTS.format(n=3, mode=mode, fail_every=99)
        )
        _interrupted(folder, env, rng.uniform(1.0, 8.0))
        sessions += 1
    opened = started()
    running = [m.pid for d in opened for m in live_members(Path(d))]
    named = _processes_naming(work)
    networks = [n for d in opened for n in leftovers(network_key(d))]
    row = {
        "mode": mode,
        "tests_started": len(opened),
        "interrupted_sessions": sessions,
        "live_in_ledgers": len(running),
        "processes_naming_the_folder": len(named),
        "namespaces_and_links": len(networks),
    }
    row["met"] = not running and not named and not networks
    print(f"  leftovers: {sessions} sessions SIGINTed; {row}")
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="runs of each start figure (default 5)")
    ap.add_argument("--sim-runs", type=int, default=3, help="sim sessions of each kind")
    ap.add_argument("--tests", type=int, default=200, help="tests of a sim session")
    ap.add_argument("--leftover-tests", type=int, default=100, help="real tests in all")
    ap.add_argument("--leftover-mode", choices=("real", "netns"), default="real")
    ap.add_argument("--seed", type=int, default=1, help="the SIGINT moments' seed")
    ap.add_argument("--simtest-seeds", type=int, default=300, help="sim chaos tests timed")
    ap.add_argument("--only", choices=FIGURES, action="append", help="some figures")
    args = ap.parse_args(argv)
    only = set(args.only or FIGURES)
    work = Path(tempfile.mkdtemp(prefix="rtsim-bench-chaos-"))
    try:
        old = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    except ValueError:
        old = {}
    out: dict[str, Any] = {
        **old,
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "swim": "compiled" if swim.native.IN_USE else "python",  # swim.native
    }
    try:
        if "start" in only:
            out["start"] = bench_start(args.runs, work / "start")
        if "sim" in only:
            out["sim"] = bench_sim(args.tests, args.sim_runs, work / "sim")
        if "simtest" in only:
            out["simtest"] = bench_simtest(args.simtest_seeds)
        if "leftovers" in only:
            (work / "left").mkdir()
            out["leftovers"] = bench_leftovers(
                args.leftover_tests, args.leftover_mode, args.seed, work / "left"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: out[k] for k in FIGURES if k in out}, indent=2))
    print(f"saved {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
