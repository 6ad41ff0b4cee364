"""Five real OS processes (``python -m swim.testing``) on loopback; one is ``kill -9``-ed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from swim.testing import query

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CONFIG = {
    "probe_interval": 0.3,
    "probe_timeout": 0.15,
    "gossip_interval": 0.05,
    "pushpull_interval": 3.0,
    "rejoin_interval": 2.0,
}


async def start_node(
    i: int, seeds: list[str], tmp: Path, procs: list[trio.Process]
) -> tuple[trio.Process, int]:
    """Start member i; it is in ``procs`` (for the caller's cleanup) before we wait on it."""
    cmd = [
        sys.executable,
        "-m",
        "swim.testing",
        "--id",
        str(i),
        "--port",
        "0",
        "--event-log",
        str(tmp / f"events-{i}.jsonl"),
        "--config",
        json.dumps(CONFIG),
    ]
    for s in seeds:
        cmd += ["--seed", s]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = await trio.lowlevel.open_process(cmd, stdout=subprocess.PIPE, cwd=ROOT, env=env)
    procs.append(proc)
    assert proc.stdout is not None
    buf = b""
    with trio.fail_after(180):  # generous: a loaded machine imports slowly
        while b"\n" not in buf:
            chunk = await proc.stdout.receive_some(4096)
            if not chunk:
                raise RuntimeError(f"node {i} exited before it was ready")
            buf += chunk
    ready, _, port = buf.split(b"\n")[0].decode().rpartition(" ")
    assert ready.startswith(f"READY {i} ")
    return proc, int(port)


async def members_of(port: int) -> dict[int, str] | None:
    reply: Any = await query("127.0.0.1", port, {"k": "stats"}, timeout=5)
    if not isinstance(reply, dict) or not reply.get("ok"):
        return None
    return {int(row[0]): str(row[3]) for row in reply["members"]}


async def test_five_processes_detect_a_kill(tmp_path: Path) -> None:
    procs: list[trio.Process] = []
    ports: list[int] = []
    try:
        for i in range(5):
            seeds = [f"127.0.0.1:{ports[0]}"] if ports else []
            _proc, port = await start_node(i, seeds, tmp_path, procs)
            ports.append(port)
        with trio.fail_after(180):
            while True:
                views = [await members_of(p) for p in ports]
                if all(v and len(v) == 5 and set(v.values()) == {"alive"} for v in views):
                    break
                await trio.sleep(0.2)
        os.kill(procs[4].pid, signal.SIGKILL)
        with trio.fail_after(180):
            while True:
                views = [await members_of(p) for p in ports[:4]]
                if all(v and v.get(4) == "dead" for v in views):
                    break
                await trio.sleep(0.2)
        for v in views:
            assert v is not None
            assert all(v[j] == "alive" for j in range(4))
        for i in range(4):
            lines = (tmp_path / f"events-{i}.jsonl").read_text().splitlines()
            assert any(
                json.loads(ln)["subject"] == 4 and json.loads(ln)["new"] == "dead" for ln in lines
            )
    finally:
        with trio.CancelScope(shield=True):
            for proc in procs:
                if proc.returncode is None:
                    proc.kill()
                await proc.wait()
                if proc.stdout is not None:
                    await proc.stdout.aclose()
