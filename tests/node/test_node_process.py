"""A node as a real OS process: start, talk to it with rt_run, feed it garbage, stop it."""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from cluster.local import free_port
from tests.support import Harness, hold_port, wait_for

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


def test_start_monitor_compose_and_stop(harness: Harness, tmp_path: Path) -> None:
    node = harness.start_node("--no-viz")
    port = node.port
    ident = harness.wait_ready(node)
    assert ident["node_id"] == 0
    assert ident["pid"] == node.pid

    out = rt_run("monitor", "--once", "--json", "--port", str(port), env=harness.env)
    assert out.returncode == 0, out.stderr
    assert '"workers"' in out.stdout

    compose = tmp_path / "pools.yaml"
    compose.write_text(
        "compose:\n  - {mod_name: rt_bdev, pool_name: extra, pool_id: '810.0', capacity: 64K}\n"
    )
    out = rt_run("compose", str(compose), "--port", str(port), env=harness.env)
    assert out.returncode == 0, out.stderr
    assert "composed extra (810.0)" in out.stdout
    out = rt_run("compose", "list", "--port", str(port), env=harness.env)
    assert "810.0" in out.stdout
    out = rt_run("compose", str(compose), "--port", str(port), env=harness.env)
    assert out.returncode == 1
    assert "exists already" in out.stderr

    children = psutil.Process(node.pid).children(recursive=True)
    out = rt_run("stop", "--port", str(port), env=harness.env)
    assert out.returncode == 0, out.stderr
    assert f"stopped node 0 (pid {node.pid})" in out.stdout
    assert harness.wait_exit(node) == 0
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    log = harness.log_text(node)
    assert "node=0" in log
    assert "Traceback" not in log


def test_sigterm_stops_cleanly(harness: Harness) -> None:
    node = harness.start_node("--no-viz")
    harness.wait_ready(node)
    harness.signal(node, signal.SIGTERM)
    assert harness.wait_exit(node) == 0


def test_garbage_on_both_sockets_never_stops_the_node(harness: Harness) -> None:
    node = harness.start_node("--no-viz")
    port = node.port
    harness.wait_ready(node)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        for blob in (b"", b"\x00", b"\xff" * 3000, os.urandom(512), b"\x01\x02garbage"):
            u.sendto(blob, ("127.0.0.1", port))
    for blob in (b"\xff\xff\xff\xff", b"\x00\x00\x00\x05abcde", b"GET / HTTP/1.0\r\n\r\n"):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as t:
            try:
                t.sendall(blob)
                t.shutdown(socket.SHUT_WR)
                assert t.recv(100) == b""  # the node closes a connection it cannot parse
            except (ConnectionResetError, BrokenPipeError):
                pass
            except OSError as exc:
                if exc.errno != errno.ENOTCONN:  # ENOTCONN: it closed before our shutdown
                    raise
    ident = harness.identity(node)
    assert ident is not None
    assert ident["pid"] == node.pid
    assert harness.alive(node)


def test_migrate_moves_a_pool_to_another_node(harness: Harness, tmp_path: Path) -> None:
    ports = [free_port(), free_port()]
    hostfile = tmp_path / "hosts"
    hostfile.write_text("".join(f"127.0.0.1:{p}\n" for p in ports))
    nodes = [
        harness.start_node("--no-viz", "--hostfile", str(hostfile), port=p, name=f"n{i}")
        for i, p in enumerate(ports)
    ]
    for node in nodes:
        harness.wait_ready(node)
    compose = tmp_path / "pools.yaml"
    compose.write_text("- {mod_name: rt_bdev, pool_name: mover, pool_id: '820.0', capacity: 64K}\n")
    assert rt_run("compose", str(compose), "--port", str(ports[0]), env=harness.env).returncode == 0

    # node 1 must be in node 0's table before it can be addressed
    out = wait_for(
        "pool 820.0 to move to node 1",
        lambda: rt_run("migrate", "820.0", "--to", "1", "--port", str(ports[0]), env=harness.env),
        until=lambda out: out.returncode == 0,
        timeout=20,
        interval=0.3,
    )
    assert out.returncode == 0, out.stderr
    assert "moved pool 820.0 to node 1" in out.stdout
    assert "820.0" not in rt_run("compose", "list", "--port", str(ports[0]), env=harness.env).stdout
    assert "820.0" in rt_run("compose", "list", "--port", str(ports[1]), env=harness.env).stdout


def test_bad_config_exits_non_zero_with_the_key(harness: Harness, tmp_path: Path) -> None:
    conf = tmp_path / "rt.yaml"
    conf.write_text("networking: {prot: 1}\n")
    out = rt_run("start", "--config", str(conf), env=harness.env)
    assert out.returncode == 2
    assert "networking.prot: unknown key" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--host", "localhost"], "members are told an IP address, not 'localhost'"),
        (["--induct"], "give --node-id instead of --induct"),
        (["--name", "two words"], "networking.name: expected 1 to 128 letters"),
        (["--join", "nowhere"], "networking.join: expected host:port, got 'nowhere'"),
    ],
    ids=["host-name", "induct", "name", "join"],
)
def test_memberlist_flags_that_cannot_be_used_are_one_clear_line(
    harness: Harness, flags: list[str], said: str
) -> None:
    out = rt_run(
        "start", "--no-viz", "--wire", "memberlist", "--port", "0", *flags, env=harness.env
    )
    assert out.returncode == 2, out.stderr
    assert said in out.stderr
    assert "Traceback" not in out.stderr


def test_taken_runtime_port_is_a_clear_error(harness: Harness) -> None:
    with hold_port() as port:
        out = rt_run("start", "--no-viz", "--port", str(port), env=harness.env)
    assert out.returncode == 1
    assert f"runtime port 127.0.0.1:{port}" in out.stderr
