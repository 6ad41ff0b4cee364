"""Serving: bind the dashboard's port, then run the app on hypercorn's trio worker.

Rules:
1. The socket is bound here, before anything else, so a taken port is a plain ``OSError``
   out of ``nursery.start`` (the node logs the warning and runs on) and port 0 is an ephemeral
   port whose number is known before the app is built.
2. ``task_status.started((bind_host, bound_port))`` once hypercorn accepts connections.
3. hypercorn logs through ``logging`` (logger ``dashboard.http``); no access log.
"""

from __future__ import annotations

import logging
import socket
from dataclasses import replace
from functools import partial

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from cluster.runtime import RuntimeView
from cluster.settings import VizSettings

from .app import create_app

__all__ = ["bind_socket", "hypercorn_config", "serve_dashboard"]

log = logging.getLogger(__name__)
# hypercorn's own lines ("Running on ...") repeat the node's start line; keep its warnings.
_HTTP_LOG = logging.getLogger("dashboard.http")
_HTTP_LOG.setLevel(logging.WARNING)


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
    config.keep_alive_timeout = 5.0
    config.graceful_timeout = 1.0
    return config


async def serve_dashboard(
    runtime: RuntimeView,
    viz_settings: VizSettings,
    *,
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the dashboard of ``runtime`` until cancelled; report ``(bind, port)`` when ready."""
    sock = bind_socket(viz_settings.bind, viz_settings.port)
    try:
        bound_port = int(sock.getsockname()[1])
        app = create_app(runtime, replace(viz_settings, port=bound_port))
        config = hypercorn_config(sock, viz_settings.max_threads)
    except BaseException:
        sock.close()
        raise
    async with trio.open_nursery() as nursery:
        await nursery.start(partial(serve, app, config, mode="asgi"))
        task_status.started((viz_settings.bind, bound_port))
