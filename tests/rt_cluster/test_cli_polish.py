"""rt_cluster's words (issue 14): "did you mean" for a command, the clusters there are when
``--name`` names none, the node ids there are, no claim of an operation that did nothing, the
faults in ``status``, and ``--foreground``'s one line per change (``watch.changes``)."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

import swim
from cluster.local import ClusterRecord, Ending, NodeRecord, cluster_dir, process_state, save_record
from cluster.local import start_marker as marker
from cluster.rt_cluster.hints import id_list, unknown_cluster
from cluster.rt_cluster.output import next_step
from cluster.rt_cluster.watch import (
    Look,
    NodeLook,
    carry,
    changes,
    describe_faults,
    node_look,
)
from cluster.runtime import faults_json
from tests.support import wait_for
from tests.support.clusters import (
    interrupt,
    open_rt_cluster,
    quiet_config,
    read_until,
    rt_cluster,
    up_argv,
    wait_nothing_holds,
)
from tests.support.clusters import run_main as run


def one_line(err: str) -> str:
    assert "Traceback" not in err
    assert err.count("\n") == 1, err
    return err


def _record(name: str, n: int = 3, pids: dict[int, int] | None = None) -> ClusterRecord:
    """A record of ``n`` stopped nodes, except those given a (live) pid."""
    d = cluster_dir(name)
    d.mkdir(parents=True)
    pids = pids or {}
    nodes = tuple(
        NodeRecord(
            i,
            pids.get(i, 0),
            20000 + i,
            21000 + i,
            "",
            str(d / f"node-{i}.log"),
            str(d / f"node-{i}.events"),
            "running" if i in pids else "stopped",
            started=marker(pids[i]) if i in pids else 0,
        )
        for i in range(n)
    )
    rec = ClusterRecord(name=name, directory=str(d), hostfile=str(d / "hostfile"), nodes=nodes)
    save_record(rec)
    return rec


# ---- names: commands, clusters, nodes ---------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["stauts"], "unknown command 'stauts'; did you mean 'status'?"),
        (["dwon", "--name", "x"], "unknown command 'dwon'; did you mean 'down'?"),
        (["partiton", "0", "1"], "unknown command 'partiton'; did you mean 'partition'?"),
        (["resme", "1"], "unknown command 'resme'; did you mean 'resume'?"),
        (["frobnicate"], "unknown command 'frobnicate' (commands: up, status, down, list, kill"),
        (["x" * 500], "unknown command '" + "x" * 40 + "'... (commands"),
        (
            ["up", "-n", "2", "--forground"],
            "rt_cluster up: unknown option '--forground'; did you mean '--foreground'?",
        ),
        (["status", "--jsn"], "rt_cluster status: unknown option '--jsn'; did you mean '--json'?"),
        (["scenario", "kill_one", "--seeed=4"], "unknown option '--seeed'; did you mean '--seed'?"),
        (["status", "--zzzzzz"], "unknown option '--zzzzzz' (options: --help, --name, --json)"),
    ],
)
def test_a_mistyped_command_gets_a_did_you_mean(
    cluster_home: Path, argv: list[str], message: str
) -> None:
    code, out, err = run(*argv)
    assert code == 2
    assert out == ""
    assert message in one_line(err)


def test_words_after_a_double_dash_are_not_unknown_options(cluster_home: Path) -> None:
    _, _, err = run("status", "--json", "--", "--x")
    assert "unknown option" not in err


def test_an_abbreviation_is_an_unknown_option(cluster_home: Path) -> None:
    """Issue 44: no option is taken from a prefix of its name (it was, until then)."""
    code, _, err = run("up", "--fore")
    assert code == 2
    assert "unknown option '--fore'; did you mean '--foreground'?" in one_line(err)


def test_no_such_cluster_names_the_ones_there_are_and_the_flag(cluster_home: Path) -> None:
    code, _, err = run("status")
    assert code == 2
    assert f"no cluster named 'default' (no clusters under {cluster_home});" in one_line(err)
    assert "start one with: rt_cluster up -n 3 --name default" in err
    _record("demo")
    # the one cluster there is: named with the flag, not guessed (the command did nothing)
    code, out, err = run("kill", "1")
    assert code == 2
    assert out == ""
    assert (
        "no cluster named 'default'; the one cluster here is 'demo': add --name demo "
        "(e.g. rt_cluster status --name demo)" in one_line(err)
    )
    code, _, err = run("status", "--name", "dmeo")
    assert code == 2
    assert "no cluster named 'dmeo'; did you mean 'demo'? (add --name demo;" in one_line(err)
    _record("alpha")
    _record("beta")
    code, _, err = run("down")
    assert code == 2
    assert (
        "no cluster named 'default'; clusters here: alpha, beta, demo "
        "(choose one with --name NAME)" in one_line(err)
    )
    many = [f"c{i:02}" for i in range(20)]
    assert "c11, ... (20 in all)" in unknown_cluster("zzz", many, cluster_home)


def test_an_unknown_node_lists_the_ids_there_are(cluster_home: Path) -> None:
    _record("c1")
    for argv in (["kill", "7"], ["loss", "7", "5"], ["loss", "0", "5", "--peer", "7"],
                 ["partition", "0,1", "7"], ["restart", "7"]):  # fmt: skip
        code, _, err = run(*argv, "--name", "c1")
        assert code == 2, argv
        assert "cluster 'c1' has no node 7 (nodes: 0, 1, 2)" in one_line(err), argv
    _record("big", n=12)
    code, _, err = run("pause", "12", "--name", "big")
    assert "cluster 'big' has no node 12 (nodes: 0..11)" in one_line(err)
    assert id_list([9, 0, 1, 2, 5, 7, 8, 10]) == "0, 1, 2, 5, 7..10"
    assert id_list([]) == "none"


@pytest.fixture
def sleeper() -> subprocess.Popen[bytes]:
    """A stand-in for a node's process: a sleep in a session (a process group) of its own."""
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


