"""Test and benchmark helpers: a TCP listener for a handle, a member with its listener, and a
one-node process.

``serve_member(config, node_id, seeds)`` runs one member on loopback with its TCP listener on
the same port number (a free UDP port whose TCP twin is taken is given up for another), reports
its handle when both are bound, and runs until cancelled.

``serve_tcp_for(handle, host, port)`` does for tests what the node's RPC listener does in
production: it reads length-prefixed msgpack frames and routes kind ``"swim"`` to
``handle.handle_tcp``. It also answers kind ``"stats"`` (members and statistics), which the
multi-process tests and the benchmark poll.

``python -m swim.testing --id 0 --port 0 [--seed host:port ...] [--event-log path]
[--config '{"probe_interval": 1.0}']`` runs one member until SIGTERM/SIGINT, printing
``READY <node_id> <host> <port>`` once its UDP socket and TCP listener are bound.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from .config import SwimConfig
from .driver import SwimHandle, open_swim
from .framing import FrameError, recv_frame, send_frame

__all__ = ["main", "query", "serve_member", "serve_tcp_for"]

log = logging.getLogger(__name__)


async def _serve_conn(handle: SwimHandle, stream: trio.SocketStream) -> None:
    async with stream:
        try:
            while True:
                msg = await recv_frame(stream, handle.config.max_frame_bytes)
                if msg is None:
                    return
                kind = msg.get("k")
                if kind == "swim":
                    reply = await handle.handle_tcp(msg)
                elif kind == "stats":
                    reply = {
                        "k": "stats",
                        "ok": True,
                        "node_id": handle.node_id,
                        "leader": handle.leader_id(),
                        "members": [
                            [m.node_id, m.host, m.port, m.state.value, m.incarnation]
                            for m in handle.members()
                        ],
                        "statistics": handle.statistics().as_dict(),
                    }
                else:
                    reply = {"ok": False, "error": f"unknown kind {kind!r:.40}"}
                await send_frame(stream, reply)
        except (FrameError, trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            handle.machine.counters.drop("tcp_frame_error")


async def serve_tcp_for(
    handle: SwimHandle,
    host: str,
    port: int,
    *,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``handle``'s TCP side on host:port forever; reports the bound port when started."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound = int(listeners[0].socket.getsockname()[1])
    async with trio.open_nursery() as nursery:
        task_status.started(bound)
        for listener in listeners:
            nursery.start_soon(trio.serve_listeners, _bind(handle), [listener])


async def serve_member(
    config: SwimConfig,
    node_id: int,
    seeds: Sequence[tuple[str, int]],
    *,
    event_log: str | Path | None = None,
    host: str = "127.0.0.1",
    task_status: trio.TaskStatus[SwimHandle] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Member ``node_id`` (seeded ``random.Random(node_id)``) with its TCP listener, until
    cancelled; ``RuntimeError`` when 20 free UDP ports in a row had their TCP twin taken."""
    for _attempt in range(20):
        async with (
            open_swim(
                config,
                node_id=node_id,
                host=host,
                port=0,
                seeds=list(seeds),
                event_log=event_log,
                rng=random.Random(node_id),
            ) as handle,
            trio.open_nursery() as nursery,
        ):
            try:
                await nursery.start(serve_tcp_for, handle, host, handle.port)
            except OSError:
                nursery.cancel_scope.cancel()
                continue
            task_status.started(handle)
            await trio.sleep_forever()
    raise RuntimeError("no free UDP+TCP port pair")


def _bind(handle: SwimHandle) -> Any:
    async def handler(stream: trio.SocketStream) -> None:
        await _serve_conn(handle, stream)

    return handler


async def query(host: str, port: int, msg: dict[str, Any], timeout: float = 5.0) -> Any:
    """Send one frame to host:port and return the reply (None on any failure)."""
    with trio.move_on_after(timeout):
        try:
            stream = await trio.open_tcp_stream(host, port)
            async with stream:
                await send_frame(stream, msg)
                return await recv_frame(stream, 64 << 20)
        except (OSError, FrameError, trio.BrokenResourceError):
            return None
    return None


async def _run_node(args: argparse.Namespace) -> None:
    config = SwimConfig.from_mapping(json.loads(args.config)) if args.config else SwimConfig()
    for _attempt in range(20 if args.port == 0 else 1):
        async with (
            open_swim(
                config,
                node_id=args.id,
                host=args.host,
                port=args.port,
                seeds=args.seed,
                event_log=args.event_log,
                induct=args.id is None,
            ) as handle,
            trio.open_nursery() as nursery,
        ):
            try:
                await nursery.start(serve_tcp_for, handle, args.host, handle.port)
            except OSError:  # the TCP twin of a free UDP port was taken: try another
                if args.port != 0:
                    raise
                nursery.cancel_scope.cancel()
                continue
            print(f"READY {handle.node_id} {handle.host} {handle.port}", flush=True)
            await trio.sleep(math.inf)
    raise SystemExit("no free UDP+TCP port pair")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m swim.testing", description=__doc__)
    parser.add_argument("--id", type=int, default=None, help="node id (omit to induct)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--seed", action="append", default=[], help="host:port, repeatable")
    parser.add_argument("--event-log", default=None)
    parser.add_argument("--config", default=None, help="JSON mapping of swim settings")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format=f"node {args.id}: %(message)s")
    try:
        trio.run(_run_node, args)
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
