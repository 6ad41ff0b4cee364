"""``python -m bench.idle``: what a node costs at rest, rtsim beside Serf in the same run.

For each N (default 10, 20, 50): N rtsim nodes started the way ``rt_cluster up`` starts them
(``cluster.local``: forked by the zygote, each under its watcher, dashboards on, workload off,
gossip keyed) and N Serf agents (``bench.membership.procs.SerfCluster``: no monitor, no statsd,
keyed too), both on the same memberlist timing profile (``local`` by default: 1 s probe
interval, 0.2 s probe timeout, 0.1 s gossip interval, rtsim's defaults; ``--profile lan`` for
Serf's default). Both converge, rest ``--settle`` seconds, then one window of ``--window``
seconds measures the CPU of every process side by side (``measure.cpu_percent``), then their
memory is read from smaps_rollup: PSS, USS (private) and RSS per node, and for rtsim also per
node with its watcher (a process that waits for its node to end). Suspicions rtsim's nodes
logged during the window are counted (at rest there should be none). Prints a table with the
goals, saves ``bench/results/idle.json``. Never pass/fail.

"conv s" is each side's start-up to convergence as this benchmark sees it, not a race: Serf's
agents start one after another and are polled with one ``serf members`` process per agent
(bench.cluster and the real-cluster benchmark time start-up).

Run time: about 30 s of start-up and stop plus ``--settle`` and ``--window`` per size: with the
defaults (10, 20 and 50 nodes, 10 s + 60 s) about five minutes; ``--sizes 10 --window 20``
about a minute.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import trio

from bench.membership.procs import SerfCluster
from cluster.local import ClusterError, LocalCluster, launch, members, plan_cluster
from swim import SwimConfig

from .measure import Memory, cpu_percent, mean, memory, summed

RESULTS = Path(__file__).resolve().parents[1] / "results" / "idle.json"
# Issue 42: half of Serf's CPU beside it, PSS 6.5 MB (issue 33: Serf's CPU, 10 MB).
GOALS = {"cpu_ratio_to_serf": 0.5, "pss_mb_per_node": 6.5}
SERF = "/usr/bin/serf"


def _node_config(directory: Path, profile: str) -> Path:
    """The nodes' configuration file: workload off, and the LAN timings if asked (JSON is
    YAML)."""
    doc: dict[str, Any] = {"workload": {"enabled": False}}
    if profile == "lan":
        local, lan = SwimConfig().as_dict(), SwimConfig.lan().as_dict()
        doc["swim"] = {k: v for k, v in lan.items() if local.get(k) != v}
    path = directory / "node.yaml"
    path.write_text(json.dumps(doc) + "\n")
    return path


def _suspicions(directory: Path, n: int, t0: float, t1: float) -> int:
    """Changes to suspected, dead or left that rtsim's nodes logged between t0 and t1
    (``time.monotonic()``)."""
    count = 0
    for i in range(n):
        path = directory / f"node-{i}.events"
        lines = path.read_text().splitlines() if path.exists() else []
        for line in lines:
            e = json.loads(line)
            count += t0 <= e["mono"] <= t1 and e["new"] in ("suspected", "dead", "left")
    return count


def _memory_row(mems: list[Memory]) -> dict[str, Any]:
    def avg(attr: str) -> float | None:
        return round(statistics.fmean(getattr(m, attr) for m in mems), 2) if mems else None

    return {"pss_mb": avg("pss"), "uss_mb": avg("uss"), "rss_mb": avg("rss")}


def _cpu_row(cpu: list[float | None]) -> dict[str, Any]:
    known = [c for c in cpu if c is not None]
    m = mean(known)
    return {
        "cpu_pct_mean": None if m is None else round(m, 3),
        "cpu_pct_median": round(statistics.median(known), 3) if known else None,
        "measured": len(known),
    }


async def _start_both(
    n: int, args: argparse.Namespace, serf: SerfCluster, cluster: LocalCluster
) -> dict[str, float]:
    """Serf's agents, then rtsim's nodes; seconds from each one's first start to convergence."""
    t0 = time.monotonic()
    await trio.to_thread.run_sync(serf.start)
    await trio.to_thread.run_sync(serf.wait_converged, args.timeout)
    serf_s = time.monotonic() - t0
    print(f"  serf: {n} agents converged in {serf_s:.1f}s", flush=True)
    rt_s = float(await launch(cluster, wait=True, timeout=args.timeout) or 0.0)
    print(f"  rtsim: {n} nodes converged in {rt_s:.1f}s", flush=True)
    return {"rtsim": round(rt_s, 2), "serf": round(serf_s, 2)}


