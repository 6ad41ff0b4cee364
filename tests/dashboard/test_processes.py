"""The dashboard on real node processes (``rt_run start``): launch rules, and forwards to a
killed and to a paused (SIGSTOP) peer while local routes keep answering.

Every process started here is ended in a ``finally`` (SIGCONT first, then SIGTERM, then
SIGKILL), whatever the test did.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from cluster.local.ports import free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"Viz: dashboard listening at http://([\d.]+):(\d+)")


class Procs:
    """Node processes of one test, each logging to its own file."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: list[tuple[subprocess.Popen[bytes], Path]] = []
        self.env = {
            **os.environ,
            "HOME": str(tmp),
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": str(ROOT),
            "RT_VIZ_PORT": "0",  # never the shared default 8080
        }
        for key in ("RT_SERVER_CONF", "RT_VIZ_ENABLE", "RT_VIZ_BIND", "RT_VIZ_PATH"):
            self.env.pop(key, None)

    def spawn(self, argv: list[str], name: str, **env: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = self.tmp / f"{name}.log"
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                argv, cwd=ROOT, env={**self.env, **env}, stdout=out, stderr=subprocess.STDOUT
            )
        self.procs.append((proc, log))
        return proc, log

    def start(self, port: int, *flags: str, name: str = "node", **env: str) -> Any:
        argv = [sys.executable, "-m", "cluster.node.cli", "start", "--port", str(port), *flags]
        return self.spawn(argv, name, **env)

    @staticmethod
    def wait_log(
        proc: subprocess.Popen[bytes], log: Path, pattern: str, timeout: float = 30
    ) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = log.read_text(errors="replace")
            if re.search(pattern, text):
                return text
            assert proc.poll() is None, f"exited {proc.returncode}:\n{text[-3000:]}"
            time.sleep(0.05)
        raise AssertionError(f"no {pattern!r} within {timeout}s:\n{log.read_text()[-3000:]}")

    def dashboard(self, proc: subprocess.Popen[bytes], log: Path) -> str:
        text = self.wait_log(proc, log, LISTENING.pattern)
        m = LISTENING.search(text)
        assert m is not None
        return f"http://{m.group(1)}:{m.group(2)}"

    def cleanup(self) -> None:
        for proc, _ in self.procs:
            if proc.poll() is None:
                try:
                    proc.send_signal(signal.SIGCONT)
                    proc.terminate()
                except ProcessLookupError:
                    pass
        for proc, _ in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Procs]:
    p = Procs(tmp_path)
    try:
        yield p
    finally:
        p.cleanup()


def up_line(port: int) -> str:
    return rf"node \d+ up: runtime 127\.0\.0\.1:{port}"


# -- launch rules ----------------------------------------------------------------------------


def test_daemon_serves_by_default_and_logs_bound_port(procs: Procs) -> None:
    port = free_port()
    proc, log = procs.start(port)
    url = procs.dashboard(proc, log)
    assert not url.endswith(":0")
    r = httpx.get(url + "/api/health", timeout=10)
    assert r.status_code == 200
    assert r.json()["ok"] is True
    config = httpx.get(url + "/api/config", timeout=10).json()
    assert config["viz_port"] == int(url.rsplit(":", 1)[1])  # the bound port, not 0
    page = httpx.get(url + "/", timeout=10)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")


@pytest.mark.parametrize(
    ("flags", "env"), [(("--no-viz",), {}), ((), {"RT_VIZ_ENABLE": "0"})], ids=["flag", "env"]
)
def test_daemon_without_dashboard(
    procs: Procs, flags: tuple[str, ...], env: dict[str, str]
) -> None:
    port = free_port()
    proc, log = procs.start(port, *flags, **env)
    text = procs.wait_log(proc, log, up_line(port))
    time.sleep(0.3)
    assert "Viz: dashboard listening" not in log.read_text()
    assert "Viz: dashboard listening" not in text


EMBEDDED = """
import logging, sys, trio
from dataclasses import replace
logging.basicConfig(level=logging.INFO)
from cluster import load_settings, open_node
async def main():
    s = load_settings("embedded")
    s = replace(s, networking=replace(s.networking, port=int(sys.argv[1])),
                workload=replace(s.workload, enabled=False))
    async with open_node(s) as node:
        print("EMBEDDED dashboard", node.dashboard_url, flush=True)
        await trio.sleep(float(sys.argv[2]))
trio.run(main)
"""


@pytest.mark.parametrize("enable", ["", "1"])
def test_embedded_runtime_serves_only_when_enabled(procs: Procs, enable: str) -> None:
    port = free_port()
    env = {"RT_VIZ_ENABLE": enable} if enable else {}
    proc, log = procs.spawn([sys.executable, "-c", EMBEDDED, str(port), "3"], "emb", **env)
    text = procs.wait_log(proc, log, r"EMBEDDED dashboard \S+")
    url = re.search(r"EMBEDDED dashboard (\S+)", text).group(1)  # type: ignore[union-attr]
    if enable:
        assert url.startswith("http://127.0.0.1:")
        assert httpx.get(url + "/api/health", timeout=10).status_code == 200
        assert "Viz: dashboard listening at " + url in text
    else:
        assert url == "None"


