"""Serf agents beside rtsim: N ``serf agent`` processes (profile lan) on loopback, each
joining through agent 0, timed until every agent lists N alive; their memory.

Rules:
1. Agent 0 first (its RPC port answering), then the others without waiting for each, as
   ``rt_cluster up`` starts its nodes; no ``serf monitor`` watchers (they would double the
   process count being measured).
2. Every agent started here is ended here, by its ``Popen`` (SIGKILL, then waited for), even
   when the run fails.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.membership.procs import free_ports

from .figures import cpu_seconds, memory

__all__ = ["SERF", "serf_up"]

SERF = shutil.which("serf") or "/usr/bin/serf"
LOOK_EVERY = 0.5  # seconds between rounds of ``serf members`` once an agent lists all


def _members(rpc: int) -> dict[str, str]:
    out = subprocess.run(
        [SERF, "members", "-format=json", f"-rpc-addr=127.0.0.1:{rpc}"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    try:
        return {m["name"]: m["status"] for m in json.loads(out.stdout)["members"]}
    except (ValueError, KeyError, TypeError):
        return {}


def _wait_rpc(rpc: int, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"serf agent on rpc port {rpc} exited ({proc.returncode})")
        if _members(rpc):
            return
        time.sleep(0.1)
    raise RuntimeError(f"serf agent on rpc port {rpc} did not answer within {timeout:g}s")


def serf_up(n: int, timeout: float) -> dict[str, Any]:
    """Start N agents, time them until every one lists N alive, read their memory and CPU,
    end them. A row for the table (``error`` when they did not converge)."""
    ports = free_ports(2 * n)
    bind, rpc = ports[:n], ports[n:]
    home = Path(tempfile.mkdtemp(prefix="bench-cluster-serf-"))
    procs: list[subprocess.Popen[bytes]] = []
    row: dict[str, Any] = {"system": "serf", "nodes": n}
    t0 = time.monotonic()
    try:
        for i in range(n):
            cmd = [SERF, "agent", f"-node=node{i}", f"-bind=127.0.0.1:{bind[i]}",
                   f"-rpc-addr=127.0.0.1:{rpc[i]}", "-profile=lan", "-log-level=warn"]  # fmt: skip
            if i:
                cmd.append(f"-join=127.0.0.1:{bind[0]}")
            procs.append(
                subprocess.Popen(
                    cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=home
                )
            )
            if i == 0:
                _wait_rpc(rpc[0], procs[0], timeout)
        pending = set(range(n))
        while pending:
            if time.monotonic() - t0 > timeout:
                raise RuntimeError(f"{n - len(pending)} of {n} agents list all alive")
            for i in sorted(pending):
                view = _members(rpc[i])
                if len(view) == n and set(view.values()) == {"alive"}:
                    pending.discard(i)
            if pending:
                time.sleep(LOOK_EVERY)
        row["converged_s"] = round(time.monotonic() - t0, 2)
        pids = [p.pid for p in procs]
        row["start_cpu_s"] = round(cpu_seconds(pids), 1)
        time.sleep(2.0)
        row.update(memory(pids))
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        row["error"] = str(exc).splitlines()[0]
        row["elapsed_s"] = round(time.monotonic() - t0, 1)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        for p in procs:
            p.wait(timeout=30)
        shutil.rmtree(home, ignore_errors=True)
    return row
