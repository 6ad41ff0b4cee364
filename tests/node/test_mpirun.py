"""Nodes launched by Open MPI's ``mpirun`` on one machine (Debian's openmpi-bin): each rank
takes the hostfile entry whose offset is its rank, and its dashboard listens on viz.port +
local rank.

mpirun runs on the tests' harness, in its own session; its ranks are its children, each in a
process group of its own, so the harness is handed every rank's pid as well (read from
mpirun's children while it runs, and checked against each node's RPC identity). At teardown
mpirun gets SIGTERM (which it forwards to the ranks), the ranks get it too, and every one is
proved gone, whatever the test did.
"""

from __future__ import annotations

import re
import shutil
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
import pytest
import trio

from cluster.ground.errors import ApiError
from cluster.local import check_port_free, pick_free_ports
from cluster.local.record import start_marker
from cluster.rpc import Identity, rpc_call
from tests.support import RETRY_ON, Child, Harness, open_harness, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun (openmpi-bin) missing"),
]

HOST = "127.0.0.1"
RANKS = 4
CONFIG = "workload: {enabled: false}\n"  # four nodes on a small machine: no synthetic load


def rt_run() -> list[str]:
    """The venv's console script (``<venv>/bin/rt_run``), else the module it runs."""
    script = Path(sys.executable).parent / "rt_run"
    return [str(script)] if script.exists() else [sys.executable, "-m", "cluster.node.cli"]


def mpirun(ranks: int, *args: str) -> list[str]:
    """``mpirun -n <ranks> rt_run start <args>`` for one machine: more ranks than cores, no
    process binding (the nodes are no MPI programs), nothing started over ssh."""
    launcher = shutil.which("mpirun")
    assert launcher is not None
    return [launcher, "--oversubscribe", "--bind-to", "none", "-n", str(ranks),
            *rt_run(), "start", *args]  # fmt: skip


# Open MPI refuses to run as root unless told twice (CI runs as root); harmless otherwise.
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def consecutive_free_ports(count: int, avoid: set[int]) -> int:
    """The first of ``count`` consecutive ports free now on HOST (TCP)."""

    def block() -> int | None:
        (first,) = pick_free_ports(HOST, 1, udp=False, avoid=avoid)
        ports = range(first, first + count)
        if ports[-1] > 65535 or avoid.intersection(ports):
            return None
        if any(check_port_free(HOST, p, udp=False) is not None for p in ports):
            return None
        return first

    return wait_for(f"{count} consecutive free ports", block, timeout=10, interval=0)


class Ranks:
    """The rank processes of one mpirun: collected from its children while it runs, each
    handed to the harness, which ends and proves gone every process it knows."""

    def __init__(self, harness: Harness, launcher: Child) -> None:
        self.harness = harness
        self.launcher = launcher
        self.pids: set[int] = set()

    def collect(self) -> set[int]:
        """The ranks running now (every one seen is remembered and given to the harness)."""
        try:
            children = psutil.Process(self.launcher.pid).children()
        except psutil.NoSuchProcess:
            return set()
        now = set()
        for proc in children:
            now.add(proc.pid)
            if proc.pid not in self.pids and (marker := start_marker(proc.pid)):
                self.pids.add(proc.pid)
                child = Child(f"rank-pid-{proc.pid}", proc.pid, marker, self.launcher.log)
                self.harness.children.append(child)
        return now

    def gone(self) -> bool:
        return all(
            self.harness.state(c) == "gone" for c in self.harness.children if c.pid in self.pids
        )


@dataclass
class MpiCluster:
    harness: Harness
    launcher: Child
    ranks: Ranks
    hostfile: Path
    ports: list[int]
    viz_port: int


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MpiCluster]:
    workdir = tmp_path_factory.mktemp("mpirun")
    with open_harness(workdir) as harness:
        viz = consecutive_free_ports(RANKS, set())
        ports = pick_free_ports(HOST, RANKS, udp=True, avoid=set(range(viz, viz + RANKS)))
        hostfile = workdir / "hostfile"
        hostfile.write_text("".join(f"{HOST}:{p}\n" for p in ports))
        config = workdir / "rt.yaml"
        config.write_text(CONFIG)
        argv = mpirun(RANKS, "--hostfile", str(hostfile), "--viz-port", str(viz),
                      "--config", str(config))  # fmt: skip
        launcher = harness.start(argv, "mpirun", env=MPI_ENV)
        ranks = Ranks(harness, launcher)
        try:
            yield MpiCluster(harness, launcher, ranks, hostfile, ports, viz)
        finally:
            ranks.collect()  # the harness ends whatever ranks still run, with mpirun