async def one_size(n: int, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Both clusters of ``n`` up side by side, one window at rest, then both ended."""
    d = root / f"n{n}"
    d.mkdir(parents=True)
    key = base64.b64encode(os.urandom(32)).decode() if args.keyring else ""
    serf = SerfCluster(n, args.serf, profile=args.profile, watch=False, encrypt=key)
    record = plan_cluster(
        d / "cluster",
        f"idle{n}",
        n,
        base_port=0,
        runtime_base_port=0,
        config=str(_node_config(d, args.profile)),
        keyring=args.keyring,
    )
    cluster = LocalCluster(record)
    row: dict[str, Any] = {"nodes": n}
    try:
        row["converged_s"] = await _start_both(n, args, serf, cluster)
        await trio.sleep(args.settle)
        procs = members(d / "cluster")
        nodes = [m.pid for m in procs]
        watchers = [m.watcher for m in procs]
        agents = serf.pids()
        print(f"  at rest: measuring {args.window:g}s ...", flush=True)
        t0 = time.monotonic()
        cpu = await cpu_percent([*nodes, *watchers, *agents], args.window)
        t1 = time.monotonic()
        node_mem = [memory(p) for p in nodes]
        watcher_mem = [memory(p) for p in watchers]
        serf_mem = [m for m in (memory(p) for p in agents) if m is not None]
        rt = {
            **_cpu_row([cpu[p] for p in nodes]),
            **_memory_row([m for m in node_mem if m is not None]),
        }
        with_watcher = _memory_row(summed(zip(node_mem, watcher_mem, strict=True)))
        rt["with_watcher"] = {
            **_cpu_row([_add(cpu[a], cpu[b]) for a, b in zip(nodes, watchers, strict=True)]),
            **with_watcher,
        }
        rt["suspicions_at_rest"] = _suspicions(d / "cluster", n, t0, t1)
        row["rtsim"] = rt
        row["serf"] = {**_cpu_row([cpu[p] for p in agents]), **_memory_row(serf_mem)}
        row["load_1m"] = round(psutil.getloadavg()[0], 2)
    except (ClusterError, RuntimeError) as exc:
        row["error"] = str(exc).splitlines()[0]
    finally:
        with trio.CancelScope(shield=True):
            await cluster.down(grace=10.0)
            await trio.to_thread.run_sync(serf.stop)
    return row


def _add(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def _fmt(v: Any, width: int, digits: int = 2) -> str:
    text = "-" if v is None else f"{v:.{digits}f}" if isinstance(v, float) else str(v)
    return f"{text:>{width}}"


def _ratio(a: Any, b: Any) -> float | None:
    return round(a / b, 2) if isinstance(a, float) and isinstance(b, float) and b > 0 else None


def print_table(doc: dict[str, Any]) -> None:
    s = doc["settings"]
    print(
        f"\nidle cost per node at rest: {s['window_s']:g}s window after convergence, profile "
        f"{s['profile']}, gossip {'keyed' if s['keyring'] else 'plain'}, workload off\n"
    )
    print(
        f"{'N':>4} {'system':<16} {'CPU % mean':>10} {'median':>7} {'PSS MB':>7} "
        f"{'USS MB':>7} {'RSS MB':>7} {'conv s':>6} {'susp':>5}"
    )
    for r in doc["rows"]:
        if "error" in r:
            print(f"{r['nodes']:>4} error: {r['error']}")
            continue
        rt, sf = r["rtsim"], r["serf"]
        lines = [
            ("rtsim node", rt, r["converged_s"]["rtsim"], rt["suspicions_at_rest"]),
            ("rtsim +watcher", rt["with_watcher"], None, None),
            ("serf agent", sf, r["converged_s"]["serf"], None),
        ]
        for name, m, conv, susp in lines:
            print(
                f"{r['nodes']:>4} {name:<16} {_fmt(m['cpu_pct_mean'], 10, 3)} "
                f"{_fmt(m['cpu_pct_median'], 7, 3)} {_fmt(m['pss_mb'], 7, 1)} "
                f"{_fmt(m['uss_mb'], 7, 1)} {_fmt(m['rss_mb'], 7, 1)} {_fmt(conv, 6, 1)} "
                f"{_fmt(susp, 5)}"
            )
        print(
            f"{'':>4} {'rtsim / serf':<16} {_fmt(r['cpu_ratio'], 10)} {'':>7} "
            f"{_fmt(r['pss_ratio'], 7)}"
        )
    g = doc["goals"]
    print(
        f"\ngoals: CPU per node at most Serf's beside it (ratio <= {g['cpu_ratio_to_serf']:g}); "
        f"PSS per node at most {g['pss_mb_per_node']:g} MB. CPU is percent of one core."
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.idle",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--sizes", default="10,20,50", help="comma-separated cluster sizes")
    p.add_argument("--window", type=float, default=60.0, help="seconds measured at rest")
    p.add_argument("--settle", type=float, default=10.0, help="seconds of rest before it")
    p.add_argument("--profile", choices=["local", "lan"], default="local")
    p.add_argument(
        "--no-keyring",
        dest="keyring",
        action="store_false",
        help="plain gossip on both sides (default: keyed on both)",
    )
    p.add_argument("--timeout", type=float, default=180.0, help="convergence, seconds")
    p.add_argument("--serf", default=SERF, help="the serf binary")
    p.add_argument("--out", default=str(RESULTS))
    args = p.parse_args(argv)
    if not Path(args.serf).exists():
        print(f"bench.idle: no serf binary at {args.serf} (apt-get install serf)", file=sys.stderr)
        return 2
    sizes = [int(x) for x in args.sizes.split(",") if x]
    rows = []
    with tempfile.TemporaryDirectory(prefix="rt-bench-idle-") as tmp:
        for n in sizes:
            print(f"{n} rtsim nodes beside {n} serf agents ...", flush=True)
            row = trio.run(one_size, n, Path(tmp), args)
            if "error" not in row:
                row["cpu_ratio"] = _ratio(row["rtsim"]["cpu_pct_mean"], row["serf"]["cpu_pct_mean"])
                row["pss_ratio"] = _ratio(row["rtsim"]["pss_mb"], row["serf"]["pss_mb"])
            rows.append(row)
    doc = {
        "benchmark": "idle",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": {
            "cpus": psutil.cpu_count(),
            "python": platform.python_version(),
            "ram_gb": round(psutil.virtual_memory().total / 2**30, 1),
        },
        "settings": {
            "window_s": args.window,
            "settle_s": args.settle,
            "profile": args.profile,
            "keyring": args.keyring,
        },
        "goals": GOALS,
        "rows": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print_table(doc)
    print(f"saved to {out}")
    return 0
