"""Runtimes of several nodes in one trio loop, linked the way the node RPC links them, for tests
of what one node asks of another (arrays over peers' devices) without processes.

    async with linked_runtimes(tmp_path, 4) as nodes:
        await nodes[1].compose("rt_bdev", "m1", "900.0", {"capacity": "256K"})
        nodes.peers[0].hang(2)                      # node 0's calls to node 2 go unanswered
        nodes[0].membership.change(2, "dead")       # ... and node 0 holds it dead

Each runtime has a host table of its own (``FakeMembership``: every node alive) and
``FakePeers`` whose answers are the addressed runtime's own handlers, as the node's RPC server
would call them (``cluster.node.control``): the request travels as the RPC's frame (msgpack,
decoded by ``cluster.rpc.decode_untrusted``), the answer as msgpack, and a refusal comes back
as the class its status maps to on the RPC client (a ``ValidationFailed`` as a
``BadRequest``). Every call is bounded by that ``FakePeers``' ``timeout``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import trio

from cluster.ground.errors import (
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
    PeerUnavailable,
)
from cluster.rpc import Block, Compose, Monitor, decode_untrusted
from cluster.runtime import Runtime
from cluster.runtime.testing import FakeMembership, FakePeers

from .runtime import make_runtime

__all__ = ["Linked", "linked_runtimes"]

JSON = dict[str, Any]
AS_SENT: tuple[type[ApiError], ...] = (NotFound, Conflict, Forbidden, PeerUnavailable, BadRequest)


@dataclass
class Linked:
    """The runtimes of nodes ``0..n-1`` (``nodes[i]``) and the peers each asks through."""

    runtimes: list[Runtime]
    peers: list[FakePeers]

    def __getitem__(self, node_id: int) -> Runtime:
        return self.runtimes[node_id]


def _wire(value: Any) -> Any:
    """``value`` as the other side of a msgpack link reads it."""
    return msgpack.unpackb(msgpack.packb(value, use_bin_type=True), raw=False)


def _as_sent(exc: ApiError) -> ApiError:
    """``exc`` as the RPC client raises it: the class of its status, its message."""
    for kind in AS_SENT:
        if isinstance(exc, kind):
            return kind(exc.message)
    return ApiError(exc.message)


async def _serve(target: Runtime, request: JSON) -> Any:
    """What node ``target`` answers ``request`` (a frame's map), as its RPC server would."""
    frame = decode_untrusted(_wire(request))
    try:
        if isinstance(frame, Block):
            answer = await target.local_block(frame)
        elif isinstance(frame, Compose):
            answer = {"results": [await target.compose_entry(e) for e in frame.entries]}
        elif isinstance(frame, Monitor):
            answer = await target.run_admin_monitor(frame.query, frame.params)
        else:
            raise AssertionError(f"linked runtimes do not carry {type(frame).__name__}")
    except ApiError as exc:
        raise _as_sent(exc) from None
    return _wire(answer)


@asynccontextmanager
async def linked_runtimes(root: Path, count: int) -> AsyncIterator[Linked]:
    """``count`` runtimes (data under ``root/n<i>``), workers served and admin pools in,
    each reaching the others through its ``FakePeers``; until the block ends."""
    runtimes = []
    for i in range(count):
        membership = FakeMembership.of(count)
        membership.observer = i
        runtimes.append(make_runtime(root / f"n{i}", i, membership))

    def answer(node_id: int, request: JSON) -> Any:
        return _serve(runtimes[node_id], request)

    peers = [FakePeers(rt, answer) for rt in runtimes]
    async with trio.open_nursery() as nursery:
        for rt in runtimes:
            await nursery.start(rt.workers.serve)
            rt.install_admin_pool()
        yield Linked(runtimes, peers)
        nursery.cancel_scope.cancel()
