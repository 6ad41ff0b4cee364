"""Serf agents beside rtsim: N ``serf agent`` processes (profile lan) on loopback, each
joining through agent 0 (``bench.membership.procs.SerfCluster``), timed until every agent
lists N alive; their memory.

Rules:
1. Agent 0 first (its RPC port answering), then the others without waiting for each, as
   ``rt_cluster up`` starts its nodes; no ``serf monitor`` watchers (they would double the
   process count being measured).
2. Every agent started here is ended here (``SerfCluster.stop``: SIGKILL, then waited for),
   even when the run fails.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from typing import Any

from bench.membership.procs import SerfCluster

from .figures import cpu_seconds, memory

__all__ = ["SERF", "serf_up"]

SERF = shutil.which("serf") or "/usr/bin/serf"
LOOK_EVERY = 0.5  # seconds between rounds of ``serf members`` once an agent lists all


def serf_up(n: int, timeout: float) -> dict[str, Any]:
    """Start N agents, time them until every one lists N alive, read their memory and CPU,
    end them. A row for the table (``error`` when they did not converge)."""
    cluster = SerfCluster(n, SERF, watch=False)
    row: dict[str, Any] = {"system": "serf", "nodes": n}
    t0 = time.monotonic()
    try:
        cluster.start(wait_each=False)  # rule 1
        pending = set(range(n))
        while pending:
            if time.monotonic() - t0 > timeout:
                raise RuntimeError(f"{n - len(pending)} of {n} agents list all alive")
            for i in sorted(pending):
                view = cluster.members(i)
                if len(view) == n and set(view.values()) == {"alive"}:
                    pending.discard(i)
            if pending:
                time.sleep(LOOK_EVERY)
        row["converged_s"] = round(time.monotonic() - t0, 2)
        pids = cluster.pids()
        row["start_cpu_s"] = round(cpu_seconds(pids), 1)
        time.sleep(2.0)
        row.update(memory(pids))
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        row["error"] = str(exc).splitlines()[0]
        row["elapsed_s"] = round(time.monotonic() - t0, 1)
    finally:
        cluster.stop()  # rule 2
    return row
