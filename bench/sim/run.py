"""``python -m bench.sim``: how fast and how large the simulated network runs the real machines.

Every figure comes from a fresh child process (``--one``), so peak memory is that run's own:

- ``build``: ``SimNetwork(n)`` with the instant bootstrap (one shared roster), for several N:
  seconds to build, and per 1,000 nodes (flat when the build is linear in N).
- ``rest``: N machines at rest for ``--rest`` virtual seconds: speed as virtual seconds per
  wall second and per CPU second of the process (the machine is shared: CPU seconds are the
  steadier figure), packets per node per second, peak RSS.
- ``kill``: ``rt_cluster scenario kill_one --sim -n N --seed 7``, the whole command (start-up,
  the run, results.json, report.html): its verdict, wall and CPU seconds, virtual seconds per
  wall and per CPU second, detection figures, peak RSS (goals, issue 45: at least 20x real
  time at 1,000 nodes; at least 1x and at most 1 GiB at 10,000). Above
  ``scenarios.play.sim.JOIN_LIMIT`` nodes the simulated cluster starts converged (rule 1
  there); up to it, it joins first.
- Each row says which ``swim`` ran it (``"swim": "compiled"`` or ``"python"``: ``swim.native``);
  ``kill`` at 1,000 nodes runs twice, compiled and as Python (``RTSIM_PURE=1``), side by side.

Prints a table and saves ``bench/results/sim.json``. Figures only: nothing passes or fails.
Default run: about 2 minutes of CPU on a quiet core, most of it the 10,000-node kill_one;
``--quick`` leaves out 10,000.
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

RESULTS = Path(__file__).resolve().parents[1] / "results"
BUILD_SIZES = (1000, 2000, 5000, 10000, 20000)
REST_SIZES = (100, 1000, 10000)
KILL_SIZES = (100, 1000, 10000)


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _swim() -> str:
    import swim

    return "compiled" if swim.native.IN_USE else "python"


def one_build(n: int) -> dict[str, Any]:
    from swim import SimNetwork

    w0, c0 = _clocks()
    SimNetwork(n, seed=1, record_events=False)
    w1, c1 = _clocks()
    return {
        "n": n,
        "swim": _swim(),
        "build_s": w1 - w0,
        "build_cpu_s": c1 - c0,
        "peak_rss_mib": _peak_mib(),
    }


def one_rest(n: int, virtual: float) -> dict[str, Any]:
    from swim import SimNetwork

    w0 = time.perf_counter()
    net = SimNetwork(n, seed=1, record_events=False)
    w1, c1 = _clocks()
    net.run_for(virtual)
    w2, c2 = _clocks()
    return {
        "n": n,
        "swim": _swim(),
        "build_s": w1 - w0,
        "virtual_s": virtual,
        "wall_s": w2 - w1,
        "cpu_s": c2 - c1,
        "speed_wall": virtual / (w2 - w1),
        "speed_cpu": virtual / (c2 - c1),
        "packets_per_node_s": net.packets / n / virtual,
        "peak_rss_mib": _peak_mib(),
    }


def one_kill(n: int) -> dict[str, Any]:
    """``rt_cluster scenario kill_one --sim -n N --seed 7``, the whole command in a child process
    (start-up, the run, its verdict, results.json and report.html): its wall and CPU seconds
    and peak RSS, the virtual seconds it simulated, its verdict and detection figures."""
    with tempfile.TemporaryDirectory(prefix="rt-bench-sim-") as tmp:
        cmd = [sys.executable, "-m", "scenarios.command", "scenario", "kill_one", "--sim"]
        cmd += ["-n", str(n), "--seed", "7", "--out", tmp]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        w0 = time.perf_counter()
        status = subprocess.run(cmd, capture_output=True, check=False).returncode
        wall = time.perf_counter() - w0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        results = json.loads((Path(tmp) / "results.json").read_text())
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    virtual = float(results.get("duration") or 0.0)
    return {
        "n": n,
        "swim": _swim(),  # the command's too: same build, same environment
        "exit_status": status,
        "verdict": results["verdict"],
        "wall_s": wall,
        "cpu_s": cpu,
        "scenario_virtual_s": virtual,
        "speed_wall": virtual / wall,
        "speed_cpu": virtual / cpu if cpu else None,
        "detection": [
            {k: v for k, v in d.items() if k != "per_observer"} for d in results["detection"]
        ],
        "peak_rss_mib": after.ru_maxrss / 1024,  # the largest child's: this command's
    }


def _child(args: list[str], python: bool = False) -> dict[str, Any]:
    """One figure from a fresh process (its own peak RSS); ``python``: swim as Python."""
    cmd = [sys.executable, "-m", "bench.sim", "--one", *args]
    env = {**os.environ, "RTSIM_PURE": "1"} if python else None
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def _say(line: str) -> None:
    print(line, flush=True)


def _f(v: Any, spec: str = ".2f") -> str:
    return "-" if v is None else format(v, spec)


def table(res: dict[str, Any]) -> str:
    lines = [
        "build (instant bootstrap, one shared roster)",
        f"{'N':>7} {'wall s':>8} {'cpu s':>8} {'cpu s/1000':>10} {'MiB':>6}",
    ]
    for b in res["build"]:
        per = b["build_cpu_s"] / b["n"] * 1e3
        lines.append(
            f"{b['n']:>7} {_f(b['build_s'], '.3f'):>8} {_f(b['build_cpu_s'], '.3f'):>8} "
            f"{per:>10.4f} {_f(b['peak_rss_mib'], '.0f'):>6}"
        )
    head = f"{'N':>7} {'virt/wall':>9} {'virt/cpu':>9} {'pkt/node/s':>10} {'MiB':>6}"
    lines += ["", f"at rest ({res['rest_virtual_s']:g} virtual s)", head]
    for r in res["rest"]:
        lines.append(
            f"{r['n']:>7} {_f(r['speed_wall'], '.1f'):>9} {_f(r['speed_cpu'], '.1f'):>9} "
            f"{_f(r['packets_per_node_s']):>10} {_f(r['peak_rss_mib'], '.0f'):>6}"
        )
    lines += [
        "",
        "rt_cluster scenario kill_one --sim -n N (run, results.json, report.html)",
        f"{'N':>7} {'swim':>8} {'verdict':>7} {'wall s':>7} {'cpu s':>7} {'virt/wall':>9} "
        f"{'virt/cpu':>8} {'MiB':>6}",
    ]
    for k in res["kill"]:
        # the scenario's virtual time plus the join before it (none above JOIN_LIMIT)
        speed = k["scenario_virtual_s"] / k["cpu_s"] if k["cpu_s"] else None
        lines.append(
            f"{k['n']:>7} {k.get('swim', '-'):>8} {k['verdict']:>7} {_f(k['wall_s'], '.1f'):>7} "
            f"{_f(k['cpu_s'], '.1f'):>7} "
            f"{_f(k.get('speed_wall'), '.1f'):>9} {_f(speed, '.1f'):>8} "
            f"{_f(k['peak_rss_mib'], '.0f'):>6}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.sim", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="leave out 10,000 nodes")
    ap.add_argument("--rest", type=float, default=20.0, help="virtual seconds at rest")
    ap.add_argument("--out", default=str(RESULTS / "sim.json"), help="JSON file")
    ap.add_argument("--one", nargs="+", help=argparse.SUPPRESS)  # a child's one figure
    ap.add_argument("--show", action="store_true", help="print the table of --out and stop")
    args = ap.parse_args(argv)
    if args.show:
        print(table(json.loads(Path(args.out).read_text())))
        return 0
    if args.one:
        what, n = args.one[0], int(args.one[1])
        fig = {"build": one_build, "kill": one_kill}.get(what)
        print(json.dumps(one_rest(n, args.rest) if fig is None else fig(n)))
        return 0
    cap = 1000 if args.quick else 10**9
    res: dict[str, Any] = {"when": time.strftime("%Y-%m-%dT%H:%M:%S"), "rest_virtual_s": args.rest}
    res["host"] = {"python": platform.python_version(), "machine": platform.machine()}
    res["build"], res["rest"], res["kill"] = [], [], []
    for n in [n for n in BUILD_SIZES if n <= 2 * cap]:
        res["build"].append(_child(["build", str(n)]))
        _say(f"build {n}: {res['build'][-1]['build_s']:.2f} s")
    for n in [n for n in REST_SIZES if n <= cap]:
        res["rest"].append(_child(["rest", str(n), "--rest", str(args.rest)]))
        _say(f"rest {n}: {res['rest'][-1]['speed_cpu']:.1f}x per CPU second")
    for n in [n for n in KILL_SIZES if n <= cap]:
        res["kill"].append(_child(["kill", str(n)]))
        _say(f"kill_one {n}: {res['kill'][-1]['verdict']}, {res['kill'][-1]['wall_s']:.1f} s")
        if n == 1000:  # the same command with swim as Python, beside it
            res["kill"].append(_child(["kill", str(n)], python=True))
            _say(f"kill_one {n}, python: {res['kill'][-1]['wall_s']:.1f} s")
    print(table(res))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2))
    print(f"saved {out}")
    return 0
