"""``python -m bench.api``: requests/s, latency and server CPU per request of the dashboard.

In one run, on loopback, at 1, 16 and 64 keep-alive connections:

- ``bare``:     a bare quart-trio app (``bench.api.bare``) answering ``/api/health`` with a body
                of the node's shape, on the same hypercorn setup (config, keep-alive, backlog)
- ``health``:   ``/api/health`` of a real node (``rt_run start``, two-node cluster, workload off)
- ``topology``, ``local`` (``/api/nodes/local/workers``), ``forward`` (``/api/nodes/1/workers``
  on node 0: forwarded to node 1 over the node RPC); left out with ``--health-only``

The load generator (``bench.api.load``) is one separate process, the same for every target.
Each (connections, round) runs every target back to back, bare and health adjacent and in
alternating order, so a drift of the shared machine's speed touches both alike. Per point
the server's own CPU time (``/proc/<pid>/stat``) over the run is divided by the answers it
gave: CPU per request, which other load on the machine disturbs far less than requests/s.

Derived, per connection count: health/bare requests/s, the median of the per-round ratios
(goal: at least 1.0), and bare/health CPU per request (the same goal read from CPU time); the
p50 a forward adds over the same query answered locally (goal: under 2 ms at 1 connection).
Both servers' CPU at rest is measured before the load: a node also runs SWIM, the node RPC
and periodic runtime tasks, and that background is reported beside the ratios, not removed.
Results go to ``bench/results/api.json`` (every round too) and a table is printed. Figures
only; nothing here passes or fails. Default run: about 4 minutes (``--health-only``: 2).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from cluster.local.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results" / "api.json"
LISTENING = re.compile(r"Viz: dashboard listening at http://[\d.]+:(\d+)")
CONCURRENCY = (1, 16, 64)
GOAL = 1.0  # health/bare, by requests/s and by CPU per request (issue 33; was 0.9)
TICK = os.sysconf("SC_CLK_TCK")
READY_TIMEOUT = 180.0  # seconds for a server to come up (a loaded machine starts nodes slowly)


class Servers:
    """The processes under test; all ended in ``close()``."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: list[subprocess.Popen[bytes]] = []
        self.env = {**os.environ, "HOME": str(tmp), "PYTHONPATH": str(ROOT),
                    "PYTHONUNBUFFERED": "1"}  # fmt: skip
        for key in ("RT_SERVER_CONF", "RT_VIZ_ENABLE", "RT_VIZ_PORT", "RT_VIZ_BIND"):
            self.env.pop(key, None)

    def spawn(self, argv: list[str], log: Path) -> subprocess.Popen[bytes]:
        with open(log, "ab") as out:
            proc = subprocess.Popen(argv, cwd=ROOT, env=self.env, stdout=out,
                                    stderr=subprocess.STDOUT)  # fmt: skip
        self.procs.append(proc)
        return proc

    @staticmethod
    def wait_for(proc: subprocess.Popen[bytes], log: Path, pattern: re.Pattern[str]) -> str:
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            m = pattern.search(log.read_text(errors="replace"))
            if m:
                return m.group(1)
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args!r} exited:\n{log.read_text()[-2000:]}")
            time.sleep(0.05)
        raise RuntimeError(f"{proc.args!r} not ready in {READY_TIMEOUT:g} s")

    def bare(self) -> tuple[int, int]:
        """(port, pid) of the bare app."""
        log = self.tmp / "bare.log"
        proc = self.spawn([sys.executable, "-m", "bench.api.bare"], log)
        return int(self.wait_for(proc, log, re.compile(r"PORT (\d+)"))), proc.pid

    def cluster(self) -> tuple[int, int]:
        """Two nodes (workload off); (dashboard port, pid) of node 0 once node 1 is alive."""
        ports = [free_port(), free_port()]
        hostfile = self.tmp / "hosts"
        hostfile.write_text("".join(f"127.0.0.1:{p}\n" for p in ports))
        config = self.tmp / "rt.yaml"
        config.write_text("workload: {enabled: false, pools: false}\n")
        viz = []
        for i in (1, 0):  # node 1 first, so node 0 joins at once
            log = self.tmp / f"node{i}.log"
            proc = self.spawn([sys.executable, "-m", "cluster.node.cli", "start", "--port",
                               str(ports[i]), "--hostfile", str(hostfile), "--config",
                               str(config), "--viz-port", "0"], log)  # fmt: skip
            viz.append(int(self.wait_for(proc, log, LISTENING)))
        port = viz[1]
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/topology", timeout=5) as r:
                nodes = json.load(r)["nodes"]
            if [(n["node_id"], n["state"]) for n in nodes] == [(0, "alive"), (1, "alive")]:
                return port, self.procs[-1].pid
            time.sleep(0.2)
        raise RuntimeError("node 1 never became alive in node 0's host table")

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime: fields 14 and 15


