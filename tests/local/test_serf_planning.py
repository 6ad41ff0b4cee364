"""A mixed cluster (``rt_cluster up --serf M``) without processes: the ports and records
planned for its Serf agents, the record keeping and merging them, the agent's command line and
configuration (the gossip key never on a command line), where a starting member joins, what
``serf members`` says, a partition the rtsim side cannot cut, and ``status`` of agents.

The planning tests put a stand-in ``serf`` on PATH: nothing here runs it."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from cluster.local import (
    BadInput,
    ClusterRecord,
    MixedCluster,
    SerfUnavailable,
    alive_names,
    cluster_dir,
    member_names,
    members,
    plan_cluster,
    read_record,
    save_record,
    start_marker,
)
from cluster.local import plan as plan_module
from cluster.local.ledger import fold_endings
from cluster.local.network import network_of
from cluster.local.serf import (
    AGENT_CONFIG,
    MAX_JOINS,
    agent_command,
    join_addresses,
    parse_members,
)
from cluster.rt_cluster.watch import describe_faults
from scenarios.command import build_parser
from tests.support.clusters import run_main


def _mixed(directory: Path, n: int = 2, serf: int = 2, **kw: object) -> ClusterRecord:
    return plan_cluster(directory, directory.name, n, serf=serf, **kw)  # type: ignore[arg-type]


def test_agents_take_the_ports_members_after_the_nodes_would(
    tmp_path: Path, fake_serf: Path
) -> None:
    rec = _mixed(tmp_path / "c", base_port=31000, runtime_base_port=32000)
    assert rec.wire == "memberlist"
    assert [(n.node_id, n.runtime_port, n.dashboard_port) for n in rec.nodes] == [
        (0, 32000, 31000),
        (1, 32001, 31001),
    ]
    assert [(a.index, a.name, a.gossip_port, a.rpc_addr, a.pid) for a in rec.agents] == [
        (2, "serf-2", 32002, "127.0.0.1:31002", 0),
        (3, "serf-3", 32003, "127.0.0.1:31003", 0),
    ]
    assert [Path(a.log) for a in rec.agents] == [tmp_path / "c" / f"serf-{i}.log" for i in (2, 3)]
    assert member_names(rec) == {"rt-0", "rt-1", "serf-2", "serf-3"}


def test_port_zero_picks_free_distinct_ports_for_agents_too(
    tmp_path: Path, fake_serf: Path
) -> None:
    rec = _mixed(tmp_path / "c", n=1, serf=3, base_port=0, runtime_base_port=0, viz=False)
    assert rec.nodes[0].dashboard_port == -1  # no dashboard, yet every agent has its RPC
    ports = [rec.nodes[0].runtime_port]
    ports += [a.gossip_port for a in rec.agents]
    ports += [int(a.rpc_addr.rpartition(":")[2]) for a in rec.agents]
    assert len(set(ports)) == len(ports) == 7
    assert all(p > 0 for p in ports)


def test_bad_agent_requests_are_refused_before_anything_is_written(
    tmp_path: Path, fake_serf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(BadInput, match=r"--runtime-base-port 65534: ports 65534\.\.65537"):
        _mixed(tmp_path / "a", n=1, serf=3, base_port=0, runtime_base_port=65534)
    with pytest.raises(BadInput, match="overlap"):
        _mixed(tmp_path / "b", base_port=33001, runtime_base_port=33000)
    with pytest.raises(BadInput, match="--serf does not go with --netns"):
        _mixed(tmp_path / "c", subnet="10.77.0.0/24")
    with pytest.raises(BadInput, match="--serf 1024: at most 1024 members"):
        _mixed(tmp_path / "d", n=1, serf=1024)
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    with pytest.raises(BadInput, match="no 'serf' program on PATH"):
        _mixed(tmp_path / "e", base_port=0, runtime_base_port=0)
    assert not any((tmp_path / d).exists() for d in "abcde")


def test_the_record_keeps_agents_and_a_stale_copy_never_hides_a_newer_one(
    tmp_path: Path, fake_serf: Path
) -> None:
    rec = _mixed(tmp_path / "c", base_port=0, runtime_base_port=0)
    first = replace(rec.agents[0], pid=100, started=10, state="running")
    stale = save_record(rec.with_agent(first))
    assert read_record(rec.directory) == stale
    assert stale.member(2) == first
    assert stale.member(1) == stale.node(1)
    with pytest.raises(BadInput, match=r"has no node 7 \(nodes: 0, 1; agents: 2, 3\)"):
        stale.member(7)
    save_record(stale.with_agent(replace(first, pid=200, started=20)))  # a restart elsewhere
    again = save_record(stale.with_agent(replace(first, state="stopped")))
    assert (again.member(2).pid, again.member(2).state) == (200, "running")


def test_agents_are_processes_of_the_cluster_and_their_ends_are_folded_in(
    tmp_path: Path, fake_serf: Path
) -> None:
    rec = _mixed(tmp_path / "c", base_port=0, runtime_base_port=0)
    me = os.getpid()
    live = replace(rec.agents[0], pid=me, started=start_marker(me), state="running")
    gone = replace(rec.agents[1], pid=me, started=start_marker(me) + 1, state="running")
    Path(gone.log).write_text("==> Serf agent running!\n    [INFO] agent: shutdown complete\n")
    rec = rec.with_agent(live).with_agent(gone)
    found = members(rec.directory, rec)
    assert [m.label() for m in found] == [f"agent serf-2 pid {me}", f"agent serf-3 pid {me}"]
    folded, done = fold_endings(rec, found)
    assert done == []  # agents have no process files
    assert folded.member(2).state == "running"
    assert folded.member(2).ended is None
    ended = folded.member(3)
    assert ended.state == "exited"
    assert ended.ended is not None
    assert "shutdown complete" in ended.ended.last_line


def test_the_gossip_key_reaches_agents_in_a_private_file_never_on_a_command_line(
    tmp_path: Path, fake_serf: Path
) -> None:
    rec = _mixed(tmp_path / "c", base_port=0, runtime_base_port=0, keyring=True)
    key = Path(rec.keyring).read_text().strip()
    config = tmp_path / "c" / AGENT_CONFIG
    assert config.stat().st_mode & 0o777 == 0o600
    assert json.loads(config.read_text()) == {"encrypt_key": key}
    agent = rec.agents[0]
    argv = agent_command(rec, agent, ["127.0.0.1:9000"], serf="/usr/bin/serf")
    assert argv[:8] == [
        "/usr/bin/serf",
        "agent",
        "-node",
        "serf-2",
        "-bind",
        agent.gossip_addr,
        "-rpc-addr",
        agent.rpc_addr,
    ]
    assert argv[8:] == ["-join", "127.0.0.1:9000", "-log-level=info", f"-config-file={config}"]
    assert not any(key in a for a in argv)
    plain = _mixed(tmp_path / "p", base_port=0, runtime_base_port=0, keyring=False)
    assert json.loads((tmp_path / "p" / AGENT_CONFIG).read_text()) == {}
    assert "-join" not in agent_command(plain, plain.agents[0], [], serf="serf")


def test_a_node_of_a_mixed_cluster_speaks_memberlist_and_joins_by_address(
    tmp_path: Path, fake_serf: Path
) -> None:
    rec = _mixed(tmp_path / "c", base_port=0, runtime_base_port=0)
    cmd = plan_module.node_command(
        rec,
        rec.nodes[1],
        python="py",
        viz=False,
        joins=["127.0.0.1:1", "127.0.0.1:2"],
        network=network_of(rec),
    )
    at = cmd.index("--wire")
    assert cmd[at : at + 10] == [
        "--wire",
        "memberlist",
        "--name",
        "rt-1",
        "--node-id",
        "1",
        "--join",
        "127.0.0.1:1",
        "--join",
        "127.0.0.1:2",
    ]
    assert "--hostfile" not in cmd
    # one more node takes the number after every member's, and no hostfile line
    added = plan_module.plan_node(rec, induct=False, viz=False, network=network_of(rec))
    assert added.node_id == 4
    taken = {n.runtime_port for n in rec.nodes} | {a.gossip_port for a in rec.agents}
    assert added.runtime_port not in taken
    with pytest.raises(BadInput, match="--induct"):
        plan_module.plan_node(rec, induct=True, viz=False, network=network_of(rec))


def test_a_starting_member_joins_through_members_that_answer_node_0_first(
    tmp_path: Path, fake_serf: Path
) -> None:
    rec = _mixed(tmp_path / "c", n=3, serf=2, base_port=0, runtime_base_port=0)
    assert join_addresses(rec, rec.nodes[0], lambda m: True) == []  # nobody answers yet
    up = rec
    for n in rec.nodes:
        up = up.with_node(replace(n, state="running"))
    for a in rec.agents:
        up = up.with_agent(replace(a, state="running"))
    address = [f"127.0.0.1:{n.runtime_port}" for n in rec.nodes]
    assert join_addresses(up, up.agents[1], lambda m: True) == address[:MAX_JOINS]
    from_node_0 = join_addresses(up, up.nodes[0], lambda m: True)
    assert from_node_0 == [*address[1:], up.agents[0].gossip_addr]
    no_node_0 = join_addresses(up, up.agents[0], lambda m: m is not up.nodes[0])
    assert no_node_0 == [*address[1:], up.agents[1].gossip_addr]


def test_serf_members_json_is_read_strictly() -> None:
    raw = json.dumps(
        {
            "members": [
                {"name": "rt-0", "addr": "127.0.0.1:1", "status": "alive", "tags": {}},
                {"name": "serf-1", "addr": "127.0.0.1:2", "status": "failed", "tags": {}},
            ]
        }
    ).encode()
    assert parse_members(raw) == {"rt-0": "alive", "serf-1": "failed"}
    for bad in (b"", b"[]", b'{"members": [{"name": 1, "status": "alive"}]}', b"{"):
        with pytest.raises(SerfUnavailable):
            parse_members(bad)
    body = {"nodes": [{"name": "rt-0", "state": "alive"}, {"name": "serf-1", "state": "suspect"}]}
    assert alive_names(body) == {"rt-0"}
    assert alive_names(None) is None


async def test_a_partition_that_splits_the_agents_is_refused(
    tmp_path: Path, fake_serf: Path
) -> None:
    rec = _mixed(tmp_path / "c", base_port=0, runtime_base_port=0)
    cluster = MixedCluster(rec)
    with pytest.raises(BadInput, match="agents serf-2, serf-3 are in different groups"):
        await cluster.partition([[0, 2], [1, 3]])


def test_faults_name_the_members_a_memberlist_node_names() -> None:
    body = {"blocked": [1, 19972749], "loss": {"19972749": 10}, "delay": {}}
    names = {1: "rt-1", 19972749: "serf-3"}
    assert describe_faults(body, names) == "blocked rt-1, serf-3; loss 10% to serf-3"
    assert describe_faults(body) == "blocked 1, 19972749; loss 10% to 19972749"


def test_status_and_commands_on_the_agents_of_a_stopped_mixed_cluster(
    cluster_home: Path, fake_serf: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert build_parser().parse_args(["up", "-n", "1", "--serf", "2"]).serf == 2
    assert build_parser().parse_args(["up", "-n", "1"]).serf == 0
    rec = _mixed(cluster_dir("mx"), n=1, serf=2, base_port=0, runtime_base_port=0)
    save_record(rec)
    code, out, _ = run_main("status", "--json", "--name", "mx")
    assert code == 0
    body = json.loads(out)
    assert list(body) == ["name", "nodes", "agents", "strays", "network"]
    assert body["nodes"][0]["kind"] == "rtsim"
    assert body["nodes"][0]["name"] == "rt-0"
    assert [(a["kind"], a["name"], a["rpc_addr"]) for a in body["agents"]] == [
        ("serf", a.name, a.rpc_addr) for a in rec.agents
    ]
    code, out, _ = run_main("status", "--name", "mx")
    assert code == 0
    assert "serf-2" in out
    assert "kind" in out.splitlines()[1]
    code, _, err = run_main("kill", "2", "--name", "mx")
    assert code == 2
    assert "agent serf-2 is not running" in err
    code, _, err = run_main("loss", "1", "10", "--name", "mx")
    assert code == 2
    assert "member 1 of cluster 'mx' is Serf agent serf-1" in err
    code, _, err = run_main("partition", "0", "1", "--name", "mx")
    assert code == 2
    assert "node(s) 2 are in no group" in err


def test_an_agent_rt_cluster_killed_ended_by_sigkill_not_by_an_unknown_cause(
    tmp_path: Path, fake_serf: Path
) -> None:
    """Issue 44: ``status`` showed an agent ``kill`` ended as ``ended (cause unknown)``."""
    rec = _mixed(tmp_path / "c", base_port=0, runtime_base_port=0)
    me = os.getpid()
    killed = replace(rec.agents[0], pid=me, started=start_marker(me) + 1, state="killed")
    Path(killed.log).write_text("==> Serf agent running!\n")
    rec = rec.with_agent(killed)
    folded, _ = fold_endings(rec, members(rec.directory, rec))
    ended = folded.member(killed.index).ended
    assert ended is not None
    assert ended.describe() == "killed by SIGKILL"
    assert ended.last_line == "==> Serf agent running!"
