"""``python -m bench.load``: one node of a real 2-node cluster under load, its peer paused.

All at once, for ``--seconds`` (20 in CI, longer under ``make load``), against node 0:
500 keep-alive clients asking node-local GETs, 50 slow-body POSTs, 12 forwards to the paused
node 1, and 1,000 idle TCP connections to the runtime port (``bench.loadgen`` holds them all,
in a process of its own). Throughout, this process asks ``/api/health`` on a fresh connection
every ``PROBE_INTERVAL`` seconds and watches that no node process dies; afterwards node 1 is
resumed and must be back in node 0's table, and the runtime port must still answer.

Rules:
1. Two processes measure, apart: the load generator and this prober, so the health figures
   are the node's and not the loop lag of a process holding 1,600 sockets. The clients are a
   small trio pool of our own (raw sockets), not locust: slow bodies and idle connections need
   raw sockets anyway, one trio process holds 1,600 of them cheaply, and locust's gevent
   cannot share a process with trio.
2. ``run_load`` takes its cluster through ``Control`` (pause and resume the peer, process
   states, start the generator), so the bench (``cluster.local``) and the test
   (``tests/hostile/test_load.py``, on the tests' harness) run the very same load;
   ``problems`` holds the bounds, ``table`` prints the figures.
3. The bounds, the issue's, are ``bench.loadbounds.problems``: /api/health p99 under 1 s and
   never an error; no node died; the runtime port answered an RPC while the idle
   connections were held and after; every slow POST cut (408) by the read-time limit; every
   forward to the paused peer answered 503 within the 5 s bound; no node-local GET failed or
   answered 5xx; the peer back after its resume; node 0's descriptors back near where they
   were. The peer is resumed whatever happened to the load.
4. The bench saves the report (figures, config, git commit) to ``bench/results/load.json``
   and prints it as a table; it exits 0 whatever the figures (benchmarks never fail on
   timing), listing the bounds that did not hold.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx
import psutil
import trio
from prometheus_client.parser import text_string_to_metric_families

from bench.loadbounds import FD_SLACK, PEER_BACK, problems, table
from bench.loadgen import summary
from cluster.ground.errors import ApiError
from cluster.local import LocalCluster, Proc, Processes, child_env, launch, plan_cluster
from cluster.rpc import Identity, rpc_call

__all__ = ["Control", "LoadConfig", "Spawned", "Target", "problems", "run_load", "table"]

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "load.json"
FD_SETTLE = 20.0  # seconds for node 0's descriptors to come back down
PROBE_INTERVAL = 0.05  # seconds between health probes
PROBE_TIMEOUT = 5.0  # seconds for one probe; longer is an error
READY_WAIT = 90.0  # seconds for the load generator to start every client


@dataclass(frozen=True, slots=True)
class LoadConfig:
    """The size of one run (counts of clients, seconds)."""

    seconds: float = 20.0
    clients: int = 500
    slow_posts: int = 50
    forwards: int = 12
    idle: int = 1000
    think: float = 0.0  # seconds between one GET client's requests


@dataclass(frozen=True, slots=True)
class Target:
    """The node under load (its addresses and pid) and the peer to pause."""

    host: str
    viz_port: int
    rpc_port: int
    pid: int
    peer_id: int
    peer_rpc_port: int


@dataclass(frozen=True, slots=True)
class Spawned:
    """A process ``Control.spawn`` started: whether it runs, and its log."""

    running: Callable[[], bool]
    log: Path


class Control(Protocol):
    """What ``run_load`` does to the cluster's processes; whoever started them ends them."""

    def states(self) -> dict[str, str]:
        """Each node's process state by name: ``running``, ``paused`` or ``gone``."""
        ...

    def pause_peer(self) -> None: ...

    def resume_peer(self) -> None: ...

    def spawn(self, argv: Sequence[str], name: str) -> Spawned: ...


# -- measuring ---------------------------------------------------------------------------------


async def probe_health(host: str, port: int) -> tuple[str, float]:
    """One ``GET /api/health`` on a fresh connection: the status (or ``timeout``, ``reset``,
    ``refused``, ``closed``) and the seconds it took."""
    t0 = trio.current_time()
    outcome = "timeout"
    with trio.move_on_after(PROBE_TIMEOUT):
        try:
            stream = await trio.open_tcp_stream(host, port)
        except OSError:
            return "refused", trio.current_time() - t0
        async with stream:
            raw = f"GET /api/health HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n"
            buf = b""
            try:
                await stream.send_all(raw.encode())
                while chunk := await stream.receive_some(65536):
                    buf += chunk
            except trio.BrokenResourceError:
                outcome = "reset"
            parts = buf.split(b" ", 2)
            if len(parts) > 1 and parts[1].isdigit():
                outcome = parts[1].decode()
            elif outcome != "reset":
                outcome = "closed"
    return outcome, trio.current_time() - t0


