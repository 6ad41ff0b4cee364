"""The three runs of ``python -m bench.cluster`` on real local clusters: up (time to converge,
start-up CPU, memory), rest (N nodes left alone for T minutes: false suspicions, CPU, loop
lag) and loss (the same with loss on every node: false deaths).

Rules:
1. Every cluster is a throwaway one under a temporary directory, on free ports, dashboards on,
   synthetic workload off; it is ended (``down``, verified) whatever happens.
2. No member is stopped during a rest or loss run, so every suspicion of a member, every
   death or leave, is false (``EventTally`` counts them from every node's event log).
3. Progress goes to stdout about once a second while a cluster starts, every
   ``report_every`` seconds while it rests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import trio

from cluster.local import ClusterError, LaunchProgress, LocalCluster, launch, plan_cluster

from .figures import (
    EventTally,
    cpu_seconds,
    event_logs,
    loop_lag,
    memory,
    start_figures,
    watchers,
)

__all__ = ["rest_run", "up_run"]

SETTLE = 2.0  # seconds after convergence before memory is read


def _show(label: str) -> Callable[[LaunchProgress], None]:
    def show(p: LaunchProgress) -> None:
        print(
            f"  {label} {p.elapsed:6.1f}s  started {p.started}/{p.total}  "
            f"listening {p.listening}/{p.total}  converged {p.converged}/{p.total}",
            flush=True,
        )

    return show


def _cluster(root: Path, name: str, n: int) -> LocalCluster:
    d = root / name
    d.mkdir(parents=True)
    cfg = d / "node.yaml"
    cfg.write_text("workload: {enabled: false}\n")
    record = plan_cluster(d / "cluster", name, n, base_port=0, runtime_base_port=0, config=str(cfg))
    return LocalCluster(record)


async def up_run(n: int, root: Path, timeout: float) -> dict[str, Any]:
    """One cluster of ``n``: seconds from the first fork until every node lists all alive,
    CPU seconds the whole start cost (nodes, watchers, this launcher), memory per node."""
    cluster = _cluster(root, f"up{n}", n)
    row: dict[str, Any] = {"system": "rtsim", "nodes": n}
    me = psutil.Process()
    cpu0 = me.cpu_times()
    t0 = time.monotonic()
    try:
        took = await launch(cluster, timeout=timeout, progress=_show(f"rtsim {n}"))
        row["converged_s"] = round(float(took or 0.0), 2)
        pids = [rec.pid for rec in cluster.record.nodes]
        cpu1 = me.cpu_times()
        launcher = cpu1.user + cpu1.system - cpu0.user - cpu0.system
        row["start_cpu_s"] = round(cpu_seconds(pids) + cpu_seconds(watchers(pids)) + launcher, 1)
        row["launcher_cpu_s"] = round(launcher, 1)
        row.update(start_figures(event_logs(cluster), {r.node_id for r in cluster.record.nodes}))
        await trio.sleep(SETTLE)
        row.update(memory(pids))
        row["watcher_pss_mb_mean"] = memory(watchers(pids)).get("pss_mb_mean")
        row["load_1m"] = round(psutil.getloadavg()[0], 2)
    except ClusterError as exc:
        row["error"] = str(exc).splitlines()[0]
        row["elapsed_s"] = round(time.monotonic() - t0, 1)
    finally:
        with trio.CancelScope(shield=True):
            await cluster.down(grace=10.0)
    return row


async def _rest(
    cluster: LocalCluster, seconds: float, report_every: float, label: str
) -> dict[str, Any]:
    """Leave the cluster alone for ``seconds``; what its event logs and processes show."""
    pids = [rec.pid for rec in cluster.record.nodes]
    live = {rec.node_id for rec in cluster.record.nodes}
    tally = EventTally(event_logs(cluster), since=time.monotonic())
    cpu0, t0 = cpu_seconds(pids), time.monotonic()
    worst_now = 0.0
    while (elapsed := time.monotonic() - t0) < seconds:
        await trio.sleep(min(report_every, seconds - elapsed))
        tally.read(live)
        lag = await loop_lag(cluster)
        worst_now = max(worst_now, lag["lag_ms_max_now"] or 0.0)
        used = (cpu_seconds(pids) - cpu0) / max(time.monotonic() - t0, 1e-9)
        print(
            f"  {label} {time.monotonic() - t0:6.0f}s  suspicions {tally.suspicions} "
            f"({tally.raised} raised)  "
            f"deaths {tally.deaths}  probe failures {tally.counts.get('probe_failed', 0)}  "
            f"CPU {100 * used / len(pids):.2f}% a node ({100 * used:.0f}% of a core)  "
            f"loop lag now max {lag['lag_ms_max_now']} ms",
            flush=True,
        )
    tally.read(live)
    dt = time.monotonic() - t0
    used = (cpu_seconds(pids) - cpu0) / dt
    return {
        "rest_s": round(dt, 1),
        "false_suspicions": tally.suspicions,
        "suspicions_raised": tally.raised,
        "false_deaths": tally.deaths,
        "probe_failures": tally.counts.get("probe_failed", 0),
        "members_suspected": len(tally.subjects),
        "cpu_pct_per_node": round(100 * used / len(pids), 3),
        "cpu_pct_total": round(100 * used, 1),
        "loop_lag_ms_max_seen": round(worst_now, 1),
        "load_1m": round(psutil.getloadavg()[0], 2),
    }


async def rest_run(
    n: int,
    minutes: float,
    root: Path,
    *,
    loss: float = 0.0,
    timeout: float,
    report_every: float,
    kind: str = "",
) -> dict[str, Any]:
    """A cluster of ``n`` started, converged, then (with ``loss`` percent lost on every node,
    both ways) left alone for ``minutes``: false suspicions and deaths, CPU, loop lag.
    ``kind`` names the run (default ``loss`` or ``rest``)."""
    kind = kind or ("loss" if loss else "rest")
    cluster = _cluster(root, f"{kind}{n}", n)
    row: dict[str, Any] = {"run": kind, "nodes": n, "loss_pct": loss, "minutes": minutes}
    t0 = time.monotonic()
    try:
        took = await launch(cluster, timeout=timeout, progress=_show(f"{kind} {n}"))
        row["converged_s"] = round(float(took or 0.0), 2)
        row.update(start_figures(event_logs(cluster), {r.node_id for r in cluster.record.nodes}))
        if loss:
            for rec in cluster.record.nodes:
                await cluster.faults(rec.node_id, "loss", value=loss)
        row.update(await _rest(cluster, 60.0 * minutes, report_every, f"{kind} {n}"))
        row.update(memory([rec.pid for rec in cluster.record.nodes]))
    except ClusterError as exc:
        row["error"] = str(exc).splitlines()[0]
        row["elapsed_s"] = round(time.monotonic() - t0, 1)
    finally:
        with trio.CancelScope(shield=True):
            await cluster.down(grace=10.0)
    return row
