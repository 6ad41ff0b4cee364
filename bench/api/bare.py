"""The baseline: a bare quart-trio app on the dashboard's own hypercorn setup.

``python -m bench.api.bare`` binds an ephemeral loopback port, prints ``PORT <n>`` and serves
until terminated. It answers ``GET /api/health`` with a body of the same shape and size as a
node's (``ok``, ``node_id``, ``hostname``, ``ip_address``, ``is_leader``), built per request
from plain values, so the comparison with a node is the HTTP layer's cost and nothing else:
no Host check, admission, metrics, security headers or blueprint. ``/hello`` answers
``{"ok": true}`` (the older baseline).
"""

from __future__ import annotations

import socket
import sys
from functools import partial
from typing import Any

import trio
from hypercorn.trio import serve
from quart_trio import QuartTrio

from dashboard.serve import bind_socket, hypercorn_config

MAX_THREADS = 16  # a node's default viz.max_threads: the same hypercorn backlog


def bare_app() -> QuartTrio:
    app = QuartTrio("bare", static_folder=None, template_folder=None)
    hostname = socket.gethostname()

    @app.get("/api/health")
    async def health() -> dict[str, Any]:
        return {"ok": True, "node_id": 0, "hostname": hostname, "ip_address": "127.0.0.1",
                "is_leader": True}  # fmt: skip

    @app.get("/hello")
    async def hello() -> dict[str, Any]:
        return {"ok": True}

    return app


async def main() -> None:
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    config = hypercorn_config(sock, MAX_THREADS)
    async with trio.open_nursery() as nursery:
        await nursery.start(partial(serve, bare_app(), config, mode="asgi"))
        print(f"PORT {port}", flush=True)


if __name__ == "__main__":
    try:
        trio.run(main)
    except KeyboardInterrupt:
        sys.exit(0)