def test_no_operation_claims_what_it_did_not_do(
    cluster_home: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    _record("c1", pids={0: sleeper.pid})
    code, out, err = run("resume", "0", "--name", "c1")
    assert code == 2
    assert out == ""
    assert "node 0 is not paused (it is running); nothing to resume" in one_line(err)
    code, out, _ = run("pause", "0", "--name", "c1")
    assert code == 0
    assert "node 0 paused (SIGSTOP); resume it with: rt_cluster resume 0 --name c1" in out
    wait_for("the process to stop", lambda: process_state(sleeper.pid, 0),
             until=lambda s: s == "paused", timeout=10)  # fmt: skip
    code, out, err = run("pause", "0", "--name", "c1")
    assert code == 2
    assert "node 0 is already paused; resume it with: rt_cluster resume 0 --name c1" in err
    code, out, _ = run("resume", "0", "--name", "c1")
    assert code == 0
    assert "node 0 resumed (SIGCONT)" in out
    for command in ("kill", "stop", "pause", "resume"):
        code, out, err = run(command, "1", "--name", "c1")
        assert code == 2, command
        assert "node 1 is not running (state stopped); start it with: rt_cluster restart 1" in (
            one_line(err)
        )
    code, out, err = run("loss", "1", "5", "--name", "c1")
    assert code == 2
    assert "node 1 is not running" in one_line(err)
    code, out, _ = run("kill", "0", "--name", "c1")
    assert code == 0
    assert "node 0 killed (SIGKILL)" in out
    code, out, err = run("kill", "0", "--name", "c1")
    assert code == 2
    assert "node 0 is not running (state killed)" in one_line(err)
    code, out, err = run("loss", "all", "5", "--name", "c1")
    assert code == 2
    assert "no node of cluster 'c1' is running" in one_line(err)


# ---- faults: the read over the control RPC, and how they are shown ----------------------------


def test_faults_are_told_in_a_few_words() -> None:
    # the body a node answers for ``monitor faults`` (its GET /api/faults)
    faults = swim.Faults()
    assert describe_faults(faults_json(faults)) == ""
    faults.set_loss(None, 10)
    faults.set_loss(2, 5)
    faults.set_delay(1, 50)
    faults.block([3, 0])
    shown = {"node_id": 4, **faults_json(faults)}
    assert describe_faults(shown) == "blocked 0, 3; loss 10%; loss 5% to 2; delay 50 ms to 1"
    faults.heal()
    faults.set_delay(None, 250)
    assert describe_faults(faults_json(faults)) == "delay 250 ms"


def test_disk_faults_are_told_by_pool() -> None:
    body = {"blocked": [], "loss": {}, "delay": {}, "active": True, "disk": {
        "m2": {"latency_ms": 200.0, "errors": 10.0, "full": True},
        "m1": {"latency_ms": 0.0, "errors": 100.0, "full": False},
        "m3": {"latency_ms": 0.0, "errors": 0.0, "full": False}, "m4": "x"}}  # fmt: skip
    assert describe_faults(body) == "disk m1 100%; disk m2 200 ms 10% full"


def test_describe_faults_ignores_what_is_not_a_fault() -> None:
    body = {"blocked": [1, "2", True, None], "loss": {"all": 0, "3": "x", "4": True},
            "delay": [1], "active": True}  # fmt: skip
    assert describe_faults(body) == "blocked 1"
    assert describe_faults({"blocked": "1,2", "loss": {"10": 1.5, "9": 2, "all": 3}}) == (
        "loss 3%; loss 2% to 9; loss 1.5% to 10"
    )


def test_status_has_a_faults_column_and_json_a_faults_field(cluster_home: Path) -> None:
    _record("c1")
    code, out, _ = run("status", "--name", "c1")
    assert code == 0
    header = out.splitlines()[1].split()
    assert header == ["node", "pid", "state", "ended", "host", "runtime", "sees", "alive",
                      "faults", "dashboard"]  # fmt: skip
    assert out.splitlines()[2].split()[4] == "127.0.0.1"
    assert out.splitlines()[2].split()[7] == "-"  # faults: a stopped node has none


# ---- --foreground: the next step, then a line per change --------------------------------------


def test_the_next_step_names_the_dashboard_and_how_to_stop() -> None:
    d = "/tmp/x"
    node = NodeRecord(0, 1, 9413, 8080, "http://127.0.0.1:8080", f"{d}/l", f"{d}/e", "running")
    rec = ClusterRecord("demo", d, f"{d}/h", nodes=(node,))
    assert next_step(rec, foreground=True) == [
        "open http://127.0.0.1:8080/ to watch (who sees whom: http://127.0.0.1:8080/views); "
        "Ctrl-C stops all",
        "changes, one line each (processes, what each node sees, leaders, faults):",
    ]
    assert next_step(rec, foreground=False) == [
        "open http://127.0.0.1:8080/ to watch (who sees whom: http://127.0.0.1:8080/views); "
        "status: rt_cluster status --name demo; stop: rt_cluster down --name demo"
    ]
    bare = replace(rec, name="default", nodes=(replace(node, dashboard=""),))
    assert next_step(bare, foreground=False) == [
        "no dashboards (--no-viz); status: rt_cluster status; stop: rt_cluster down"
    ]


ALL_ALIVE = ((0, "alive"), (1, "alive"), (2, "alive"))
NO_FAULTS = {"blocked": [], "loss": {}, "delay": {}, "active": False}


def node(i: int, **kw: object) -> NodeLook:
    base = NodeLook(i, 100 + i, "running", answered=True, leader=0, views=ALL_ALIVE,
                    faults=NO_FAULTS)  # fmt: skip
    return replace(base, **kw)  # type: ignore[arg-type]


def look(*nodes: NodeLook) -> Look:
    return Look(tuple(nodes))


def sees(view: dict[int, str]) -> tuple[tuple[int, str], ...]:
    return tuple(sorted(view.items()))


def test_a_quiet_cluster_prints_nothing() -> None:
    steady = look(node(0), node(1), node(2))
    assert changes(steady, steady) == []


def test_a_pause_is_one_line_and_a_suspicion_one_line_for_all_observers() -> None:
    before = look(node(0), node(1), node(2))
    paused = carry(before, look(node(0), node(1), node(2, process="paused", answered=False,
                                                          views=None, faults=None)))  # fmt: skip
    assert changes(before, paused) == ["node 2: process paused"]
    assert paused.get(2) == replace(before.get(2), process="paused", answered=False)  # type: ignore[arg-type]
    suspect = sees({0: "alive", 1: "alive", 2: "suspect"})
    later = carry(paused, look(node(0, views=suspect), node(1, views=suspect),
                               node(2, process="paused", answered=False, views=None)))  # fmt: skip
    assert changes(paused, later) == ["node 2: alive -> suspect, as seen by 0, 1"]
    resumed = look(node(0, views=suspect), node(1, views=suspect), node(2))
    assert changes(later, resumed) == ["node 2: process resumed"]


def test_kill_restart_add_and_silence() -> None:
    before = look(node(0), node(1), node(2))
    dead = sees({0: "alive", 1: "dead", 2: "alive"})
    killed = look(node(0, views=dead, leader=0), node(1, process="gone", answered=False,
                  ending="killed by SIGKILL"), node(2, views=dead))  # fmt: skip
    assert changes(before, carry(before, killed)) == [
        "node 1: process ended (killed by SIGKILL)",
        "node 1: alive -> dead, as seen by 0, 2",
    ]
    # a new process: its first view is no change; the others see the member come back
    fresh = sees({0: "alive", 1: "alive"})
    restarted = look(node(0), node(1, pid=555, views=fresh, leader=None), node(2))
    assert changes(killed, restarted) == [
        "node 1: restarted, pid 555 (was 101)",
        "node 1: dead -> alive, as seen by 0, 2",
    ]
    four = sees({0: "alive", 1: "alive", 2: "alive", 3: "alive"})
    added = look(node(0, views=four), node(1, pid=555), node(2),
                 node(3, pid=0, answered=False, views=None))  # fmt: skip
    assert changes(restarted, added) == [
        "leader: none -> node 0, as seen by 1",
        "node 3: joined, alive as seen by 0",
    ]
    started = look(node(0, views=four), node(1, pid=555, views=four), node(2, views=four),
                   node(3, pid=103, dashboard="http://h:8083", views=four))  # fmt: skip
    # node 3 was known to node 0 already: the others' first sight of it is no news
    assert changes(added, started) == ["node 3: started, pid 103, dashboard http://h:8083"]
    quiet = replace(started.get(0), answered=False, views=None, faults=None)  # type: ignore[arg-type]
    silent = carry(started, look(quiet, *started.nodes[1:]))
    assert changes(started, silent) == ["node 0: not answering (its process runs)"]
    assert silent.get(0) == replace(started.get(0), answered=False)  # type: ignore[arg-type]
    assert changes(silent, started) == ["node 0: answering again"]


def test_faults_and_leaders_are_a_line_each() -> None:
    before = look(node(0), node(1), node(2))
    cut = {"blocked": [2], "loss": {"all": 10.0}, "delay": {}, "active": True}
    after = look(node(0, faults=cut), node(1, leader=1), node(2, leader=1, faults=None))
    assert changes(before, after) == [
        "leader: node 0 -> node 1, as seen by 1, 2",
        "node 0: faults: blocked 2; loss 10%",
    ]
    assert changes(after, look(node(0), node(1, leader=1), node(2, leader=1))) == [
        "node 0: faults: none"
    ]


def test_a_look_at_a_node_reads_its_two_answers_and_skips_junk() -> None:
    d = "/tmp/x"
    rec = NodeRecord(0, 7, 9413, 8080, "http://h:8080", f"{d}/l", f"{d}/e", "running")
    topology = {"leader_node_id": 1, "nodes": [{"node_id": 2, "state": "suspect"},
                {"node_id": 1, "state": "alive"}, {"node_id": "x"}, "junk"]}  # fmt: skip
    faults = {"node_id": 0, "blocked": [2], "loss": {}, "delay": {}, "active": True}
    seen = node_look(rec, "running", topology, faults)
    assert (seen.answered, seen.leader, seen.views) == (True, 1, ((1, "alive"), (2, "suspect")))
    assert seen.faults == {"blocked": [2], "loss": {}, "delay": {}, "active": True}
    assert (seen.faults_cell(), seen.alive_count()) == ("blocked 2", 1)
    silent = node_look(rec, "running", None, ["not", "a", "body"])
    assert (silent.answered, silent.views, silent.faults, silent.silent) == (
        False,
        None,
        None,
        True,
    )
    assert (silent.faults_cell(), silent.alive_count()) == ("?", None)
    ended = replace(rec, ended=Ending(signal="SIGKILL"))
    assert node_look(ended, "gone").ending == "killed by SIGKILL"
    assert node_look(ended, "gone").faults_cell() == "-"


def test_how_a_node_ended_is_told_once_known() -> None:
    gone = node(1, process="gone", answered=False)
    before = look(node(0), gone)
    after = look(node(0), replace(gone, ending="exit code 0"))
    assert changes(before, after) == ["node 1: it ended: exit code 0"]
    assert changes(after, after) == []


def test_status_of_a_sleeping_stand_in_shows_unknown_faults(
    cluster_home: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    # a live process that answers no RPC: its faults are not known, and status says so
    _record("c1", pids={0: sleeper.pid})
    code, out, _ = run("status", "--name", "c1")
    assert code == 0
    row = out.splitlines()[2].split()
    assert row[:3] == ["0", str(sleeper.pid), "running"]
    assert row[7] == "?"  # node pid state ended host runtime alive FAULTS dashboard


# ---- on a real cluster ------------------------------------------------------------------------

# a change, or the summary a quiet stretch of 10 s brings
STAMPED = re.compile(r"\d\d:\d\d:\d\d  ((node \d+|leader): |\d+/\d+ nodes up; )")


@pytest.mark.slow
def test_foreground_shows_the_urls_once_then_a_line_per_change(
    cluster_home: Path, tmp_path: Path
) -> None:
    argv = up_argv("w", 3, quiet_config(tmp_path), "--foreground")

    def rt(*args: str) -> subprocess.CompletedProcess[str]:
        return rt_cluster(*args, "--name", "w")

    with open_rt_cluster(argv, tmp_path / "w.err") as fg:
        assert fg.stdout is not None
        head = "".join(read_until(fg.stdout, "changes, one line each"))
        nodes = json.loads(rt("status", "--json").stdout)["nodes"]
        for n in nodes:  # one line per node: id, pid, host, runtime port, dashboard URL
            row = rf"^{n['node_id']}\s+{n['pid']}\s+{n['host']}\s+{n['runtime_port']}\s+"
            row += rf"{n['dashboard']}\s"
            assert re.search(row, head, re.MULTILINE), head
        assert f"open {nodes[0]['dashboard']}/ to watch" in head
        assert "; Ctrl-C stops all" in head
        body = []
        assert rt("pause", "2").returncode == 0
        body += read_until(fg.stdout, "node 2: process paused")
        again = rt("pause", "2")
        assert (again.returncode, again.stdout) == (2, "")
        assert "node 2 is already paused" in again.stderr
        body += read_until(fg.stdout, "node 2: alive -> suspect, as seen by")
        assert rt("resume", "2").returncode == 0
        body += read_until(fg.stdout, "node 2: process resumed")
        assert rt("loss", "1", "10", "--peer", "0").returncode == 0
        body += read_until(fg.stdout, "node 1: faults: loss 10% to 0")
        table = rt("status").stdout
        assert re.search(r"^1 .* loss 10% to 0 ", table, re.MULTILINE), table
        assert rt("heal").returncode == 0
        body += read_until(fg.stdout, "node 1: faults: none")
        again = rt("resume", "2")
        assert (again.returncode, again.stdout) == (2, "")
        assert "node 2 is not paused (it is running); nothing to resume" in again.stderr
        rest = interrupt(fg)
    assert fg.returncode == 0, (tmp_path / "w.err").read_text()
    assert all(STAMPED.match(line) for line in body), "".join(body)
    assert "cluster 'w' is down: 3 processes ended, none left running" in rest
    wait_nothing_holds(cluster_home / "w")
