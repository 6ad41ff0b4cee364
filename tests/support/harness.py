"""The one process harness of the tests: node processes and any other command, started through
``cluster.local``'s process API and always ended.

Rules:
1. Every process runs detached in its own session, stdout and stderr appended to its own log
   in the test's directory. The environment is ours without any ``RT_*`` variable, plus
   ``RT_VIZ_PORT=0`` (a node never takes the shared default 8080); a node gets its own HOME (no
   user configuration leaks in) and a free runtime port (``cluster.local.free_port``).
2. Every process started here is ended when the harness closes (``open_harness``, the
   ``harness`` fixture), also when the test failed: resumed, SIGTERM, SIGKILL if it lingers,
   and proved gone; a survivor fails the test.
3. Readiness is a condition waited for (``wait_for``): the node's RPC identity, an HTTP answer,
   or a line in the log. A process that exits while waited on fails the wait at once, with its
   log tail.
4. ``close`` and the RPC helpers run their own ``trio.run``: call them outside a trio run (a
   sync test, a fixture's teardown). A trio test waits with ``wait_for_async`` on
   ``log_match``; the harness fixture's teardown runs outside the test's trio run.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import psutil
import trio

from cluster.ground.errors import ApiError
from cluster.local import Processes, child_env, free_port, log_tail
from cluster.rpc import Identity, rpc_call

from .waiting import wait_for

__all__ = ["HOST", "NODE", "Child", "Harness", "open_harness"]

HOST = "127.0.0.1"
NODE = (sys.executable, "-m", "cluster.node.cli", "start")  # rt_run start
LISTENING = r"Viz: dashboard listening at (http://[\d.]+:\d+)"


@dataclass(frozen=True, slots=True)
class Child:
    """One process the harness started; a node's runtime and dashboard ports (0 and -1 when
    not a node, or when the node picks its dashboard port itself)."""

    name: str
    pid: int
    started: float  # start marker (ticks after boot): tells a reused pid apart
    log: Path
    port: int = 0
    viz_port: int = -1

    @property
    def url(self) -> str:
        """The dashboard's base URL (for a node started with a dashboard port)."""
        return f"http://{HOST}:{self.viz_port}"


