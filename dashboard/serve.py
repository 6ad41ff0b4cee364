"""Serving: bind the dashboard's port, then run the app on hypercorn's trio worker.

Rules:
1. The socket is bound here, before anything else, so a taken port is a plain ``OSError``
   out of ``nursery.start`` (the node logs the warning and runs on) and port 0 is an ephemeral
   port whose number is known before the app is built.
2. ``task_status.started((bind_host, bound_port))`` once hypercorn accepts connections.
3. hypercorn logs through ``logging`` (logger ``dashboard.http``); no access log.
4. Every connection is bounded in time and size before the app sees it: request headers must
   arrive within ``KEEP_ALIVE`` seconds of the connection opening (or of the previous answer:
   hypercorn's idle timer); a head still incomplete past ``MAX_HEADERS`` bytes is refused by
   h11 (431, and closed); a connection from which nothing arrives for ``READ_TIMEOUT``
   seconds is closed. ``dashboard.intake`` bounds complete heads (414, 431) and bodies (413,
   408) with ``{"error": ...}`` answers.
5. Out of file descriptors, the accept loop (trio's ``serve_listeners``) logs and retries
   every 0.1 s instead of failing; handlers answer 503 (``dashboard.errors``).
6. What h11 refuses before the app runs (400, 431, 501) is answered ``{"error": ...}`` too,
   and a close racing the app's last write is no error (``dashboard.connection``, installed
   into hypercorn before serving).
7. The ASGI lifespan is answered here, not by the app, which is built on first use
   (``dashboard.app`` rule 7): its nursery is the app's once built, and an app built and
   started is shut down (``QuartTrio.shutdown``) when serving ends.
8. ``in_memory`` is the same app with no server and no socket: the whole-node simulator
   (``cluster.sim``) sends its requests to the ASGI callable it yields.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from functools import partial
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from cluster.ground.settings import VizSettings
from cluster.runtime import RuntimeView

from . import connection
from .app import Dashboard
from .intake import MAX_HEADERS

__all__ = ["bind_socket", "hypercorn_config", "in_memory", "serve_dashboard"]

log = logging.getLogger(__name__)
# hypercorn's own lines ("Running on ...") repeat the node's start line; keep its warnings.
_HTTP_LOG = logging.getLogger("dashboard.http")
_HTTP_LOG.setLevel(logging.WARNING)
KEEP_ALIVE = 5.0  # seconds: idle connection, or headers of the next request still arriving
READ_TIMEOUT = 60  # seconds without a byte from the client (longer than any request runs)


def bind_socket(host: str, port: int, backlog: int = 128) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0: ephemeral); raises OSError when taken."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(address)
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    return sock


def hypercorn_config(sock: socket.socket, max_threads: int) -> Config:
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]  # hypercorn owns the descriptor from here on
    config.backlog = max(128, 8 * max_threads)
    config.accesslog = None
    config.errorlog = _HTTP_LOG
    config.include_server_header = False
    config.keep_alive_timeout = KEEP_ALIVE
    config.h11_max_incomplete_size = MAX_HEADERS
    config.read_timeout = READ_TIMEOUT
    config.graceful_timeout = 1.0
    return config


async def serve_dashboard(
    runtime: RuntimeView,
    viz_settings: VizSettings,
    *,
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the dashboard of ``runtime`` until cancelled; report ``(bind, port)`` when ready."""
    try:
        connection.install()
    except RuntimeError as exc:  # another hypercorn: serve with its own bare refusals
        log.warning("Viz: %s; malformed HTTP gets hypercorn's own empty answers", exc)
    sock = bind_socket(viz_settings.bind, viz_settings.port)
    try:
        bound_port = int(sock.getsockname()[1])
        dashboard = Dashboard(runtime, replace(viz_settings, port=bound_port))
        config = hypercorn_config(sock, viz_settings.max_threads)
    except BaseException:
        sock.close()
        raise
    async with trio.open_nursery() as nursery:
        await nursery.start(partial(serve, _Served(dashboard), config, mode="asgi"))
        task_status.started((viz_settings.bind, bound_port))


class _Served:
    """What hypercorn runs: the lifespan here (rule 7), the rest through the dashboard."""

    def __init__(self, dashboard: Dashboard) -> None:
        self.dashboard = dashboard

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await self.dashboard.asgi(scope, receive, send)
            return
        async with trio.open_nursery() as nursery:
            self.dashboard.nursery = nursery
            while True:
                event = await receive()
                if event["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif event["type"] == "lifespan.shutdown":
                    if self.dashboard.started:
                        await self.dashboard.app.shutdown()
                    await send({"type": "lifespan.shutdown.complete"})
                    nursery.cancel_scope.cancel()
                    return


@asynccontextmanager
async def in_memory(runtime: RuntimeView, viz_settings: VizSettings) -> AsyncIterator[Any]:
    """Rule 8: the dashboard's ASGI callable, served by nothing but its caller, until exit."""
    dashboard = Dashboard(runtime, viz_settings)
    async with trio.open_nursery() as nursery:
        dashboard.nursery = nursery
        try:
            yield dashboard.asgi
        finally:
            if dashboard.started:
                with trio.CancelScope(shield=True):
                    await dashboard.app.shutdown()
            nursery.cancel_scope.cancel()