def test_taken_port_warns_and_node_runs_on(procs: Procs) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        viz_port = holder.getsockname()[1]
        port = free_port()
        proc, log = procs.start(port, "--viz-port", str(viz_port))
        text = procs.wait_log(proc, log, up_line(port))
        assert re.search(
            rf"Viz: could not listen on 127\.0\.0\.1:{viz_port} \(.+\); dashboard disabled", text
        )
        assert "Viz: dashboard listening" not in text
        time.sleep(0.5)
        assert proc.poll() is None


MISSING_LIBRARY = """
import sys
sys.modules["hypercorn"] = None
sys.modules["quart_trio"] = None
from cluster.node.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_missing_http_library_warns_and_node_runs(procs: Procs) -> None:
    port = free_port()
    argv = [sys.executable, "-c", MISSING_LIBRARY, "start", "--port", str(port)]
    proc, log = procs.spawn(argv, "nolib")
    text = procs.wait_log(proc, log, up_line(port))
    assert "Viz: runtime built without the HTTP server library" in text
    assert "dashboard absent" in text
    assert "Viz: dashboard listening" not in text
    time.sleep(0.5)
    assert proc.poll() is None


# -- forwards to real peers ------------------------------------------------------------------


def two_nodes(procs: Procs) -> tuple[str, subprocess.Popen[bytes]]:
    """Nodes 0 and 1 of one hostfile; returns node 0's dashboard URL and node 1's process."""
    ports = [free_port(), free_port()]
    hostfile = procs.tmp / "hosts"
    hostfile.write_text("".join(f"127.0.0.1:{p}\n" for p in ports))
    # Node 1 first, so node 0 joins at once (a seed that is not up yet is retried later).
    peer = procs.start(ports[1], "--hostfile", str(hostfile), name="n1")
    procs.dashboard(*peer)
    url = procs.dashboard(*procs.start(ports[0], "--hostfile", str(hostfile), name="n0"))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        nodes = httpx.get(url + "/api/topology", timeout=10).json()["nodes"]
        if [(n["node_id"], n["state"]) for n in nodes] == [(0, "alive"), (1, "alive")]:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"node 1 never alive in node 0's table: {nodes}")
    return url, peer[0]


def test_forward_to_live_then_killed_peer(procs: Procs) -> None:
    url, peer = two_nodes(procs)
    for query, key in (("workers", "workers"), ("system_stats", "entries"),
                       ("containers", "containers"), ("bdevs", "devices")):  # fmt: skip
        r = httpx.get(f"{url}/api/nodes/1/{query}", timeout=10)
        assert r.status_code == 200, r.text
        assert list(r.json())[:2] == ["node_id", key]
        assert r.json()["node_id"] == 1
    peer.kill()
    peer.wait()
    start = time.monotonic()
    r = httpx.get(f"{url}/api/nodes/1/workers", timeout=10)
    assert r.status_code == 503
    assert list(r.json()) == ["error"]
    assert time.monotonic() - start < 5.5
    assert httpx.get(url + "/api/health", timeout=10).status_code == 200


async def test_paused_peer_forwards_time_out_while_local_routes_answer(procs: Procs) -> None:
    url, peer = two_nodes(procs)
    peer.send_signal(signal.SIGSTOP)
    statuses: list[tuple[int, float, Any]] = []
    local_latencies: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=30,
                                 limits=httpx.Limits(max_connections=32)) as http:  # fmt: skip

        async def forward(query: str) -> None:
            t0 = time.monotonic()
            r = await http.get(f"/api/nodes/1/{query}")
            statuses.append((r.status_code, time.monotonic() - t0, r.json()))

        async with trio.open_nursery() as nursery:
            for i in range(12):
                nursery.start_soon(forward, ("workers", "system_stats", "containers")[i % 3])
            await trio.sleep(0.5)  # the forwards are in flight now
            for _ in range(5):
                for path in ("/api/health", "/api/topology", "/api/nodes/local/workers",
                             "/api/pools", "/metrics"):  # fmt: skip
                    t0 = time.monotonic()
                    r = await http.get(path)
                    local_latencies.append(time.monotonic() - t0)
                    assert r.status_code == 200, (path, r.text)
                await trio.sleep(0.3)
    assert [s for s, _, _ in statuses] == [503] * 12
    assert all(
        re.fullmatch(r"monitor '\w+' timed out after 5s", b["error"]) for _, _, b in statuses
    )
    assert max(t for _, t, _ in statuses) < 5 * 2 + 1  # 12 forwards, 12 forward slots: one round
    assert max(local_latencies) < 1.0, local_latencies