class Harness:
    """The processes of one test (or one module's fixture), all ended by ``close``."""

    def __init__(self, workdir: Path, *, grace: float = 10.0) -> None:
        self.workdir = workdir
        self.grace = grace  # seconds between SIGTERM and SIGKILL at close
        ours = {k: v for k, v in os.environ.items() if not k.startswith("RT_")}
        self.env = child_env({**ours, "HOME": str(workdir), "RT_VIZ_PORT": "0"})
        self.children: list[Child] = []
        self._processes = Processes()

    # ---- starting ----------------------------------------------------------------------------

    def start(
        self,
        argv: Sequence[str],
        name: str,
        *,
        env: Mapping[str, str] | None = None,
        port: int = 0,
        viz_port: int = -1,
    ) -> Child:
        """Start ``argv`` (``argv[0]`` a path) logging to ``<workdir>/<name>.log``."""
        log = self.workdir / f"{name}.log"
        proc = self._processes.spawn(argv, log, {**self.env, **(env or {})})
        child = Child(name, proc.pid, proc.started, log, port, viz_port)
        self.children.append(child)
        return child

    def start_node(
        self,
        *flags: str,
        port: int | None = None,
        viz_port: int | None = None,
        name: str = "node",
        env: Mapping[str, str] | None = None,
    ) -> Child:
        """``rt_run start --port <port> [--viz-port <viz_port>] <flags>`` with its own HOME;
        ``port`` defaults to a free one."""
        port = free_port() if port is None else port
        home = self.workdir / f"{name}.home"
        home.mkdir(exist_ok=True)
        argv = [*NODE, "--port", str(port)]
        if viz_port is not None:
            argv += ["--viz-port", str(viz_port)]
        return self.start(
            [*argv, *flags],
            name,
            env={"HOME": str(home), **(env or {})},
            port=port,
            viz_port=-1 if viz_port is None else viz_port,
        )

    def start_dashboard_node(
        self,
        *flags: str,
        port: int | None = None,
        name: str = "node",
        env: Mapping[str, str] | None = None,
    ) -> Child:
        """``start_node`` with its dashboard on a port of the kernel's choosing, read back from
        this start's log line (a restart appends to the same log): a port picked free
        beforehand can be taken by someone else before the node binds it."""
        log = self.workdir / f"{name}.log"
        before = len(re.findall(LISTENING, log.read_text())) if log.exists() else 0
        child = self.start_node(*flags, port=port, viz_port=0, name=name, env=env)

        def listening() -> list[str]:
            self.require_alive(child)
            return re.findall(LISTENING, child.log.read_text())[before:]

        urls = wait_for(f"{name}'s dashboard to listen", listening, timeout=60)
        return replace(child, viz_port=int(urls[0].rsplit(":", 1)[1]))

    # ---- watching ----------------------------------------------------------------------------

    def state(self, child: Child) -> str:
        """``running``, ``paused`` or ``gone`` (a child that ended is reaped here)."""
        return self._processes.state(child)

    def alive(self, child: Child) -> bool:
        return self.state(child) != "gone"

    def exit_status(self, child: Child) -> int | None:
        """How the child ended (negative: the signal); None while it runs."""
        return self._processes.exit_status(child)

    def require_alive(self, child: Child) -> None:
        """AssertionError with the log's tail when the child has ended."""
        if not self.alive(child):
            raise AssertionError(
                f"{child.name} (pid {child.pid}) exited with {self.exit_status(child)}; its log "
                f"{child.log}:\n{log_tail(child.log, 30)}"
            )

    @staticmethod
    def log_text(child: Child) -> str:
        try:
            return child.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_match(self, child: Child, pattern: str) -> re.Match[str] | None:
        """The first match of ``pattern`` in the child's log; fails if it ended without one."""
        found = re.search(pattern, self.log_text(child))
        if found is None:
            self.require_alive(child)
        return found

    def wait_log(self, child: Child, pattern: str, timeout: float = 30.0) -> re.Match[str]:
        """Wait until ``pattern`` appears in the child's log."""
        return wait_for(
            f"/{pattern}/ in {child.name}'s log",
            lambda: self.log_match(child, pattern),
            timeout=timeout,
        )

    def identity(self, child: Child, timeout: float = 2.0) -> dict[str, Any] | None:
        """The node's answer to ``control identity`` over its RPC, None if it does not answer."""
        try:
            body = trio.run(rpc_call, HOST, child.port, Identity(), timeout)
        except ApiError:  # not listening or not answering (yet)
            return None
        return body if isinstance(body, dict) else None

    def wait_ready(self, child: Child, timeout: float = 30.0) -> dict[str, Any]:
        """Wait until the node answers its RPC identity; that answer."""

        def answered() -> dict[str, Any] | None:
            self.require_alive(child)
            return self.identity(child)

        what = f"{child.name} to answer its RPC identity on port {child.port}"
        return wait_for(what, answered, timeout=timeout)

    def dashboard_url(self, child: Child, timeout: float = 30.0) -> str:
        """The URL the node's log says its dashboard listens at (the bound port)."""
        return self.wait_log(child, LISTENING, timeout).group(1)

    # ---- signalling and ending ---------------------------------------------------------------

    def signal(self, child: Child, sig: signal.Signals) -> bool:
        """Send ``sig`` to the child's process group; False if it is gone."""
        return self._processes.signal(child, sig)

    def pause(self, child: Child, timeout: float = 10.0) -> None:
        """SIGSTOP the child's process group and wait until the kernel shows it stopped."""
        assert self.signal(child, signal.SIGSTOP), f"{child.name} is gone; cannot pause it"
        wait_for(f"{child.name} to stop", lambda: self.state(child) == "paused", timeout=timeout)

    def resume(self, child: Child) -> None:
        self.signal(child, signal.SIGCONT)

    def wait_exit(self, child: Child, timeout: float = 10.0) -> int | None:
        """Wait until the child has ended; its exit status."""
        wait_for(
            f"{child.name} (pid {child.pid}) to exit",
            lambda: not self.alive(child),
            timeout=timeout,
        )
        return self.exit_status(child)

    def kill(self, child: Child, timeout: float = 10.0) -> None:
        """SIGKILL the child's process group and wait until it is gone."""
        self.signal(child, signal.SIGKILL)
        self.wait_exit(child, timeout)

    def close(self) -> None:
        """End every process started here (SIGCONT+SIGTERM, SIGKILL after ``grace`` s) and
        prove each gone; ``ClusterError`` names any survivor. Outside a trio run only."""
        terminate = partial(
            self._processes.terminate,
            self.children,
            grace=self.grace,
            name=lambda c: f"{c.name} pid {c.pid}",
        )
        trio.run(terminate)


@contextlib.contextmanager
def open_harness(workdir: Path, *, grace: float = 10.0) -> Iterator[Harness]:
    """A harness whose processes all end when the block does, however it ends."""
    harness = Harness(workdir, grace=grace)
    try:
        yield harness
    finally:
        harness.close()


def running(pid: int) -> bool:
    """Whether process ``pid`` still runs: a zombie has ended (its parent reaps it)."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False