def identities(c: MpiCluster) -> list[dict[str, object]]:
    """Every node's RPC identity, in hostfile order (ApiError while one does not answer)."""
    c.harness.require_alive(c.launcher)
    c.ranks.collect()
    found = []
    for port in c.ports:
        body = trio.run(rpc_call, HOST, port, Identity(), 2.0)
        assert isinstance(body, dict)
        found.append(body)
    return found


def converged(c: MpiCluster) -> list[dict[str, object]] | None:
    """Every dashboard's topology once each lists all four nodes alive, else None."""
    c.harness.require_alive(c.launcher)
    c.ranks.collect()
    answers = [
        httpx.get(f"http://{HOST}:{c.viz_port + i}/api/topology", timeout=5).json()
        for i in range(RANKS)
    ]
    for body in answers:
        nodes = body["nodes"]
        if sorted(n["node_id"] for n in nodes) != list(range(RANKS)):
            return None
        if not all(n["state"] == "alive" for n in nodes):
            return None
    return answers


def test_mpirun_ranks_converge_into_one_cluster(cluster: MpiCluster) -> None:
    topologies = wait_for(
        "every rank's dashboard to list 4 alive nodes",
        lambda: converged(cluster),
        timeout=90,
        retry_on=(*RETRY_ON, httpx.HTTPError),
    )
    # the dashboard on viz.port + local rank is the node whose id is its rank
    assert [t["self_node_id"] for t in topologies] == list(range(RANKS))
    idents = identities(cluster)
    assert [i["node_id"] for i in idents] == list(range(RANKS))
    assert [i["runtime_port"] for i in idents] == cluster.ports
    assert [i["dashboard"] for i in idents] == [
        f"http://{HOST}:{cluster.viz_port + i}" for i in range(RANKS)
    ]
    # the processes answering are mpirun's ranks, one node each
    pids = {int(str(i["pid"])) for i in idents}
    assert len(pids) == RANKS
    assert pids <= cluster.ranks.collect()
    log = cluster.harness.log_text(cluster.launcher)
    for rank, port in enumerate(cluster.ports):
        assert (
            f"rank {rank} (OMPI_COMM_WORLD_RANK) takes hostfile {cluster.hostfile} entry {rank} "
            f"({HOST}:{port}): node {rank} binds {HOST}:{port}; dashboard port "
            f"{cluster.viz_port + rank} (local rank {rank}: OMPI_COMM_WORLD_LOCAL_RANK)"
        ) in log


def test_sigterm_to_mpirun_ends_every_rank(cluster: MpiCluster) -> None:
    retry = (*RETRY_ON, ApiError)  # a node not listening yet
    idents = wait_for("every node's identity", lambda: identities(cluster), retry_on=retry)
    pids = {int(str(i["pid"])) for i in idents}
    assert pids <= cluster.ranks.pids
    assert cluster.harness.signal(cluster.launcher, signal.SIGTERM)
    status = cluster.harness.wait_exit(cluster.launcher, timeout=30)
    assert status is not None
    wait_for("every rank to be gone", cluster.ranks.gone, timeout=30)
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"


def test_a_rank_without_an_entry_fails_clearly_and_ends_the_job(harness: Harness) -> None:
    ports = pick_free_ports(HOST, 2, udp=True)
    hostfile = harness.workdir / "hostfile"
    hostfile.write_text("".join(f"{HOST}:{p}\n" for p in ports))
    config = harness.workdir / "rt.yaml"
    config.write_text(CONFIG)
    argv = mpirun(3, "--hostfile", str(hostfile), "--viz-port", "0", "--config", str(config))
    launcher = harness.start(argv, "mpirun", env=MPI_ENV)
    ranks = Ranks(harness, launcher)

    def ended() -> bool:
        ranks.collect()  # every rank seen is ended and proved gone by the harness too
        return not harness.alive(launcher)

    wait_for("mpirun to end the job", ended, timeout=60, interval=0.02)
    assert harness.exit_status(launcher) not in (None, 0)
    log = harness.log_text(launcher)
    assert (
        f"rank 2 (OMPI_COMM_WORLD_RANK) has no entry in hostfile {hostfile}: it has 2 entries; "
        "start at most 2 processes, or add entries"
    ) in log
    # mpirun names the rank that failed and its exit status (2: settings that cannot be used)
    assert "Process name: [[" in log
    assert "],2]" in log
    assert re.search(r"Exit code:\s+2\n", log)
    wait_for("every rank seen to be gone", ranks.gone, timeout=30)
