"""The node process: the composition root that wires runtime, RPC, SWIM and dashboard together.

Rules:
1. A node is ready when its sockets are bound (RPC/TCP and SWIM/UDP on the runtime port, the
   dashboard when enabled); ``open_node`` yields only then.
2. This module only composes: who the node is comes from ``hostfile`` (and, under mpirun or
   srun, ``ranks``), what it answers over the RPC from ``control``, how its runtime reaches
   peers from ``peers``. The RPC's handler table is built once, when the SWIM handle exists,
   before the server answers anything.
3. The dashboard is started by name or as a callable it is given (``viz``), never imported
   here: a missing HTTP library or a taken port is a logged warning and the node runs on
   without it.
4. Every task runs in the node's nursery; stopping the node (signal, ``rt_run stop``, leaving
   the context) announces the departure to peers, then cancels everything.
5. The daemon's trio runs under a ``swim.clock.ProcessClock`` (``--clock-offset``,
   ``--clock-rate``): a clock fault (``rt_cluster clock``) changes its pace and wall clock
   while it runs, and a node restarted with those flags keeps its clock. An embedded node
   runs under its caller's clock, which a clock fault cannot set (refused).
"""

from __future__ import annotations

import errno
import functools
import ipaddress
import logging
import os
import random
import signal
import socket
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import trio

from cluster.ground.errors import SettingsError
from cluster.ground.settings import Settings
from cluster.hosts import advertised_host, resolve_identity
from cluster.rpc import Swim
from cluster.runtime import Runtime, preload_modules, serve_workload, startup_compose
from swim import SwimConfig, SwimHandle, open_swim
from swim.clock import ProcessClock
from swim.memberlist import Memberlist

from .control import Control
from .logs import configure_logging, set_node_id
from .peers import RpcPeers
from .ranks import place_node
from .rpc import Handler, RpcServerStats, bound_port, open_rpc_listeners, serve_rpc
from .viz import DASHBOARD, ServeDashboard, http_library_missing, resolve_dashboard, start_dashboard

__all__ = ["Node", "open_node", "preload", "run_node", "serve_node"]

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Node:
    """A running node. ``request_stop()`` ends it; ``runtime`` is what the dashboard serves."""

    settings: Settings
    runtime: Runtime
    swim: SwimHandle
    peers: RpcPeers
    rpc_port: int
    rpc_stats: RpcServerStats
    stop_requested: trio.Event = field(default_factory=trio.Event)

    @property
    def node_id(self) -> int:
        return self.runtime.node_id

    @property
    def dashboard_url(self) -> str | None:
        """``http://host:port`` of the dashboard once bound (the runtime's), else None."""
        return self.runtime.dashboard_url

    def request_stop(self) -> None:
        self.stop_requested.set()


def preload() -> None:
    """Import what a node imports lazily (the dashboard its name gives, the built-in modules'
    code) and scan the installed modules, for a parent that forks nodes: done once there, the
    pages stay shared by every node."""
    if http_library_missing() is None:
        resolve_dashboard(DASHBOARD)
    preload_modules()


@asynccontextmanager
async def open_node(
    settings: Settings,
    *,
    induct: bool = False,
    seed: int | None = None,
    env: Mapping[str, str] | None = None,
    dashboard: ServeDashboard | str = DASHBOARD,
) -> AsyncIterator[Node]:
    """Run a node inside the caller's trio run (the embedded API); yield it once ready.

    An embedded runtime serves no dashboard unless ``settings.viz.enabled`` (load settings
    with ``load_settings("embedded")``, where ``RT_VIZ_ENABLE=1`` turns it on). Under mpirun
    or srun the rank in ``env`` (default ``os.environ``) may place the node (``ranks``).
    ``dashboard`` is what serves it: a ``"module:attribute"`` name or the callable (``viz``).
    """
    settings = place_node(settings, os.environ if env is None else env)
    node_id, seeds = resolve_identity(settings, induct)
    net = settings.networking
    advertise = advertised_host(net)
    runtime = Runtime(settings, node_id if node_id is not None else -1)
    config, memberlist = _swim_config(settings, node_id, advertise, induct)
    async with open_rpc_listeners(net.host, net.port) as listeners:
        port = bound_port(listeners)  # SWIM binds the same number over UDP
        swim_cm = open_swim(
            config,
            node_id=node_id,
            host=net.host,
            port=port,
            seeds=[*seeds, *net.join] if memberlist else seeds,
            advertise=advertise,
            event_log=settings.logging.events or None,
            rng=random.Random(seed),
            induct=induct,
            wire_format=memberlist,
        )
        async with swim_cm as handle, trio.open_nursery() as nursery:
            node = _assemble(settings, runtime, handle, port)
            handlers = {**Control(node).handlers(), Swim: _swim_handler(handle)}
            streams = handle.handle_stream if memberlist else None
            await nursery.start(
                functools.partial(serve_rpc, foreign=streams),
                listeners,
                handlers,
                node.rpc_stats,
            )
            await nursery.start(runtime.workers.serve)
            nursery.start_soon(runtime.stats.serve_sampling, 1.0, handle.sleep_near)
            runtime.install_admin_pool()
            await startup_compose(runtime)
            await start_dashboard(runtime, settings.viz, nursery, dashboard)
            if settings.workload.enabled:
                nursery.start_soon(serve_workload, runtime, seed)
            try:
                yield node
            finally:
                with trio.move_on_after(2) as cleanup:
                    cleanup.shield = True
                    await handle.leave()
            nursery.cancel_scope.cancel()


