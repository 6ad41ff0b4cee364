"""A node as a real OS process: start, talk to it with rt_run, feed it garbage, stop it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import trio

from cluster.local.ports import free_port
from cluster.node.rpc import rpc_call

pytestmark = pytest.mark.slow


def rt_run(
    *args: str, env: dict[str, str], timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cluster.node.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def identity(port: int) -> dict[str, object] | None:
    try:
        return trio.run(rpc_call, "127.0.0.1", port, {"k": "control", "op": "identity"}, 2.0)
    except (OSError, trio.TooSlowError):
        return None


class Nodes:
    """Node processes started by a test; every one is ended at teardown, whatever happened."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: list[subprocess.Popen[bytes]] = []
        self.env = {**os.environ, "HOME": str(tmp), "PYTHONUNBUFFERED": "1"}
        self.env.pop("RT_SERVER_CONF", None)

    def start(self, port: int, *extra: str, log: str = "node.log") -> subprocess.Popen[bytes]:
        with open(self.tmp / log, "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "cluster.node.cli", "start", "--port", str(port), *extra],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.procs.append(proc)
        return proc

    def wait_ready(self, port: int, proc: subprocess.Popen[bytes], timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"node on {port} exited with {proc.returncode}"
            ident = identity(port)
            if ident is not None:
                return ident
            time.sleep(0.1)
        raise AssertionError(f"node on {port} not ready within {timeout}s")

    def cleanup(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture
def nodes(tmp_path: Path) -> Iterator[Nodes]:
    n = Nodes(tmp_path)
    try:
        yield n
    finally:
        n.cleanup()


def test_start_monitor_compose_and_stop(nodes: Nodes, tmp_path: Path) -> None:
    port = free_port()
    proc = nodes.start(port, "--no-viz")
    ident = nodes.wait_ready(port, proc)
    assert ident["node_id"] == 0
    assert ident["pid"] == proc.pid

    out = rt_run("monitor", "--once", "--json", "--port", str(port), env=nodes.env)
    assert out.returncode == 0, out.stderr
    assert '"workers"' in out.stdout

    compose = tmp_path / "pools.yaml"
    compose.write_text(
        "compose:\n  - {mod_name: rt_bdev, pool_name: extra, pool_id: '810.0', capacity: 64K}\n"
    )
    out = rt_run("compose", str(compose), "--port", str(port), env=nodes.env)
    assert out.returncode == 0, out.stderr
    assert "composed extra (810.0)" in out.stdout
    out = rt_run("compose", "list", "--port", str(port), env=nodes.env)
    assert "810.0" in out.stdout
    out = rt_run("compose", str(compose), "--port", str(port), env=nodes.env)
    assert out.returncode == 1
    assert "exists already" in out.stderr

    children = psutil.Process(proc.pid).children(recursive=True)
    out = rt_run("stop", "--port", str(port), env=nodes.env)
    assert out.returncode == 0, out.stderr
    assert f"stopped node 0 (pid {proc.pid})" in out.stdout
    assert proc.wait(timeout=10) == 0
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    log = (tmp_path / "node.log").read_text()
    assert "node=0" in log
    assert "Traceback" not in log


def test_sigterm_stops_cleanly(nodes: Nodes) -> None:
    port = free_port()
    proc = nodes.start(port, "--no-viz")
    nodes.wait_ready(port, proc)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0


def test_garbage_on_both_sockets_never_stops_the_node(nodes: Nodes) -> None:
    port = free_port()
    proc = nodes.start(port, "--no-viz")
    nodes.wait_ready(port, proc)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        for blob in (b"", b"\x00", b"\xff" * 3000, os.urandom(512), b"\x01\x02garbage"):
            u.sendto(blob, ("127.0.0.1", port))
    for blob in (b"\xff\xff\xff\xff", b"\x00\x00\x00\x05abcde", b"GET / HTTP/1.0\r\n\r\n"):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as t:
            t.sendall(blob)
            t.shutdown(socket.SHUT_WR)
            try:
                assert t.recv(100) == b""
            except ConnectionResetError:
                pass
    ident = identity(port)
    assert ident is not None
    assert ident["pid"] == proc.pid
    assert proc.poll() is None


def test_migrate_moves_a_pool_to_another_node(nodes: Nodes, tmp_path: Path) -> None:
    ports = [free_port(), free_port()]
    hostfile = tmp_path / "hosts"
    hostfile.write_text("".join(f"127.0.0.1:{p}\n" for p in ports))
    procs = [
        nodes.start(p, "--no-viz", "--hostfile", str(hostfile), log=f"n{i}.log")
        for i, p in enumerate(ports)
    ]
    for p, proc in zip(ports, procs, strict=True):
        nodes.wait_ready(p, proc)
    compose = tmp_path / "pools.yaml"
    compose.write_text("- {mod_name: rt_bdev, pool_name: mover, pool_id: '820.0', capacity: 64K}\n")
    assert rt_run("compose", str(compose), "--port", str(ports[0]), env=nodes.env).returncode == 0
    # node 1 must be in node 0's table before it can be addressed
    deadline = time.monotonic() + 20
    while True:
        out = rt_run("migrate", "820.0", "--to", "1", "--port", str(ports[0]), env=nodes.env)
        if out.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert out.returncode == 0, out.stderr
    assert "moved pool 820.0 to node 1" in out.stdout
    assert "820.0" not in rt_run("compose", "list", "--port", str(ports[0]), env=nodes.env).stdout
    assert "820.0" in rt_run("compose", "list", "--port", str(ports[1]), env=nodes.env).stdout


def test_bad_config_exits_non_zero_with_the_key(nodes: Nodes, tmp_path: Path) -> None:
    conf = tmp_path / "rt.yaml"
    conf.write_text("networking: {prot: 1}\n")
    out = rt_run("start", "--config", str(conf), env=nodes.env)
    assert out.returncode == 2
    assert "networking.prot: unknown key" in out.stderr
    assert "Traceback" not in out.stderr


def test_taken_runtime_port_is_a_clear_error(nodes: Nodes) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = rt_run("start", "--no-viz", "--port", str(port), env=nodes.env)
    assert out.returncode == 1
    assert f"runtime port 127.0.0.1:{port}" in out.stderr
