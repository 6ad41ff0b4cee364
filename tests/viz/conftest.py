"""Real node processes and a real Chromium for the dashboard pages' browser tests.

Rules:
1. Nodes are started with the node CLI (``python -m cluster.node.cli start``) on free ports,
   each with its own HOME (so no user configuration leaks in) and log file; a test sees a
   ``LocalNodes``.
2. Every process started here is ended in a ``finally``: resumed if paused, terminated, waited
   for, killed if it lingers.
3. Chromium is Debian's (``/usr/bin/chromium``); nothing is downloaded.
4. Tests wait for conditions (selectors, ``expect``, polling the API with a deadline), never for
   fixed sleeps.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cluster.local.ports import free_port

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


def get_json(url: str, timeout: float = 3.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.loads(resp.read())


def wait_for(what: str, check: Any, timeout: float = 45.0, interval: float = 0.2) -> Any:
    """Call ``check()`` until it returns a truthy value; fail with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except (OSError, urllib.error.URLError, ValueError) as exc:
            last = exc
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


@dataclass
class NodeProc:
    node_id: int
    port: int
    viz_port: int
    log: Path
    proc: subprocess.Popen[bytes]
    paused: bool = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.viz_port}"


@dataclass
class LocalNodes:
    """N node processes on loopback, one hostfile; node id = line offset."""

    workdir: Path
    nodes: list[NodeProc] = field(default_factory=list)

    def url(self, i: int = 0) -> str:
        return self.nodes[i].url

    def start(self, n: int) -> None:
        ports = [free_port() for _ in range(n)]
        hostfile = self.workdir / "hosts"
        hostfile.write_text("".join(f"127.0.0.1:{p}\n" for p in ports))
        env = {k: v for k, v in os.environ.items() if not k.startswith("RT_")}
        for i, port in enumerate(ports):
            home = self.workdir / f"home{i}"
            home.mkdir()
            log = self.workdir / f"node{i}.log"
            viz_port = free_port()
            cmd = [
                sys.executable, "-m", "cluster.node.cli", "start",
                "--host", "127.0.0.1", "--port", str(port), "--hostfile", str(hostfile),
                "--viz-port", str(viz_port), "--log-file", str(log),
                "--events", str(self.workdir / f"events{i}.jsonl"),
            ]  # fmt: skip
            out = (self.workdir / f"node{i}.out").open("wb")
            proc = subprocess.Popen(
                cmd, cwd=REPO, env={**env, "HOME": str(home)}, stdout=out, stderr=subprocess.STDOUT
            )
            out.close()
            self.nodes.append(NodeProc(i, port, viz_port, log, proc))
        for node in self.nodes:
            wait_for(f"node {node.node_id}'s dashboard", lambda node=node: self._healthy(node))
        for node in self.nodes:
            wait_for(
                f"node {node.node_id} to see {n} alive nodes",
                lambda node=node: self.alive_seen_by(node.node_id) == set(range(n)),
            )

    def _healthy(self, node: NodeProc) -> bool:
        if node.proc.poll() is not None:
            raise AssertionError(f"node {node.node_id} exited: {self.tail(node.node_id)}")
        return bool(get_json(f"{node.url}/api/health").get("ok"))

    def alive_seen_by(self, i: int) -> set[int]:
        topo = get_json(f"{self.url(i)}/api/topology")
        return {m["node_id"] for m in topo["nodes"] if m["state"] == "alive"}

    def state_seen_by(self, i: int, j: int) -> str | None:
        topo = get_json(f"{self.url(i)}/api/topology")
        return next((m["state"] for m in topo["nodes"] if m["node_id"] == j), None)

    def kill(self, i: int) -> None:
        node = self.nodes[i]
        node.proc.kill()
        node.proc.wait(timeout=10)

    def pause(self, i: int) -> None:
        self.nodes[i].proc.send_signal(signal.SIGSTOP)
        self.nodes[i].paused = True

    def resume(self, i: int) -> None:
        self.nodes[i].proc.send_signal(signal.SIGCONT)
        self.nodes[i].paused = False

    def tail(self, i: int, lines: int = 30) -> str:
        texts = []
        for p in (self.nodes[i].log, self.workdir / f"node{i}.out"):
            if p.exists():
                texts.append("\n".join(p.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(texts)

    def stop_all(self) -> None:
        for node in self.nodes:
            if node.paused and node.proc.poll() is None:
                node.proc.send_signal(signal.SIGCONT)
            if node.proc.poll() is None:
                node.proc.terminate()
        for node in self.nodes:
            try:
                node.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                node.proc.kill()
                node.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def cluster3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalNodes]:
    """A 3-node cluster shared by a module's tests (tests leave it as they found it)."""
    nodes = LocalNodes(tmp_path_factory.mktemp("cluster3"))
    try:
        nodes.start(3)
        yield nodes
    finally:
        nodes.stop_all()


@pytest.fixture
def fresh_cluster3(tmp_path: Path) -> Iterator[LocalNodes]:
    """A 3-node cluster of the test's own (for tests that kill a node)."""
    nodes = LocalNodes(tmp_path)
    try:
        nodes.start(3)
        yield nodes
    finally:
        nodes.stop_all()


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
