"""The node process: the composition root that wires runtime, RPC, SWIM and dashboard together.

Rules:
1. A node is ready when its sockets are bound (RPC/TCP and SWIM/UDP on the runtime port, the
   dashboard when enabled); ``open_node`` yields only then.
2. The dashboard is imported lazily: a missing HTTP library or a taken port is a logged warning
   and the node runs on without it.
3. Every task runs in the node's nursery; stopping the node (signal, ``rt_run stop``, leaving
   the context) announces the departure to peers, then cancels everything.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import random
import signal
import socket
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import trio

import swim
from cluster.errors import BadRequest, PeerUnavailable, SettingsError
from cluster.ids import ADMIN_POOL_ID, PoolId
from cluster.runtime.runtime import Runtime
from cluster.runtime.workload import serve_workload, startup_compose
from cluster.settings import Settings

from .logs import configure_logging, set_node_id
from .rpc import RpcServerStats, rpc_call, serve_rpc

__all__ = ["Node", "open_node", "parse_hostfile", "preload", "run_node", "serve_node"]

log = logging.getLogger(__name__)


def parse_hostfile(path: str, default_port: int) -> list[tuple[str, int]]:
    """Entries ``host[:port]``, one per line; blank lines and ``#`` comments are not entries."""
    entries = []
    try:
        text = Path(path).expanduser().read_text()
    except OSError as exc:
        raise SettingsError(f"hostfile {path}: cannot read: {exc.strerror}") from None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        host, sep, port = line.rpartition(":")
        if not sep:
            host, port = line, str(default_port)
        if not port.isdigit() or not 0 < int(port) < 65536 or not host:
            raise SettingsError(f"hostfile {path}:{lineno}: expected host[:port], got {raw!r}")
        entries.append((host, int(port)))
    return entries