def idle_percent(pid: int, seconds: float = 3.0) -> float:
    """CPU of ``pid`` at rest, in percent of one core, over ``seconds``."""
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return round(100 * (cpu_seconds(pid) - before) / seconds, 2)


def load(port: int, path: str, connections: int, seconds: float, warmup: float) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.api.load", "--port", str(port), "--path", path,
         "--connections", str(connections), "--seconds", str(seconds), "--warmup", str(warmup)],
        cwd=ROOT, capture_output=True, text=True, timeout=seconds + warmup + 60, check=True,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def measure(pid: int, port: int, path: str, conns: int, args: argparse.Namespace) -> dict[str, Any]:
    """One point: the load's figures and the server's CPU microseconds per answer."""
    before = cpu_seconds(pid)
    r = load(port, path, conns, args.seconds, args.warmup)
    used = cpu_seconds(pid) - before
    r["server_cpu_s"] = round(used, 3)
    r["cpu_us_per_request"] = round(1e6 * used / r["completed"], 1) if r["completed"] else None
    return r


Target = tuple[str, int, int, str]  # name, server pid, port, path


def run_rounds(targets: list[Target], args: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for conns in CONCURRENCY:
        for round_no in range(args.rounds):
            # bare and health adjacent, their order alternating from round to round
            order = targets if round_no % 2 == 0 else [targets[1], targets[0], *targets[2:]]
            for name, pid, port, path in order:
                r = measure(pid, port, path, conns, args)
                rows.append({"target": name, "round": round_no, **r})
                print(f"  {name:<9} {conns:>3} conns round {round_no}: {r['rps']:>8.1f} req/s"
                      f" {r['cpu_us_per_request'] or 0:>7.1f} us CPU/req", flush=True)  # fmt: skip
    return rows


def pick(rows: list[dict[str, Any]], target: str, conns: int) -> list[dict[str, Any]]:
    return sorted((r for r in rows if r["target"] == target and r["connections"] == conns),
                  key=lambda r: r["round"])  # fmt: skip


def best(rows: list[dict[str, Any]], target: str, conns: int) -> dict[str, Any]:
    """The best round of a point (most requests/s): the least disturbed by other load."""
    return max(pick(rows, target, conns), key=lambda r: r["rps"])


def ratios(rows: list[dict[str, Any]], conns: int) -> dict[str, Any]:
    """health against bare at ``conns``: per round, their median, and best against best."""
    pairs = list(zip(pick(rows, "bare", conns), pick(rows, "health", conns), strict=True))
    by_rps = [h["rps"] / b["rps"] for b, h in pairs if b["rps"]]
    by_cpu = [b["cpu_us_per_request"] / h["cpu_us_per_request"] for b, h in pairs
              if b["cpu_us_per_request"] and h["cpu_us_per_request"]]  # fmt: skip
    med_rps = statistics.median(by_rps) if by_rps else 0.0
    med_cpu = statistics.median(by_cpu) if by_cpu else 0.0
    best_h, best_b = best(rows, "health", conns), best(rows, "bare", conns)
    return {
        "rps_per_round": [round(x, 3) for x in by_rps],
        "rps_median": round(med_rps, 3),
        "rps_best_rounds": round(best_h["rps"] / best_b["rps"], 3),
        "cpu_per_round": [round(x, 3) for x in by_cpu],
        "cpu_median": round(med_cpu, 3),
        "meets_goal": med_rps >= GOAL,  # the figure: requests/s
        "cpu_meets_goal": med_cpu >= GOAL,  # the same read from CPU time: less noisy
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'target':<9} {'path':<24} {'conns':>5} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8}"
             f" {'CPU us/req':>10} {'non-200':>7}"]  # fmt: skip
    for r in rows:
        bad = r["requests"] - r["statuses"].get("200", 0) + r["errors"]
        lines.append(
            f"{r['target']:<9} {r['path']:<24} {r['connections']:>5} {r['rps']:>9.1f} "
            f"{r['p50_ms'] or 0:>8.2f} {r['p99_ms'] or 0:>8.2f} "
            f"{r['cpu_us_per_request'] or 0:>10.1f} {bad:>7}"
        )
    return "\n".join(lines)