def _swim_config(
    settings: Settings, node_id: int | None, advertise: str, induct: bool
) -> tuple[SwimConfig, Memberlist | None]:
    """The membership settings, and with ``swim.wire: memberlist`` this node's name there
    (memberlist's LAN profile for every timing the settings leave out)."""
    config = SwimConfig.from_mapping(settings.swim)
    if config.wire != "memberlist":
        return config, None
    if node_id is None or induct:
        raise SettingsError(
            "swim.wire memberlist: a node joins by its name and keeps its own id; "
            "give --node-id instead of --induct"
        )
    try:
        ipaddress.ip_address(advertise)
    except ValueError:
        raise SettingsError(
            f"swim.wire memberlist: members are told an IP address, not {advertise!r}; "
            "set --host or --advertise to one"
        ) from None
    name = settings.networking.name or f"rt-{node_id}"
    return SwimConfig.lan(**settings.swim), Memberlist(name)


def _swim_handler(handle: SwimHandle) -> Handler:
    async def on_swim(req: Swim) -> dict[str, Any]:
        return await handle.handle_tcp(dict(req.message))

    return on_swim


def _assemble(settings: Settings, runtime: Runtime, handle: SwimHandle, port: int) -> Node:
    """The node around ``runtime`` once its membership exists (sync: no one sees it half made)."""
    peers = RpcPeers(handle.faults)
    runtime.node_id = handle.node_id  # an inducted node learns its id only now
    runtime.ip_address = handle.host  # the address peers are told, never a wildcard bind
    runtime.membership = handle
    runtime.peers = peers
    set_node_id(handle.node_id)
    return Node(settings, runtime, handle, peers, port, RpcServerStats())


async def serve_node(
    settings: Settings,
    *,
    induct: bool = False,
    seed: int | None = None,
    task_status: trio.TaskStatus[Node] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run a node until SIGINT/SIGTERM or a stop request, then shut it down cleanly."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with open_node(settings, induct=induct, seed=seed) as node:
            host = node.settings.networking.host
            told = "" if node.swim.host == host else f", advertised as {node.swim.host}"
            log.info(
                "node %d up: runtime %s:%d%s (pid %d)",
                node.node_id,
                host,
                node.rpc_port,
                told,
                os.getpid(),
            )
            task_status.started(node)
            async with trio.open_nursery() as nursery:

                async def watch_signals() -> None:
                    async for signum in signals:
                        log.info("received %s; stopping", signal.Signals(signum).name)
                        node.request_stop()

                nursery.start_soon(watch_signals)
                await node.stop_requested.wait()
                nursery.cancel_scope.cancel()
            log.info("node %d stopping", node.node_id)


def run_node(
    settings: Settings,
    *,
    induct: bool = False,
    seed: int | None = None,
    clock: tuple[float, float] = (0.0, 1.0),
) -> int:
    """The daemon: configure logging, run the node in the foreground; return an exit status
    (2 for settings that cannot be used, 1 for another start-up failure, each one line).
    The node runs under its own clock (rule 5): ``clock`` is its wall clock's offset (s) and
    its rate."""
    try:
        configure_logging(settings)
    except SettingsError as exc:  # no log to write to yet: the one line goes to stderr
        print(f"rt_run: {exc}", file=sys.stderr)
        return 2
    try:
        settings = place_node(settings, os.environ)  # before start, so a failure names its port
        trio.run(lambda: serve_node(settings, induct=induct, seed=seed), clock=ProcessClock(*clock))
    except BaseException as exc:
        leaf = _known_leaf(exc)
        if leaf is None:
            raise
        status, message = _start_failure(leaf, settings)
        log.error("%s", message)
        if settings.logging.file:  # the log may be the file: the user reads stderr
            print(f"rt_run: {message}", file=sys.stderr)
        return status
    return 0


def _start_failure(leaf: BaseException, settings: Settings) -> tuple[int, str]:
    """The exit status and the one line that says what stopped the node from starting.

    Only an error about binding the runtime port (taken, not an address of this host, not
    allowed) names that port; a file's error names the file.
    """
    net = settings.networking
    if isinstance(leaf, SettingsError):
        return 2, str(leaf)
    if isinstance(leaf, KeyboardInterrupt):
        return 1, "cannot start: interrupted"
    assert isinstance(leaf, OSError)
    reason = leaf.strerror or str(leaf) or type(leaf).__name__
    if leaf.filename is not None:
        return 1, f"cannot start: {leaf.filename}: {reason}"
    if isinstance(leaf, socket.gaierror):
        return 1, f"cannot start: runtime address {net.host!r}: {reason}"
    if leaf.errno in _BIND_ERRORS:
        return 1, f"cannot start: runtime port {net.host}:{net.port}: {reason}"
    return 1, f"cannot start: {type(leaf).__name__}: {reason}"


_BIND_ERRORS = (errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES)


def _known_leaf(exc: BaseException) -> BaseException | None:
    """The start-up failure a user should read, found inside trio's exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if (leaf := _known_leaf(inner)) is not None:
                return leaf
        return None
    return exc if isinstance(exc, SettingsError | OSError | KeyboardInterrupt) else None
