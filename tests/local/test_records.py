"""The record of a local cluster and its processes, without nodes: locked read-modify-write,
merges that never hide a newer process, start markers, endings folded in, who holds a port,
the gossip keyring (issue 12)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from dataclasses import asdict, replace
from pathlib import Path

import psutil
import pytest
import trio

from cluster.local import (
    AgentRecord,
    ClusterError,
    ClusterRecord,
    Ending,
    Network,
    NodeRecord,
    Processes,
    child_env,
    describe_holders,
    members,
    pick_free_ports,
    plan_cluster,
    port_holders,
    process_state,
    read_record,
    save_record,
    start_marker,
    update_record,
)
from cluster.local import plan as plan_module
from cluster.local.ledger import fold_endings, forget
from cluster.local.network import network_of
from scenarios.command import build_parser
from tests.support import hold_port, wait_for


def _node(directory: Path, node_id: int, pid: int = 0, started: int = 0) -> NodeRecord:
    return NodeRecord(
        node_id=node_id,
        pid=pid,
        runtime_port=20000 + node_id,
        dashboard_port=-1,
        dashboard="",
        log=str(directory / f"node-{node_id}.log"),
        events=str(directory / f"node-{node_id}.events"),
        state="running" if pid else "starting",
        started=started,
    )


def _cluster(directory: Path, *nodes: NodeRecord) -> ClusterRecord:
    directory.mkdir(parents=True, exist_ok=True)
    return ClusterRecord("c", str(directory), str(directory / "hostfile"), nodes=nodes)


def test_concurrent_updates_lose_nothing(tmp_path: Path) -> None:
    save_record(_cluster(tmp_path))

    def add(first: int) -> None:
        for i in range(first, first + 25):
            update_record(tmp_path, lambda r, i=i: r.with_node(_node(tmp_path, i)))  # type: ignore[misc,union-attr]

    threads = [threading.Thread(target=add, args=(t * 25,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rec = read_record(tmp_path)
    assert rec is not None
    assert [n.node_id for n in rec.nodes] == list(range(200))


def test_the_record_file_holds_what_asdict_would_and_reads_back_whole(tmp_path: Path) -> None:
    # to_json skips asdict's deep copies and the file is written by the C encoder, one node a
    # line (a 1,000-node record is written at every fork: 465 -> 37 ms); what it holds is the
    # same.
    rec = plan_cluster(tmp_path / "c", "t", 5, base_port=0, runtime_base_port=0)
    ended = Ending(code=None, signal="SIGKILL", last_line='a "quoted" line', at=1.5, known=False)
    agent = AgentRecord(5, "serf-0", 4321, 7946, "127.0.0.1:7373", "/x.log", "running", 9)
    net = Network("10.77.0.0/24", "abc123", "rtbr-abc123", "10.77.0.254")
    rec = replace(
        rec.with_node(replace(rec.nodes[2], pid=77, started=3, ended=ended)),
        agents=(agent,),
        network=net,
    )
    reference = asdict(rec)
    reference["nodes"] = [asdict(n) for n in rec.nodes]
    reference["agents"] = [asdict(a) for a in rec.agents]
    assert rec.to_json() == reference
    written = update_record(tmp_path / "c", lambda _: rec)
    assert read_record(tmp_path / "c") == written == rec
    text = (tmp_path / "c" / "cluster.json").read_text()
    assert json.loads(text) == json.loads(json.dumps(reference))
    assert len(text.splitlines()) < 30  # a line a node, not a line a field


def test_a_stale_copy_never_hides_a_newer_process(tmp_path: Path) -> None:
    stale = _cluster(tmp_path, _node(tmp_path, 0, 100, 10), _node(tmp_path, 1, 101, 11))
    save_record(stale)
    # another command restarts node 1 and adds node 2
    update_record(tmp_path, lambda r: r.with_node(_node(tmp_path, 1, 205, 50)))  # type: ignore[union-attr]
    update_record(tmp_path, lambda r: r.with_node(_node(tmp_path, 2, 206, 51)))  # type: ignore[union-attr]
    # the holder of the stale copy saves it (up --foreground, Ctrl-C)
    stale = stale.with_node(replace(stale.node(0), state="stopped"))
    stale = stale.with_node(replace(stale.node(1), state="stopped"))
    rec = save_record(stale)
    assert [(n.node_id, n.pid, n.state) for n in rec.nodes] == [
        (0, 100, "stopped"),  # the same process: our change lands
        (1, 205, "running"),  # a newer process: kept
        (2, 206, "running"),  # only on disk: kept
    ]
    assert read_record(tmp_path) == rec


def test_start_marker_tells_a_reused_pid_apart() -> None:
    me = os.getpid()
    marker = start_marker(me)
    assert marker > 0
    assert process_state(me, marker) == "running"
    assert process_state(me, marker + 1) == "gone"  # the same pid, another process
    assert process_state(me, 0) == "running"
    assert start_marker(0) == 0
    # an older record held the start time in epoch seconds: read as the same marker
    legacy = NodeRecord.from_json(
        {**_node(Path("/x"), 0).to_status(), "dashboard_port": -1, "pid": me,
         "state": "running", "started": psutil.Process(me).create_time(), "ended": None}
    )  # fmt: skip
    assert legacy.started == marker


def test_endings_are_folded_into_the_record(tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    marker = start_marker(sleeper.pid)
    sleeper.kill()
    sleeper.wait()
    procs = tmp_path / "procs"
    procs.mkdir(parents=True)
    (procs / f"{sleeper.pid}.json").write_text(
        json.dumps({"pid": sleeper.pid, "started": marker, "watcher": 0, "tag": {"node_id": 0},
                    "log": "", "argv": [], "exit": {"code": None, "signal": "SIGKILL",
                                                    "last_line": "last words", "at": 1.0}})
    )  # fmt: skip
    # node 1 died without a watcher: its log's last own line is all we know
    (tmp_path / "node-1.log").write_text("one\ntwo\n--- rt_cluster: starting node 1\n")
    rec = _cluster(
        tmp_path, _node(tmp_path, 0, sleeper.pid, marker), _node(tmp_path, 1, sleeper.pid, 1)
    )
    folded, done = fold_endings(rec, members(tmp_path, rec))
    zero, one = folded.nodes
    assert zero.state == "exited"
    assert zero.ended is not None
    assert (zero.ended.signal, zero.ended.last_line, zero.ended.known) == (
        "SIGKILL",
        "last words",
        True,
    )
    assert zero.ended.describe() == "killed by SIGKILL"
    assert one.state == "exited"
    assert one.ended is not None
    assert (one.ended.last_line, one.ended.known) == ("two", False)
    forget(done)
    assert list(procs.iterdir()) == []


def test_a_taken_port_names_the_process_that_holds_it(tmp_path: Path) -> None:
    (port,) = pick_free_ports("127.0.0.1", 1, udp=True)
    me = os.getpid()
    with hold_port(port=port, udp=True):  # UDP only: the gossip half of a runtime port
        assert port_holders(port) == [me]
        with pytest.raises(ClusterError) as info:
            plan_cluster(tmp_path / "x", "x", 2, base_port=0, runtime_base_port=port)
    message = str(info.value)
    assert message.startswith(f"node 0: runtime port taken: UDP port {port} on 127.0.0.1")
    assert f"port {port} is taken by pid {me} (" in message
    assert f"end it (kill {me}) or choose other ports" in message
    assert "\n" not in message


def test_ports_that_cannot_be_bound_are_not_called_taken(tmp_path: Path) -> None:
    # an address of no interface here (TEST-NET-3): nobody holds the port, it just cannot be
    with pytest.raises(ClusterError, match=r"node 0: runtime port unavailable: .*cannot be bound"):
        plan_cluster(tmp_path / "x", "x", 1, base_port=8, runtime_base_port=9, host="203.0.113.9")
    with pytest.raises(ClusterError, match=r"cannot bind any port on 203\.0\.113\.9"):
        plan_cluster(tmp_path / "x", "x", 1, base_port=0, runtime_base_port=0, host="203.0.113.9")


def test_clusters_get_a_gossip_keyring_unless_asked_not_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = plan_cluster(tmp_path / "k", "k", 2, base_port=0, runtime_base_port=0, keyring=True)
    path = Path(rec.keyring)
    assert path == tmp_path / "k" / "keyring"
    assert path.stat().st_mode & 0o777 == 0o600
    lines = path.read_bytes().splitlines()
    assert len(lines) == 1
    assert len(base64.b64decode(lines[0], validate=True)) == 32
    cmd = plan_module.node_command(
        rec, rec.nodes[1], python="py", viz=False, network=network_of(rec)
    )
    assert cmd[cmd.index("--keyring") + 1] == str(path)
    # another cluster, another key
    other = plan_cluster(tmp_path / "o", "o", 1, base_port=0, runtime_base_port=0, keyring=True)
    assert Path(other.keyring).read_bytes() != path.read_bytes()

    off = plan_cluster(tmp_path / "n", "n", 1, base_port=0, runtime_base_port=0, keyring=False)
    assert off.keyring == ""
    assert not (tmp_path / "n" / "keyring").exists()
    assert "--keyring" not in plan_module.node_command(
        off, off.nodes[0], python="py", viz=False, network=network_of(off)
    )
    # the default follows KEYRING_BY_DEFAULT; `up --no-keyring` asks for none
    monkeypatch.setattr(plan_module, "KEYRING_BY_DEFAULT", True)
    default = plan_cluster(tmp_path / "d", "d", 1, base_port=0, runtime_base_port=0)
    assert default.keyring == str(tmp_path / "d" / "keyring")
    assert build_parser().parse_args(["up", "-n", "1", "--no-keyring"]).no_keyring is True
    assert build_parser().parse_args(["up", "-n", "1"]).no_keyring is False


@pytest.mark.slow
def test_an_orphaned_node_holding_a_port_is_named_with_its_cluster(tmp_path: Path) -> None:
    # a process writing to node-0.log of cluster "c" whose record does not list it: an orphan
    directory = tmp_path / "c"
    save_record(_cluster(directory, _node(directory, 0)))
    (port,) = pick_free_ports("127.0.0.1", 1, udp=False)
    code = (
        "import socket, sys, time; s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1])));"
        " s.listen(); print('listening', flush=True); time.sleep(120)"
    )
    processes = Processes()
    orphan = processes.spawn(
        [sys.executable, "-c", code, str(port)], directory / "node-0.log", child_env()
    )
    try:
        wait_for("the orphan to listen", lambda: (directory / "node-0.log").read_text(),
                 until=lambda text: "listening" in text, timeout=30)  # fmt: skip
        text = describe_holders(port, udp=False)
    finally:
        trio.run(lambda: processes.terminate([orphan], hard=True))
    assert f"port {port} is taken by pid {orphan.pid} (" in text
    assert "; node 0 of cluster c)" in text
    assert f"end it: kill {orphan.pid} (an orphan: the cluster's record does not list it)" in text
