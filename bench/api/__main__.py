"""``python -m bench.api``: requests/s and p50/p99 latency of the dashboard's JSON API.

In one run, on loopback, each at 1, 16 and 64 keep-alive connections:

- ``bare``:    a bare quart-trio "hello" app on the same hypercorn setup (``bench.api.bare``)
- ``health``:  ``/api/health`` of a real node (``rt_run start``, two-node cluster)
- ``topology``: ``/api/topology`` of that node
- ``local``:   ``/api/nodes/local/workers`` (a per-node query answered locally)
- ``forward``: ``/api/nodes/1/workers`` on node 0 (forwarded to node 1 over the node RPC)

The load generator (``bench.api.load``) is a separate process from every server. Results go
to ``bench/results/api.json`` and a table is printed. Derived figures: health/bare throughput
ratio (goal: at least 0.8) and the p50 a forward adds over the same query answered locally
(goal: under 2 ms). Each point is run ``--rounds`` times, interleaved with the other targets,
and the best round is reported (all rounds are saved too): on a shared machine the best round
is the one least disturbed by other work. Figures only; nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
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
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            m = pattern.search(log.read_text(errors="replace"))
            if m:
                return m.group(1)
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args!r} exited:\n{log.read_text()[-2000:]}")
            time.sleep(0.05)
        raise RuntimeError(f"{proc.args!r} not ready in 60 s")

    def bare(self) -> int:
        log = self.tmp / "bare.log"
        proc = self.spawn([sys.executable, "-m", "bench.api.bare"], log)
        return int(self.wait_for(proc, log, re.compile(r"PORT (\d+)")))

    def cluster(self) -> int:
        """Two nodes (workload off); returns node 0's dashboard port once node 1 is alive."""
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
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/topology", timeout=5) as r:
                nodes = json.load(r)["nodes"]
            if [(n["node_id"], n["state"]) for n in nodes] == [(0, "alive"), (1, "alive")]:
                return port
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


def load(port: int, path: str, connections: int, seconds: float, warmup: float) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.api.load", "--port", str(port), "--path", path,
         "--connections", str(connections), "--seconds", str(seconds), "--warmup", str(warmup)],
        cwd=ROOT, capture_output=True, text=True, timeout=seconds + warmup + 60, check=True,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'target':<9} {'path':<24} {'conns':>5} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8}"
             f" {'non-200':>7}"]  # fmt: skip
    for r in rows:
        bad = r["requests"] - r["statuses"].get("200", 0) + r["errors"]
        lines.append(
            f"{r['target']:<9} {r['path']:<24} {r['connections']:>5} {r['rps']:>9.1f} "
            f"{r['p50_ms'] or 0:>8.2f} {r['p99_ms'] or 0:>8.2f} {bad:>7}"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description="Dashboard API benchmark (loopback only)")
    ap.add_argument("--seconds", type=float, default=3.0, help="measured seconds per point")
    ap.add_argument("--warmup", type=float, default=0.5, help="unmeasured seconds per point")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds; best is kept")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-api-"))
    servers = Servers(tmp)
    rows: list[dict[str, Any]] = []
    try:
        bare_port = servers.bare()
        node_port = servers.cluster()
        targets = [
            ("bare", bare_port, "/hello"),
            ("health", node_port, "/api/health"),
            ("topology", node_port, "/api/topology"),
            ("local", node_port, "/api/nodes/local/workers"),
            ("forward", node_port, "/api/nodes/1/workers"),
        ]
        for conns in CONCURRENCY:  # the targets of one concurrency back to back, interleaved
            for round_no in range(args.rounds):
                for name, port, path in targets:
                    r = load(port, path, conns, args.seconds, args.warmup)
                    rows.append({"target": name, "round": round_no, **r})
                    print(f"  {name:<9} {conns:>3} conns round {round_no}: {r['rps']:>8.1f} req/s",
                          flush=True)  # fmt: skip
    finally:
        servers.close()

    def point(target: str, conns: int) -> dict[str, Any]:
        """The best round of a point (most requests/s): the least disturbed by other load."""
        return max(
            (r for r in rows if r["target"] == target and r["connections"] == conns),
            key=lambda r: r["rps"],
        )

    best = [point(name, c) for c in CONCURRENCY for name, _, _ in targets]

    derived: dict[str, Any] = {
        "health_over_bare_rps": {
            str(c): round(point("health", c)["rps"] / point("bare", c)["rps"], 3)
            for c in CONCURRENCY
        },
        "forward_added_p50_ms": {
            str(c): round(point("forward", c)["p50_ms"] - point("local", c)["p50_ms"], 3)
            for c in CONCURRENCY
        },
        "load": os.getloadavg(),
        "goals": {"health_over_bare_rps": ">= 0.8", "forward_added_p50_ms": "< 2 at 1 conn"},
    }
    report = {
        "benchmark": "bench.api",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "seconds_per_point": args.seconds,
        "warmup_per_point": args.warmup,
        "rounds": args.rounds,
        "results": best,
        "all_rounds": rows,
        "derived": derived,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = args.out.with_suffix(".json.tmp")
    tmp_out.write_text(json.dumps(report, indent=2) + "\n")
    tmp_out.replace(args.out)
    print()
    print(table(best))
    print()
    for c in CONCURRENCY:
        print(f"{c:>3} conns: /api/health at {derived['health_over_bare_rps'][str(c)]:.2f} of bare"
              f" (goal >= 0.8); forward adds {derived['forward_added_p50_ms'][str(c)]:.2f} ms"
              f" at p50 over local")  # fmt: skip
    print(f"\nsaved {args.out}")


if __name__ == "__main__":
    main()
