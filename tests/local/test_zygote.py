"""The zygote that forks every node of a local cluster (``cluster.node.zygote``): a node is
recorded before it runs, starts with Python's signal dispositions, and its watcher records how
it ended (issue 12)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cluster.local import (
    Zygote,
    free_port,
    live_members,
    process_state,
    start_marker,
)
from tests.support import wait_for
from tests.support.clusters import NO_WORKLOAD, ZYGOTE, wait_nothing_holds, zygote_env

pytestmark = pytest.mark.slow


def _node_argv(tmp_path: Path, config: str = NO_WORKLOAD) -> list[str]:
    cfg = tmp_path / "node.yaml"
    cfg.write_text(config)
    return ["start", "--port", str(free_port()), "--node-id", "0", "--no-viz",
            "--config", str(cfg)]  # fmt: skip


def _record(procs: Path, pid: int) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((procs / f"{pid}.json").read_text())
    return doc


def test_a_forked_node_is_recorded_ignores_sigpipe_and_its_end_is_recorded(
    tmp_path: Path, procs: Path, zygote: Zygote
) -> None:
    log = str(tmp_path / "node.log")
    proc = zygote.fork(_node_argv(tmp_path), log, procs, {"node_id": 0, "cluster": "z"})
    doc = _record(procs, proc.pid)  # recorded before fork() returned
    assert doc["pid"] == proc.pid
    assert doc["started"] == proc.started == start_marker(proc.pid)
    assert doc["tag"] == {"node_id": 0, "cluster": "z"}
    assert doc["exit"] is None
    assert process_state(proc.pid, proc.started) == "running"
    # its own session, apart from its watcher's (signals to its group never reach the watcher)
    assert os.getsid(proc.pid) == proc.pid
    assert os.getsid(doc["watcher"]) == doc["watcher"] != proc.pid
    # Python's dispositions: SIGPIPE ignored (a closed socket is an error, not death)
    status = Path(f"/proc/{proc.pid}/status").read_text()
    ignored = int(next(x for x in status.splitlines() if x.startswith("SigIgn:")).split()[1], 16)
    assert ignored & (1 << (signal.SIGPIPE - 1))
    assert not ignored & (1 << (signal.SIGTERM - 1))
    os.kill(proc.pid, signal.SIGKILL)
    ended = wait_for("the watcher to record the end", lambda: _record(procs, proc.pid)["exit"],
                     until=lambda e: e is not None, timeout=30)  # fmt: skip
    assert ended["signal"] == "SIGKILL"
    assert ended["code"] is None
    last = Path(log).read_text().splitlines()[-1]
    assert last.startswith(f"--- rt_cluster: node process {proc.pid} ended at ")
    assert last.endswith(": killed by SIGKILL")


def test_a_node_that_fails_has_its_exit_code_and_last_line_recorded(
    tmp_path: Path, procs: Path, zygote: Zygote
) -> None:
    log = str(tmp_path / "node.log")
    argv = _node_argv(tmp_path, "networking: {bogus: 1}\n")
    proc = zygote.fork(argv, log, procs, {"node_id": 0})
    ended = wait_for("the watcher to record the end", lambda: _record(procs, proc.pid)["exit"],
                     until=lambda e: e is not None, timeout=60)  # fmt: skip
    assert ended["code"] == 2
    assert ended["signal"] == ""
    assert "bogus" in ended["last_line"]


def test_a_node_is_recorded_even_when_its_launcher_never_reads_the_answer(
    tmp_path: Path, procs: Path
) -> None:
    # The launcher asks, then dies (kill -9 of rt_cluster up): the zygote ends at the end of
    # its stdin, and the node it forked is in the record all the same.
    request = {"argv": _node_argv(tmp_path), "log": str(tmp_path / "node.log"),
               "procs": str(procs), "tag": {"node_id": 0}}  # fmt: skip
    zygote = subprocess.Popen(ZYGOTE, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              env=zygote_env(tmp_path), text=True)  # fmt: skip
    assert zygote.stdin is not None
    zygote.stdin.write(json.dumps(request) + "\n")
    zygote.stdin.close()
    assert zygote.wait(timeout=60) == 0
    (node,) = live_members(tmp_path)
    assert node.node_id == 0
    # a SIGTERM to the node's process group is a clean stop, recorded as exit code 0
    os.killpg(node.pid, signal.SIGTERM)
    ended = wait_for("the watcher to record the end", lambda: _record(procs, node.pid)["exit"],
                     until=lambda e: e is not None, timeout=30)  # fmt: skip
    assert ended["code"] == 0
    wait_nothing_holds(tmp_path)
