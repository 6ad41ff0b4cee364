"""Fixtures of the hostile-input suite: one real 2-node cluster per module (``cluster``, or
``memberlist_cluster`` speaking memberlist), our UDP socket (``udp``) and the session's tally
(``tally``), written to ``tests/artifacts/hostile-tally.json`` and printed as a table at the
end of the session.

Rules:
1. The cluster runs on the tests' process harness (``tests.support.open_harness``, the
   machinery of the ``harness`` fixture, here module-scoped): its processes are ended and
   proved gone when the module ends, whatever its tests did.
2. Each suite module (a door: HTTP, UDP, TCP) gets a fresh cluster, so what one door broke
   does not hide what another would have broken.
3. The tally lives in the session's stash; the summary hook prints and writes it only when a
   hostile test ran.
"""

from __future__ import annotations

import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import open_harness

from .cluster import Cluster, start_cluster
from .tally import Tally

REPO = Path(__file__).resolve().parents[2]
TALLY_JSON = REPO / "tests" / "artifacts" / "hostile-tally.json"
LOGS = REPO / "tests" / "artifacts" / "hostile-logs"
_TALLY = pytest.StashKey[Tally]()
_STARTED = pytest.StashKey[float]()


@pytest.fixture(scope="session")
def tally(request: pytest.FixtureRequest) -> Tally:
    """What every hostile input of the session was answered (see ``tally.py``)."""
    stash = request.config.stash
    if _TALLY not in stash:
        stash[_TALLY] = Tally()
        stash[_STARTED] = time.monotonic()
    return stash[_TALLY]


def _cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, wire: str
) -> Iterator[Cluster]:
    with open_harness(tmp_path_factory.mktemp("hostile")) as harness:
        try:
            yield start_cluster(harness, wire=wire)
        finally:
            LOGS.mkdir(parents=True, exist_ok=True)
            door = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
            for log in harness.workdir.glob("n*.log"):
                shutil.copyfile(log, LOGS / f"{door}-{log.name}")


@pytest.fixture(scope="module")
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, tally: Tally
) -> Iterator[Cluster]:
    """Nodes 0 and 1 with known data (``cluster.start_cluster``), ended after the module (the
    tally is asked for first, so the session's wall time counts the clusters' start). The
    nodes' logs (``n*.log``) are kept in ``tests/artifacts/hostile-logs/`` for whoever reads
    the tally."""
    yield from _cluster(request, tmp_path_factory, "swim")


@pytest.fixture(scope="module")
def memberlist_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, tally: Tally
) -> Iterator[Cluster]:
    """Nodes 0 and 1 as ``cluster``, speaking memberlist (``rt_run start --wire memberlist``):
    node 1 joined through node 0."""
    yield from _cluster(request, tmp_path_factory, "memberlist")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    stash = terminalreporter.config.stash
    found = stash.get(_TALLY, None)
    if found is None or not found.classes:
        return
    wall = time.monotonic() - stash[_STARTED]
    found.write(TALLY_JSON, wall)
    terminalreporter.section("hostile-input tally")
    for line in found.table():
        terminalreporter.write_line(line)
    terminalreporter.write_line(f"(wall {wall:.1f} s; written to {TALLY_JSON.relative_to(REPO)})")


@pytest.fixture
def udp() -> Iterator[socket.socket]:
    """Our UDP socket on loopback (acks to our probes come back to it)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.bind(("127.0.0.1", 0))
    sock.setblocking(False)
    with sock:
        yield sock
