"""Real node processes and a real Chromium for the dashboard pages' browser tests.

Rules:
1. Nodes run on the tests' process harness (``tests.support``): the node CLI on free ports,
   each with its own HOME and log; a test sees a ``LocalNodes``.
2. Every process started here is ended when its fixture ends, whatever the test did: resumed
   if paused, terminated, killed if it lingers, proved gone.
3. Chromium is Debian's (``/usr/bin/chromium``); nothing is downloaded.
4. Tests wait for conditions (selectors, ``expect``, ``wait_for`` polling the API), never for
   fixed sleeps.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio

from cluster.local import free_port, log_tail
from cluster.rpc import Faults, rpc_call
from tests.support import HOST, Child, Harness, open_harness, wait_for

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "tests" / "artifacts" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WIDTHS = (1280, 390)
START_TIMEOUT = 45.0  # seconds for a node's dashboard, and for the cluster to converge
POLL = 0.2  # seconds between looks at the nodes' API


def get_json(url: str, timeout: float = 3.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.loads(resp.read())


@dataclass
class LocalNodes:
    """N node processes on loopback, one hostfile; node id = line offset."""

    harness: Harness
    nodes: list[Child] = field(default_factory=list)

    def url(self, i: int = 0) -> str:
        return self.nodes[i].url

    def start(self, n: int) -> None:
        """Start ``n`` nodes and wait until each sees all alive."""
        workdir = self.harness.workdir
        ports = [free_port() for _ in range(n)]
        hostfile = workdir / "hosts"
        hostfile.write_text("".join(f"127.0.0.1:{p}\n" for p in ports))
        for i, port in enumerate(ports):
            node = self.harness.start_dashboard_node(
                "--host", "127.0.0.1", "--hostfile", str(hostfile),
                "--events", str(workdir / f"events{i}.jsonl"),
                port=port, name=f"node{i}",
            )  # fmt: skip
            self.nodes.append(node)
        for i, node in enumerate(self.nodes):
            wait_for(
                f"node {i}'s dashboard",
                lambda node=node: self._healthy(node),
                timeout=START_TIMEOUT,
                interval=POLL,
            )
        for i in range(n):
            wait_for(
                f"node {i} to see {n} alive nodes",
                lambda i=i: self.alive_seen_by(i),
                until=lambda seen: seen == set(range(n)),
                timeout=START_TIMEOUT,
                interval=POLL,
            )

    def _healthy(self, node: Child) -> bool:
        self.harness.require_alive(node)
        return bool(get_json(f"{node.url}/api/health").get("ok"))

    def alive_seen_by(self, i: int) -> set[int]:
        topo = get_json(f"{self.url(i)}/api/topology")
        return {m["node_id"] for m in topo["nodes"] if m["state"] == "alive"}

    def state_seen_by(self, i: int, j: int) -> str | None:
        topo = get_json(f"{self.url(i)}/api/topology")
        return next((m["state"] for m in topo["nodes"] if m["node_id"] == j), None)

    def kill(self, i: int) -> None:
        self.harness.kill(self.nodes[i])

    def pause(self, i: int) -> None:
        self.harness.pause(self.nodes[i])

    def resume(self, i: int) -> None:
        self.harness.resume(self.nodes[i])

    def tail(self, i: int, lines: int = 30) -> str:
        return log_tail(self.nodes[i].log, lines)

    def block(self, i: int, peers: list[int]) -> None:
        """Node ``i`` drops all SWIM traffic to and from ``peers`` (the control RPC's
        ``block``, as ``cluster.local``'s partition sends it)."""
        trio.run(rpc_call, HOST, self.nodes[i].port, Faults("block", None, 0, tuple(peers)), 5.0)


@contextlib.contextmanager
def local_nodes(workdir: Path, n: int) -> Iterator[LocalNodes]:
    """``n`` converged nodes for the block; every process ends with it."""
    with open_harness(workdir) as harness:
        nodes = LocalNodes(harness)
        nodes.start(n)
        yield nodes


@pytest.fixture(scope="module")
def cluster3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalNodes]:
    """A 3-node cluster shared by a module's tests (tests leave it as they found it)."""
    with local_nodes(tmp_path_factory.mktemp("cluster3"), 3) as nodes:
        yield nodes


@pytest.fixture
def fresh_cluster3(tmp_path: Path) -> Iterator[LocalNodes]:
    """A 3-node cluster of the test's own (for tests that kill a node)."""
    with local_nodes(tmp_path, 3) as nodes:
        yield nodes


@pytest.fixture
def fresh_cluster4(tmp_path: Path) -> Iterator[LocalNodes]:
    """A 4-node cluster of the test's own (for the view matrix: kills and partitions)."""
    with local_nodes(tmp_path, 4) as nodes:
        yield nodes


@pytest.fixture
def cluster1(tmp_path: Path) -> Iterator[LocalNodes]:
    """One node of the test's own."""
    with local_nodes(tmp_path, 1) as nodes:
        yield nodes


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists() or shutil.which(CHROMIUM) is None:
        pytest.skip("Debian's Chromium is not installed at /usr/bin/chromium")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


class PageErrors:
    """Uncaught script errors of a page (a page must raise none)."""

    def __init__(self, page: Any) -> None:
        self.errors: list[str] = []
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(20_000)
    errors = PageErrors(pg)
    try:
        yield pg
        assert not errors.errors, f"script errors on the page: {errors.errors}"
    finally:
        context.close()


def screenshot(page: Any, name: str, ready: Any = None) -> list[Path]:
    """Save ``name`` at 1280 and 390 px wide (full page) under tests/artifacts/screenshots/."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    saved = []
    original = page.viewport_size
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        if ready is not None:
            ready()
        path = SCREENSHOTS / f"{name}_{width}.png"
        page.screenshot(path=str(path), full_page=True)
        saved.append(path)
    if original:
        page.set_viewport_size(original)
    return saved