def derive(rows: list[dict[str, Any]], names: list[str], idle: dict[str, float]) -> dict[str, Any]:
    derived: dict[str, Any] = {
        "health_over_bare": {str(c): ratios(rows, c) for c in CONCURRENCY},
        "idle_cpu_percent": idle,
        "load": os.getloadavg(),
        "goals": {
            "health_over_bare": f">= {GOAL} by req/s (median of rounds); CPU/req beside it",
            "forward_added_p50_ms": "< 2 at 1 conn",
        },
    }
    if "forward" in names:
        derived["forward_added_p50_ms"] = {
            str(c): round(best(rows, "forward", c)["p50_ms"] - best(rows, "local", c)["p50_ms"], 3)
            for c in CONCURRENCY
        }
    return derived


def summary(derived: dict[str, Any]) -> str:
    lines = []
    for c in CONCURRENCY:
        r = derived["health_over_bare"][str(c)]
        lines.append(
            f"{c:>3} conns: /api/health at {r['rps_median']:.2f} of bare by req/s (rounds "
            f"{', '.join(f'{x:.2f}' for x in r['rps_per_round'])}), {r['cpu_median']:.2f} by "
            f"CPU per request; goal >= {GOAL}: {'met' if r['meets_goal'] else 'NOT met'}"
            f" by req/s, {'met' if r['cpu_meets_goal'] else 'NOT met'} by CPU"
        )
        if "forward_added_p50_ms" in derived:
            lines.append(f"           a forward adds {derived['forward_added_p50_ms'][str(c)]:.2f}"
                         " ms at p50 over the local query")  # fmt: skip
    idle = derived["idle_cpu_percent"]
    lines.append(f"at rest before the load: node {idle['node']:.2f} % CPU, "
                 f"bare {idle['bare']:.2f} %")  # fmt: skip
    return "\n".join(lines)


def save(report: dict[str, Any], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = out.with_suffix(".json.tmp")
    tmp_out.write_text(json.dumps(report, indent=2) + "\n")
    tmp_out.replace(out)


def main() -> None:
    ap = argparse.ArgumentParser(description="Dashboard API benchmark (loopback only)")
    ap.add_argument("--seconds", type=float, default=3.0, help="measured seconds per point")
    ap.add_argument("--warmup", type=float, default=0.5, help="unmeasured seconds per point")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds per point")
    ap.add_argument("--health-only", action="store_true", help="bare and /api/health only")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    if args.rounds < 1 or args.seconds <= 0 or args.warmup < 0:
        ap.error("--rounds must be at least 1, --seconds positive, --warmup not negative")
    # SIGTERM unwinds like ^C, through the finally below: no server is left running.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    servers = Servers(Path(tempfile.mkdtemp(prefix="bench-api-")))
    try:
        bare_port, bare_pid = servers.bare()
        node_port, node_pid = servers.cluster()
        targets: list[Target] = [("bare", bare_pid, bare_port, "/api/health"),
                                 ("health", node_pid, node_port, "/api/health")]  # fmt: skip
        if not args.health_only:
            targets += [("topology", node_pid, node_port, "/api/topology"),
                        ("local", node_pid, node_port, "/api/nodes/local/workers"),
                        ("forward", node_pid, node_port, "/api/nodes/1/workers")]  # fmt: skip
        idle = {"node": idle_percent(node_pid), "bare": idle_percent(bare_pid)}
        rows = run_rounds(targets, args)
    finally:
        servers.close()
    names = [t[0] for t in targets]
    derived = derive(rows, names, idle)
    results = [best(rows, name, c) for c in CONCURRENCY for name in names]
    save({"benchmark": "bench.api", "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
          "python": platform.python_version(), "platform": platform.platform(),
          "cpus": os.cpu_count(), "seconds_per_point": args.seconds,
          "warmup_per_point": args.warmup, "rounds": args.rounds, "results": results,
          "all_rounds": rows, "derived": derived}, args.out)  # fmt: skip
    print()
    print(table(results))
    print()
    print(summary(derived))
    print(f"\nsaved {args.out}")


if __name__ == "__main__":
    main()