def _http_statuses(url: str) -> Counter[str]:
    """Node answers counted by status in its ``/metrics``, summed over routes."""
    text = httpx.get(url + "/metrics", timeout=10).text
    out: Counter[str] = Counter()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "rt_http_requests_total":
                out[str(s.labels.get("status"))] += int(s.value)
    return out


async def _identity(host: str, port: int) -> dict[str, Any]:
    t0 = trio.current_time()
    try:
        body = await rpc_call(host, port, Identity(), 5.0)
    except ApiError as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    rpc = body.get("rpc", {}) if isinstance(body, dict) else {}
    return {"ok": True, "seconds": round(trio.current_time() - t0, 3), "rpc": rpc}


class Probe:
    """The watch during the load: health samples, process states, node 0's descriptors and
    memory."""

    def __init__(self, target: Target, control: Control) -> None:
        self.target, self.control = target, control
        self.latencies: list[float] = []
        self.errors: Counter[str] = Counter()
        self.deaths: list[str] = []
        self.fds_peak, self.rss_mb_peak = 0, 0.0

    async def watch(self, until: Callable[[], bool]) -> None:
        """Probe until ``until()`` holds."""
        t = self.target
        while not until():
            status, seconds = await probe_health(t.host, t.viz_port)
            if status == "200":
                self.latencies.append(seconds)
            else:
                self.errors[status] += 1
            self._look()
            await trio.sleep(PROBE_INTERVAL)

    def _look(self) -> None:
        for name, state in self.control.states().items():
            if state == "gone" and not any(d.startswith(name) for d in self.deaths):
                self.deaths.append(f"{name} died during the load")
        self.fds_peak = max(self.fds_peak, _fds(self.target.pid))
        self.rss_mb_peak = max(self.rss_mb_peak, _rss_mb(self.target.pid))


async def _wait(check: Callable[[], Any], timeout: float) -> float | None:
    """Poll ``check`` (sync or async) until truthy: the seconds it took, None if never."""
    t0 = trio.current_time()
    while trio.current_time() - t0 < timeout:
        try:
            value = check()
            if hasattr(value, "__await__"):
                value = await value
        except (OSError, ValueError, httpx.HTTPError):
            value = None
        if value:
            return trio.current_time() - t0
        await trio.sleep(0.1)
    return None


async def _peer_alive(t: Target, url: str) -> bool:
    async with httpx.AsyncClient(timeout=5) as client:
        nodes = (await client.get(url + "/api/topology")).json()["nodes"]
    back = any(n["node_id"] == t.peer_id and n["state"] == "alive" for n in nodes)
    return back and (await _identity(t.host, t.peer_rpc_port))["ok"]


def _fds(pid: int) -> int:
    try:
        return psutil.Process(pid).num_fds()
    except psutil.Error:
        return -1


def _rss_mb(pid: int) -> float:
    try:
        return round(psutil.Process(pid).memory_info().rss / 2**20, 1)
    except psutil.Error:
        return -1.0


def _generator_argv(t: Target, config: LoadConfig, ready: Path, out: Path) -> list[str]:
    flags = {
        **{"--host": t.host, "--port": t.viz_port, "--rpc-port": t.rpc_port, "--peer": t.peer_id},
        **{f"--{k.replace('_', '-')}": v for k, v in asdict(config).items()},
        **{"--ready": ready, "--out": out},
    }
    return [sys.executable, "-m", "bench.loadgen", *(f"{k}={v}" for k, v in flags.items())]


async def _load(t: Target, config: LoadConfig, control: Control, work: Path) -> dict[str, Any]:
    """Start the generator, probe while it runs: its figures, with the probe's."""
    ready, out = work / "loadgen.ready", work / "loadgen.json"
    for stale in (ready, out):
        stale.unlink(missing_ok=True)
    generator = control.spawn(_generator_argv(t, config, ready, out), "loadgen")
    started = await _wait(lambda: ready.exists() or not generator.running(), READY_WAIT)
    if started is None or not ready.exists():
        raise RuntimeError(f"the load generator did not start its clients; log {generator.log}")
    probe = Probe(t, control)
    deadline = trio.current_time() + config.seconds + 60.0
    await probe.watch(
        lambda: out.exists() or not generator.running() or trio.current_time() > deadline
    )
    if not out.exists():
        raise RuntimeError(f"the load generator wrote no figures; log {generator.log}")
    figures = json.loads(out.read_text())
    return {
        "health": {**summary(probe.latencies), "errors": dict(probe.errors)},
        **{k: figures[k] for k in ("gets", "slow_posts", "forwards", "idle", "rpc_while_held")},
        "ramp_s": figures.get("ramp_s"),
        "deaths": probe.deaths,
        "fds_peak": probe.fds_peak,
        "rss_mb_peak": probe.rss_mb_peak,
    }


