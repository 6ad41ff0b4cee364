"""The baseline: a bare quart-trio "hello" app on the dashboard's own hypercorn setup.

``python -m bench.api.bare`` binds an ephemeral loopback port, prints ``PORT <n>`` and serves
until terminated.
"""

from __future__ import annotations

import sys
from functools import partial
from typing import Any

import trio
from hypercorn.trio import serve
from quart_trio import QuartTrio

from dashboard.serve import bind_socket, hypercorn_config


def hello_app() -> QuartTrio:
    app = QuartTrio("bare", static_folder=None, template_folder=None)

    @app.get("/hello")
    async def hello() -> dict[str, Any]:
        return {"ok": True}

    return app


async def main() -> None:
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    config = hypercorn_config(sock, 16)
    async with trio.open_nursery() as nursery:
        await nursery.start(partial(serve, hello_app(), config, mode="asgi"))
        print(f"PORT {port}", flush=True)


if __name__ == "__main__":
    try:
        trio.run(main)
    except KeyboardInterrupt:
        sys.exit(0)
