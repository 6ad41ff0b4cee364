"""Deciding, from a hostfile alone, what a ``--hostfile`` run may do: which entries are this
machine, which cluster record a hostfile belongs to, and which steps are refused."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from cluster.local import (
    ClusterError,
    ClusterRecord,
    NodeRecord,
    save_record,
    start_marker,
    update_record,
)
from cluster.local.attached import (
    AttachedCluster,
    AttachedNode,
    managing_record,
    on_this_machine,
    read_hostfile,
)
from scenarios import parse_scenario
from scenarios.play.attach import Target, refuse_steps
from tests.support import hold_port


def test_loopback_and_own_addresses_are_this_machine_and_others_are_not() -> None:
    assert on_this_machine("127.0.0.1")
    assert on_this_machine("127.0.0.2")  # all of 127/8 is loopback
    assert on_this_machine("::1")
    assert on_this_machine("localhost")
    assert on_this_machine("10.1.2.3", {"10.1.2.3"})  # an interface address
    assert not on_this_machine("192.0.2.1")  # TEST-NET-1: documentation only
    assert not on_this_machine("no-such-host.invalid")  # does not resolve


def test_read_hostfile_numbers_entries_by_offset(tmp_path: Path) -> None:
    path = tmp_path / "hostfile"
    path.write_text("# a comment\n127.0.0.1:9001\n\n192.0.2.1:9002  # far away\n")
    nodes = read_hostfile(path)
    assert [(n.node_id, n.where, n.local) for n in nodes] == [
        (0, "127.0.0.1:9001", True),
        (1, "192.0.2.1:9002", False),
    ]


def _record(directory: Path, hostfile: Path, pids: list[int]) -> ClusterRecord:
    nodes = tuple(
        NodeRecord(i, pid, 9001 + i, 0, "", "", "", "running", start_marker(pid))
        for i, pid in enumerate(pids)
    )
    return ClusterRecord("t", str(directory), str(hostfile), nodes=nodes)


def test_a_hostfile_belongs_to_the_record_in_its_directory_when_all_matches(
    tmp_path: Path,
) -> None:
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("127.0.0.1:9001\n127.0.0.1:9002\n")
    nodes = read_hostfile(hostfile)
    assert managing_record(hostfile, nodes) is None  # no record there
    record = save_record(_record(tmp_path, hostfile, [os.getpid(), os.getpid()]))
    assert managing_record(hostfile, nodes) == record
    copy = tmp_path / "elsewhere"
    copy.write_text(hostfile.read_text())
    assert managing_record(copy, read_hostfile(copy)) is None  # not the record's own file
    gone = replace(record, nodes=(record.nodes[0], replace(record.nodes[1], pid=0)))
    update_record(tmp_path, lambda _: gone)
    assert managing_record(hostfile, nodes) is None  # a node without a live process


def _target(local: list[bool], record: ClusterRecord | None = None) -> Target:
    nodes = tuple(AttachedNode(i, "h", 1, here) for i, here in enumerate(local))
    return Target("H", nodes, record)


def _steps(*steps: str) -> str:
    return "nodes: 3\nsteps:\n" + "".join(f"  - {s}\n" for s in steps)


def test_steps_are_refused_by_where_their_node_runs() -> None:
    everywhere = _steps(
        "{at: 1, partition: [[0], rest]}",
        "{at: 2, heal: true}",
        "{at: 3, loss: {node: all, percent: 5}}",
        "{at: 4, delay: {node: 2, ms: 10}}",
        "{at: 5, kill: 0}",
        "{at: 6, pause: 1, for: 1}",
    )
    refuse_steps(parse_scenario(everywhere, "s"), _target([True, True, False]))
    with pytest.raises(ClusterError, match=r"step 1 \(kill1\) kills node 2 on another host"):
        refuse_steps(parse_scenario(_steps("{at: 1, kill: 2}"), "s"), _target([True] * 2 + [False]))
    leader = parse_scenario(_steps("{at: 1, stop: leader}"), "s")
    refuse_steps(leader, _target([True] * 3))
    with pytest.raises(ClusterError, match="the leader, which may be node 1 on another host"):
        refuse_steps(leader, _target([True, False, True]))
    restart = parse_scenario(_steps("{at: 1, restart: 0}"), "s")
    with pytest.raises(ClusterError, match="needs a cluster started by 'rt_cluster up'"):
        refuse_steps(restart, _target([True] * 3))
    record = ClusterRecord("t", "/d", "/d/hostfile")
    refuse_steps(restart, _target([True] * 3, record))  # the record knows how to start it
    refuse_steps(parse_scenario(_steps("{at: 1, kill: 2}"), "s"), _target([False] * 3, record))


def test_a_signal_goes_only_to_a_pid_proven_to_be_the_node() -> None:
    with hold_port() as port:
        cluster = AttachedCluster(
            [
                AttachedNode(0, "127.0.0.1", port, True),
                AttachedNode(1, "127.0.0.1", port + 1, True),
                AttachedNode(2, "192.0.2.1", 9, False),
            ],
            "H",
        )
        mine = {"node_id": 0, "pid": os.getpid(), "dashboard": "http://x"}
        cluster.nodes[0] = cluster._identified(cluster.nodes[0], mine)
        cluster.nodes[1] = cluster._identified(cluster.nodes[1], {**mine, "node_id": 1})
        assert cluster.signalable(0).started == start_marker(os.getpid())  # it listens there
        assert cluster.state_of(0) == "running"
        with pytest.raises(ClusterError, match="no process of this machine with that pid"):
            cluster.signalable(1)  # this pid does not listen on node 1's port
        with pytest.raises(ClusterError, match="runs on another host"):
            cluster.signalable(2)
        assert cluster.state_of(2) == "unknown"
        with pytest.raises(ClusterError, match="answers as node 5"):
            cluster._identified(cluster.nodes[1], {**mine, "node_id": 5})
