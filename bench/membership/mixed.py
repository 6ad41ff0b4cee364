"""rtsim inside a real Serf cluster: who sees a killed member dead first, in the same runs.

    python -m bench.membership.mixed [--runs 5]      -> bench/results/memberlist.json

Each run: three ``serf agent`` processes (profile lan, as ``SerfCluster`` starts them) and
one ``rt_run start --wire memberlist`` node (its timings: memberlist's LAN profile) joined to
them. Once every agent lists four members alive:
1. the rtsim node is killed with SIGKILL: the times until each agent lists it failed; then
   it is started again at the same address: the time until every agent lists it alive;
2. agent 2 is killed: the times until the rtsim node and agents 0 and 1 hold it dead, and
   whether the rtsim node declared it itself (its suspicion timed out) or heard it.
Times come from the rtsim node's event log and the agents' ``serf monitor`` lines
(``EventMemberFailed``), all on this host's ``time.monotonic()``.

Rules:
1. Every process started here is ended here (``SerfCluster.stop``, the node's ``kill``), even
   when a run fails.
2. The figures are printed and saved; nothing here passes or fails on them.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from swim.memberlist.edge import name_id

from .procs import ROOT, SerfCluster, free_ports

RESULTS = ROOT / "bench" / "results" / "memberlist.json"
TIMEOUT = 90.0  # s for a convergence or a detection


def node_port(home: Path) -> int:
    """The rtsim node's port (kept, so that a restart comes back at the same address)."""
    return int((home / "port").read_text())