def _same_host(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return socket.gethostbyname(a) == socket.gethostbyname(b)
    except OSError:
        return False


def resolve_identity(settings: Settings, induct: bool) -> tuple[int | None, list[tuple[str, int]]]:
    """This node's id (None: ask the cluster) and the seeds to join, from the hostfile."""
    net = settings.networking
    if not net.hostfile:
        return (max(net.node_id, 0), [])
    entries = parse_hostfile(net.hostfile, net.port)
    own = [i for i, (h, p) in enumerate(entries) if p == net.port and _same_host(h, net.host)]
    seeds = [e for i, e in enumerate(entries) if i not in own]
    if net.node_id >= 0:
        return net.node_id, seeds
    if own:
        return own[0], seeds
    if induct:
        return None, seeds
    raise SettingsError(
        f"hostfile {net.hostfile} has no entry for {net.host}:{net.port}; add one, or start "
        "with --induct to join and take the next free id"
    )


@dataclass(eq=False)
class Node:
    """A running node. ``request_stop()`` ends it; ``runtime`` is what the dashboard serves."""

    settings: Settings
    runtime: Runtime
    swim: Any = None
    rpc_port: int = 0
    rpc_stats: RpcServerStats = field(default_factory=RpcServerStats)
    stop_requested: trio.Event = field(default_factory=trio.Event)

    @property
    def node_id(self) -> int:
        return self.runtime.node_id

    @property
    def dashboard_url(self) -> str | None:
        if self.runtime.viz_address is None:
            return None
        host, port = self.runtime.viz_address
        return f"http://{host}:{port}"

    def request_stop(self) -> None:
        self.stop_requested.set()

    # -- RPC handlers -----------------------------------------------------------------------

    def handlers(self) -> dict[str, Any]:
        h: dict[str, Any] = {
            "monitor": self._on_monitor,
            "pool_monitor": self._on_pool_monitor,
            "control": self._on_control,
        }
        if self.swim is not None:
            h["swim"] = self.swim.handle_tcp
        return h

    async def _on_monitor(self, msg: dict[str, Any]) -> Any:
        raw = msg.get("params")
        params: dict[str, Any] = raw if isinstance(raw, dict) else {}
        query = str(msg.get("query", ""))
        return await self.runtime.workers.run(
            ADMIN_POOL_ID,
            "monitor",
            0,
            lambda: self.runtime.admin_monitor(query, {str(k): str(v) for k, v in params.items()}),
        )

    async def _on_pool_monitor(self, msg: dict[str, Any]) -> Any:
        pool_id = PoolId.parse(str(msg.get("pool_id", "")))
        raw = msg.get("params")
        params = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
        return await self.runtime.local_pool_monitor(pool_id, str(msg.get("query", "")), params)

    async def _on_control(self, msg: dict[str, Any]) -> Any:
        op = msg.get("op")
        if op == "identity":
            return self.identity()
        if op == "stop":
            self.request_stop()
            return self.identity()
        if op == "faults":
            return self._apply_faults(msg)
        if op == "compose":
            return await self._compose_entries(msg.get("entries"))
        if op == "pools":
            return self.runtime.pools_json()
        if op == "migrate":
            return await self._migrate(str(msg.get("pool_id", "")), msg.get("to"))
        if op == "adopt":
            return await self._adopt(msg)
        raise BadRequest(f"unknown control op {op!r}")

    def identity(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id,
            "pid": os.getpid(),
            "runtime_port": self.rpc_port,
            "dashboard": self.dashboard_url,
        }

    def _apply_faults(self, msg: Mapping[str, Any]) -> dict[str, Any]:
        if self.swim is None:
            raise BadRequest("this node runs no membership layer")
        faults = self.swim.faults
        action = msg.get("action")
        peer = msg.get("peer")
        if action == "loss":
            faults.set_loss(peer, float(msg.get("value", 0)))
        elif action == "delay":
            faults.set_delay(peer, float(msg.get("value", 0)))
        elif action == "block":
            faults.block([int(p) for p in msg.get("peers", [])])
        elif action == "heal":
            faults.heal()
        else:
            raise BadRequest(f"unknown fault action {action!r}")
        return {"ok": True, "node_id": self.node_id, "action": action}

    async def _compose_entries(self, entries: Any) -> dict[str, Any]:
        if not isinstance(entries, list):
            raise BadRequest("compose: expected a list of pool entries")
        return {"results": [await self.runtime.compose_entry(e) for e in entries]}

    async def _migrate(self, pool: str, to: Any) -> dict[str, Any]:
        pool_id = PoolId.parse(pool)
        container = self.runtime.pools.get(pool_id)
        if pool_id == ADMIN_POOL_ID:
            raise BadRequest("the admin pool cannot move")
        target = self.runtime.resolve_node(str(to))
        if target == self.node_id:
            raise BadRequest(f"pool {pool_id} is on node {target} already")
        frame = {
            "k": "control",
            "op": "adopt",
            "mod_name": container.info.mod_name,
            "pool_name": container.info.pool_name,
            "pool_id": str(pool_id),
            "pool_query": container.info.pool_query,
            "state": container.export_state(),
        }
        await self.runtime.call_peer(target, frame, f"adopt {pool_id}")
        await self.runtime.destroy(str(pool_id))
        return {"ok": True, "pool_id": str(pool_id), "to": target}

    async def _adopt(self, msg: Mapping[str, Any]) -> dict[str, Any]:
        raw_state = msg.get("state")
        state: dict[str, Any] = raw_state if isinstance(raw_state, dict) else {}
        raw_config = state.get("config")
        config: dict[str, Any] = raw_config if isinstance(raw_config, dict) else {}
        body = await self.runtime.compose(
            str(msg.get("mod_name", "")),
            str(msg.get("pool_name", "")),
            str(msg.get("pool_id", "")),
            config,
            pool_query=str(msg.get("pool_query", "local")),
        )
        await self.runtime.pools.get(PoolId.parse(body["pool_id"])).import_state(state)
        return body


async def _peer_call(node: Node, member: Any, frame: dict[str, Any], timeout: float) -> Any:
    if node.swim is not None and node.swim.faults.is_blocked(member.node_id):
        await trio.sleep(timeout)  # a partition drops the request: the caller times out
        raise PeerUnavailable(f"node {member.node_id} is cut off")
    return await rpc_call(member.host, member.port, frame, timeout)


def preload() -> None:
    """Import what a node imports lazily (the dashboard), for a parent that forks nodes."""
    if _http_library_missing() is None:
        import dashboard  # noqa: F401


def _http_library_missing() -> str | None:
    for name in ("hypercorn", "quart_trio"):
        try:
            if importlib.util.find_spec(name) is None:
                return name
        except (ImportError, ValueError):
            return name
    return None


async def _start_dashboard(node: Node, nursery: trio.Nursery) -> None:
    viz = node.settings.viz
    missing = _http_library_missing()
    if missing is not None:
        log.warning(
            "Viz: runtime built without the HTTP server library (%s); dashboard absent", missing
        )
        return
    if not viz.enabled:
        return
    import dashboard

    try:
        bound = await nursery.start(dashboard.serve_dashboard, node.runtime, viz)
    except OSError as exc:
        log.warning(
            "Viz: could not listen on %s:%d (%s); dashboard disabled",
            viz.bind,
            viz.port,
            exc.strerror or exc,
        )
        return
    node.runtime.viz_address = (bound[0], bound[1])
    log.info("Viz: dashboard listening at http://%s:%d", bound[0], bound[1])


@asynccontextmanager
async def open_node(
    settings: Settings, *, induct: bool = False, seed: int | None = None
) -> AsyncIterator[Node]:
    """Run a node inside the caller's trio run (the embedded API); yield it once ready.

    An embedded runtime serves no dashboard unless ``settings.viz.enabled`` (load settings
    with ``load_settings("embedded")``, where ``RT_VIZ_ENABLE=1`` turns it on).
    """
    node_id, seeds = resolve_identity(settings, induct)
    net = settings.networking
    node = Node(settings, Runtime(settings, node_id if node_id is not None else -1))
    node.runtime.peer_call = lambda m, f, t: _peer_call(node, m, f, t)
    async with trio.open_nursery() as nursery:
        node.rpc_port = await nursery.start(
            partial(serve_rpc, verbatim=("swim",)),
            net.host,
            net.port,
            _LateHandlers(node),
            node.rpc_stats,
        )
        swim_cm = swim.open_swim(
            swim.SwimConfig.from_mapping(settings.swim),
            node_id=node_id,
            host=net.host,
            port=node.rpc_port,
            seeds=seeds,
            event_log=settings.logging.events or None,
            rng=random.Random(seed),
            induct=induct,
        )
        async with swim_cm as handle:
            node.swim = handle
            node.runtime.node_id = handle.node_id
            set_node_id(handle.node_id)
            node.runtime.membership = handle
            await nursery.start(node.runtime.workers.serve)
            nursery.start_soon(node.runtime.stats.serve_sampling)
            node.runtime.install_admin_pool()
            await startup_compose(node.runtime)
            await _start_dashboard(node, nursery)
            if settings.workload.enabled:
                nursery.start_soon(serve_workload, node.runtime)
            try:
                yield node
            finally:
                with trio.move_on_after(2) as cleanup:
                    cleanup.shield = True
                    await handle.leave()
        nursery.cancel_scope.cancel()


class _LateHandlers(Mapping[str, Any]):
    """RPC handlers looked up per request, so ``swim`` is routed once the handle exists."""

    def __init__(self, node: Node) -> None:
        self._node = node

    def __getitem__(self, key: str) -> Any:
        return self._node.handlers()[key]

    def __iter__(self) -> Any:
        return iter(self._node.handlers())

    def __len__(self) -> int:
        return len(self._node.handlers())


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
            log.info(
                "node %d up: runtime %s:%d (pid %d)",
                node.node_id,
                settings.networking.host,
                node.rpc_port,
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


def run_node(settings: Settings, *, induct: bool = False, seed: int | None = None) -> int:
    """The daemon: configure logging, run the node in the foreground; return an exit status."""
    configure_logging(settings)
    try:
        trio.run(lambda: serve_node(settings, induct=induct, seed=seed))
    except BaseException as exc:
        leaf = _known_leaf(exc)
        if isinstance(leaf, SettingsError):
            log.error("%s", leaf)
            return 2
        if isinstance(leaf, ConnectionError | KeyboardInterrupt):
            log.error("cannot start: %s", leaf)
            return 1
        if isinstance(leaf, OSError):
            log.error(
                "cannot start: runtime port %s:%d: %s",
                settings.networking.host,
                settings.networking.port,
                leaf.strerror or leaf,
            )
            return 1
        raise
    return 0


def _known_leaf(exc: BaseException) -> BaseException | None:
    """The start-up failure a user should read, found inside trio's exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if (leaf := _known_leaf(inner)) is not None:
                return leaf
        return None
    return exc if isinstance(exc, SettingsError | OSError | KeyboardInterrupt) else None
