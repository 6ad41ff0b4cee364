"""``python -m bench.cluster``: start local clusters of N nodes, time convergence, measure RSS.

For each N (default 10, 32, 64, 100) a throwaway cluster starts on free ports with dashboards
on and the synthetic workload off (``--workload on|both`` to include it), is timed from the first
spawn until every node lists N alive, then each node's resident memory is read and the cluster
is stopped. Figures go to bench/results/cluster.json and a table. Never pass/fail.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import trio

from cluster.local import ClusterError, LocalCluster, launch, plan_cluster

RESULTS = Path(__file__).resolve().parent.parent / "results" / "cluster.json"
GOALS = {"converged_s_at_100": 60.0, "rss_mb_per_node": 60.0}


async def one(n: int, workload: bool, root: Path, timeout: float) -> dict[str, Any]:
    d = root / f"n{n}-{'wl' if workload else 'nowl'}"
    d.mkdir(parents=True)
    cfg = d / "node.yaml"
    cfg.write_text(f"workload: {{enabled: {'true' if workload else 'false'}}}\n")
    record = plan_cluster(
        d / "cluster", f"bench{n}", n, base_port=0, runtime_base_port=0, config=str(cfg)
    )
    cluster = LocalCluster(record)
    row: dict[str, Any] = {"nodes": n, "workload": workload}
    t0 = time.monotonic()
    try:
        took = await launch(cluster, wait=True, timeout=timeout)
        row["converged_s"] = round(float(took or 0.0), 2)
        await trio.sleep(2.0)  # let start-up allocations settle before reading memory
        rss = []
        for rec in cluster.record.nodes:
            try:
                rss.append(psutil.Process(rec.pid).memory_info().rss / 2**20)
            except psutil.NoSuchProcess:
                pass
        row["rss_mb_mean"] = round(statistics.fmean(rss), 1)
        row["rss_mb_max"] = round(max(rss), 1)
        row["load_1m"] = round(psutil.getloadavg()[0], 2)
    except ClusterError as exc:
        row["error"] = str(exc).splitlines()[0]
        row["elapsed_s"] = round(time.monotonic() - t0, 1)
    finally:
        with trio.CancelScope(shield=True):
            await cluster.down(grace=10.0)
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.cluster", description=__doc__)
    p.add_argument("--sizes", default="10,32,64,100", help="comma-separated cluster sizes")
    p.add_argument("--workload", choices=["off", "on", "both"], default="off")
    p.add_argument("--timeout", type=float, default=180.0, help="per cluster, seconds")
    p.add_argument("--out", default=str(RESULTS))
    args = p.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",") if x]
    modes = {"off": [False], "on": [True], "both": [False, True]}[args.workload]
    rows = []
    with tempfile.TemporaryDirectory(prefix="rt-bench-cluster-") as tmp:
        for workload in modes:
            for n in sizes:
                print(f"cluster of {n} (workload {'on' if workload else 'off'}) ...", flush=True)
                rows.append(trio.run(one, n, workload, Path(tmp), args.timeout))
    doc = {
        "benchmark": "cluster",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": {
            "cpus": psutil.cpu_count(),
            "python": platform.python_version(),
            "ram_gb": round(psutil.virtual_memory().total / 2**30, 1),
        },
        "goals": GOALS,
        "rows": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(
        f"\n{'nodes':>5} {'workload':>8} {'converged s':>11} {'RSS MB mean':>11} "
        f"{'RSS MB max':>10}  note"
    )
    for r in rows:
        note = r.get("error", "")
        print(
            f"{r['nodes']:>5} {'on' if r['workload'] else 'off':>8} "
            f"{r.get('converged_s', '-')!s:>11} {r.get('rss_mb_mean', '-')!s:>11} "
            f"{r.get('rss_mb_max', '-')!s:>10}  {note}"
        )
    print(
        f"\ngoals: 100 nodes converged within {GOALS['converged_s_at_100']:g}s, under "
        f"{GOALS['rss_mb_per_node']:g} MB resident per node; saved to {out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