async def _measure(t: Target, config: LoadConfig, control: Control, work: Path) -> dict[str, Any]:
    """Pause the peer, load and probe, resume it, check the way back: the report's figures."""
    url = f"http://{t.host}:{t.viz_port}"
    before, fds_before, rss_before = _http_statuses(url), _fds(t.pid), _rss_mb(t.pid)
    control.pause_peer()
    try:
        figures = await _load(t, config, control, work)
    finally:
        control.resume_peer()
    peer_back = await _wait(lambda: _peer_alive(t, url), PEER_BACK)
    rpc_after = await _identity(t.host, t.rpc_port)
    settled = await _wait(lambda: _fds(t.pid) <= fds_before + FD_SLACK, FD_SETTLE)
    node = {
        "fds_before": fds_before,
        "fds_peak": figures.pop("fds_peak"),
        "fds_after": _fds(t.pid),
        "fds_settled": settled is not None,
        "rss_mb_before": rss_before,
        "rss_mb_peak": figures.pop("rss_mb_peak"),
        "rss_mb_after": _rss_mb(t.pid),
        "http_statuses": dict(sorted((_http_statuses(url) - before).items())),
    }
    peer = None if peer_back is None else round(peer_back, 2)
    return {**figures, "rpc_after": rpc_after, "peer_back_s": peer, "node0": node}


def run_load(target: Target, config: LoadConfig, control: Control, work: Path) -> dict[str, Any]:
    """Run the load of ``config`` on ``target`` (rule 2); the report, bounds judged in it.
    ``work`` holds the generator's files. Call outside a trio run."""
    t0 = time.monotonic()
    figures = trio.run(_measure, target, config, control, work)
    report = {**_about(), "config": asdict(config), **figures}
    report["wall_s"] = round(time.monotonic() - t0, 1)
    report["problems"] = problems(report)
    return report


def _about() -> dict[str, Any]:
    def git(*args: str) -> str:
        try:
            return subprocess.run(
                ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {
        "benchmark": "bench.load",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "commit": git("rev-parse", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_1m": round(os.getloadavg()[0], 2),
    }


# -- the bench: a cluster of its own -------------------------------------------------------------


class ClusterControl:
    """``Control`` over a local cluster of ``cluster.local`` (rule 2), for the bench."""

    def __init__(self, cluster: LocalCluster, work: Path) -> None:
        self.cluster, self.work = cluster, work
        self.processes = Processes()
        self.spawned: list[Proc] = []

    def states(self) -> dict[str, str]:
        return {
            f"node{r.node_id}": self.cluster.state_of(r.node_id) for r in self.cluster.record.nodes
        }

    def pause_peer(self) -> None:
        self.cluster.pause(1)

    def resume_peer(self) -> None:
        self.cluster.resume(1)

    def spawn(self, argv: Sequence[str], name: str) -> Spawned:
        log = self.work / f"{name}.log"
        proc = self.processes.spawn(argv, log, child_env())
        self.spawned.append(proc)
        return Spawned(lambda: self.processes.state(proc) != "gone", log)

    async def close(self) -> None:
        """End the generator (if it still runs) and every node."""
        try:
            await self.processes.terminate(self.spawned, grace=5.0)
        finally:
            await self.cluster.down(grace=10.0)


async def _start(work: Path) -> tuple[LocalCluster, Target]:
    config = work / "node.yaml"
    config.write_text("workload: {enabled: false}\n")
    record = plan_cluster(
        work / "cluster", "load", 2, base_port=0, runtime_base_port=0, config=str(config)
    )
    cluster = LocalCluster(record)
    try:
        await launch(cluster, wait=True, timeout=90.0)
    except BaseException:
        with trio.CancelScope(shield=True):
            await cluster.down(grace=10.0)
        raise
    n0, n1 = cluster.record.nodes
    host = cluster.record.host_of(n0)
    return cluster, Target(host, n0.dashboard_port, n0.runtime_port, n0.pid, 1, n1.runtime_port)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="the load's duration")
    ci = LoadConfig()
    ap.add_argument("--clients", type=int, default=ci.clients)
    ap.add_argument("--slow-posts", type=int, default=ci.slow_posts)
    ap.add_argument("--forwards", type=int, default=ci.forwards)
    ap.add_argument("--idle", type=int, default=ci.idle)
    ap.add_argument("--think", type=float, default=0.0, help="seconds between a client's GETs")
    ap.add_argument("--out", type=Path, default=RESULTS)
    a = ap.parse_args(argv)
    config = LoadConfig(a.seconds, a.clients, a.slow_posts, a.forwards, a.idle, a.think)
    work = Path(tempfile.mkdtemp(prefix="bench-load-"))
    cluster, target = trio.run(_start, work)
    control = ClusterControl(cluster, work)
    try:
        report = run_load(target, config, control, work)
    finally:
        trio.run(control.close)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=1) + "\n")
    print(table(report))
    print(f"(wall {report['wall_s']} s; written to {a.out}; node logs in {work})")


if __name__ == "__main__":
    main()