def _node(join: int, home: Path, port: int = 0) -> tuple[subprocess.Popen[bytes], Path]:
    port = port or free_ports(1)[0]
    (home / "port").write_text(str(port))
    events = home / "events.jsonl"
    argv = [sys.executable, "-m", "cluster.node.cli", "start", "--wire", "memberlist"]
    argv += ["--node-id", "0", "--name", "rt-0", "--port", str(port), "--no-viz"]
    argv += ["--join", f"127.0.0.1:{join}", "--events", str(events)]
    argv += ["--log-file", str(home / "node.log")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RT_")} | {"HOME": str(home)}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, events


def _events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _wait(what: str, check: Any) -> None:
    t0 = time.monotonic()
    while not check():
        if time.monotonic() - t0 > TIMEOUT:
            raise RuntimeError(f"{what} did not happen in {TIMEOUT:g} s")
        time.sleep(0.1)


def _failed_at(agents: SerfCluster, i: int, name: str, t_kill: float) -> float | None:
    for t, line in agents.lines[i]:
        if t >= t_kill and f"EventMemberFailed: {name} " in line:
            return t - t_kill
    return None


def _seen_failed(
    agents: SerfCluster, name: str, t_kill: float, which: tuple[int, ...] = (0, 1)
) -> bool:
    return all(_failed_at(agents, i, name, t_kill) is not None for i in which)


def _rtsim_saw(events: Path, subject: int, state: str, t_kill: float) -> float | None:
    """Seconds from the kill until the rtsim node first held ``subject`` in ``state``."""
    for e in _events(events):
        if e["subject"] == subject and e["new"] == state and e["mono"] >= t_kill:
            return float(e["mono"]) - t_kill
    return None


def _converged(agents: SerfCluster) -> bool:
    everyone = {"node0", "node1", "node2", "rt-0"}
    views = [agents.members(i) for i in range(3)]
    return all(set(v) == everyone and set(v.values()) == {"alive"} for v in views)


def _own_timeout(agents: SerfCluster, name: str, t_kill: float) -> bool:
    """Did an agent mark ``name`` failed by its own suspicion timeout (not by gossip)?"""
    mark = f"Marking {name} as failed"
    return any(t >= t_kill and mark in ln for i in (0, 1) for t, ln in agents.lines[i])


def _rtsim_killed(agents: SerfCluster, node: subprocess.Popen[bytes]) -> dict[str, Any]:
    """Phase 1: SIGKILL the rtsim node; when does each agent list it failed?"""
    t_kill = time.monotonic()
    os.kill(node.pid, signal.SIGKILL)
    node.wait(timeout=10)
    every = (0, 1, 2)
    _wait("agents see rt-0 failed", lambda: _seen_failed(agents, "rt-0", t_kill, every))
    return {"serf_dead_s": [_failed_at(agents, i, "rt-0", t_kill) for i in every]}


def _agent_killed(agents: SerfCluster, events: Path) -> dict[str, Any]:
    """Phase 2: SIGKILL agent 2; when do the rtsim node and agents 0 and 1 hold it dead?"""
    victim = name_id("node2")
    t_kill = agents.kill(2)
    _wait("agents 0 and 1 see node2 failed", lambda: _seen_failed(agents, "node2", t_kill))
    _wait("rt-0 sees node2 dead", lambda: _rtsim_saw(events, victim, "dead", t_kill) is not None)
    dead = [e for e in _events(events) if e["subject"] == victim and e["new"] == "dead"]
    return {
        "rtsim_suspect_s": _rtsim_saw(events, victim, "suspected", t_kill),
        "rtsim_dead_s": _rtsim_saw(events, victim, "dead", t_kill),
        "rtsim_dead_cause": dead[0]["cause"] if dead else None,
        "serf_dead_s": [_failed_at(agents, i, "node2", t_kill) for i in (0, 1)],
        "serf_own_timeout": _own_timeout(agents, "node2", t_kill),
    }


def one_run() -> dict[str, Any]:
    agents = SerfCluster(3)
    home = Path(tempfile.mkdtemp(prefix="bench-memberlist-"))
    node: subprocess.Popen[bytes] | None = None
    try:
        agents.start()
        node, events = _node(agents.bind[0], home)
        _wait("convergence", lambda: _converged(agents))
        row: dict[str, Any] = {"rtsim_killed": _rtsim_killed(agents, node)}
        t_restart = time.monotonic()
        node, events = _node(agents.bind[0], home, port=node_port(home))
        _wait("the restarted rt-0 alive at every agent", lambda: _converged(agents))
        row["rtsim_restarted_alive_s"] = time.monotonic() - t_restart
        row["agent_killed"] = _agent_killed(agents, events)
        return row
    finally:
        if node is not None and node.poll() is None:
            node.kill()
        if node is not None:
            node.wait(timeout=10)
        agents.stop()


def _spread(values: list[float]) -> dict[str, float]:
    return {
        "min": round(min(values), 2),
        "median": round(statistics.median(values), 2),
        "max": round(max(values), 2),
    }


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {}
    rtsim = [r["agent_killed"]["rtsim_dead_s"] for r in ok]
    serf = [min(r["agent_killed"]["serf_dead_s"]) for r in ok]
    return {
        "killed_agent_dead_at_rtsim_s": _spread(rtsim),
        "killed_agent_dead_at_first_other_agent_s": _spread(serf),
        "killed_agent_declared_by_rtsim_own_timeout": sum(
            r["agent_killed"]["rtsim_dead_cause"] != "gossip" for r in ok
        ),
        "killed_rtsim_node_failed_at_first_agent_s": _spread(
            [min(r["rtsim_killed"]["serf_dead_s"]) for r in ok]
        ),
        "killed_rtsim_node_failed_at_last_agent_s": _spread(
            [max(r["rtsim_killed"]["serf_dead_s"]) for r in ok]
        ),
        "restarted_rtsim_node_alive_at_every_agent_s": _spread(
            [r["rtsim_restarted_alive_s"] for r in ok]
        ),
        "runs": len(ok),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    runs = []
    for i in range(args.runs):
        try:
            runs.append(one_run())
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            runs.append({"error": str(exc)})
        print(f"run {i + 1}/{args.runs}: {json.dumps(runs[-1])}", flush=True)
    result = {"when": time.strftime("%Y-%m-%d %H:%M:%S"), "summary": summary(runs), "runs": runs}
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["summary"], indent=2))
    print(f"saved {RESULTS}")


if __name__ == "__main__":
    main()
