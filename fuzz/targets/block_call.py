"""Target ``block_call``: one node RPC frame body served as a peer's block call on this node's
devices (``Runtime.local_block``, ``cluster.modules.remote.serve_block``).

Each input is served on a node of its own, holding three ``rt_bdev`` devices of 64 KiB:
``lent`` (900.0, made for the array ``OWNER`` and holding one allocation), ``spare`` (901.0,
made for ``OWNER``, free) and ``plain`` (902.0, made for no array). Promises checked:

- a call raises only ``ApiError`` (its refusal), never another exception (``remote`` rule 1);
- a ``destroy`` takes a device away only when the call's writer is the one it was made for and
  nothing is allocated on it (``remote`` rule 6): only ``spare``, only for ``OWNER``; every
  other call leaves the pool table as it was, and a refused call leaves the devices'
  allocations as they were.

The node's settings are read once per process from an empty home that is removed at once (its
devices are in memory, so nothing is written there); its clock is trio's ``MockClock``.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any

import trio
import trio.testing

from cluster.ground.errors import ApiError
from cluster.ground.ids import PoolId
from cluster.ground.settings import Settings, load_settings
from cluster.modules.rt_bdev import BdevContainer
from cluster.rpc import frames
from cluster.rpc.frames import BadFrame
from cluster.runtime import Runtime

from ..mutators import msgpack_mutator

custom_mutator = msgpack_mutator("block_call")

OWNER = "0/950.0/5eed1e55"
DEVICES = (("lent", "900.0", OWNER), ("spare", "901.0", OWNER), ("plain", "902.0", None))
_SETTINGS: list[Settings] = []


def _node() -> Runtime:
    """A node of its own for one input (the settings are read at the first input)."""
    if not _SETTINGS:
        # Read from an empty home, taken away at once: the devices are all in memory, so
        # nothing is ever written under it, and no process leaves a folder behind.
        home = Path(tempfile.mkdtemp(prefix="fuzz-block-call-"))
        try:
            settings = load_settings("embedded", env={"HOME": str(home)})
        finally:
            home.rmdir()
        runtime = dataclasses.replace(settings.runtime, data_dir=str(home / "data"))
        _SETTINGS.append(dataclasses.replace(settings, runtime=runtime))
    node = Runtime(_SETTINGS[0], 0)
    node.install_admin_pool()
    return node


def _state(node: Runtime) -> dict[str, Any]:
    """The pool table, and each device's free runs."""
    return {
        str(c.info.pool_id): c.allocator.free_runs() if isinstance(c, BdevContainer) else None
        for c in node.pools.all()
    }


async def _serve(request: frames.Block) -> bool:
    node = _node()
    async with trio.open_nursery() as nursery:
        await nursery.start(node.workers.serve)
        for name, pool_id, owner in DEVICES:
            config = {"bdev_type": "ram", "capacity": "64K"}
            if owner is not None:
                config["made_for"] = owner
            await node.compose("rt_bdev", name, pool_id, config)
        lent = node.pools.get(PoolId.parse("900.0"))
        assert isinstance(lent, BdevContainer)
        await lent.allocate(4096)
        before = _state(node)
        try:
            await node.local_block(request)
            accepted = True
        except ApiError:
            accepted = False
            assert _state(node) == before, (request, before, _state(node))
        gone = set(before) - set(_state(node))
        if gone:
            assert gone == {"901.0"}, (request, gone)
            assert (request.op, request.writer) == ("destroy", OWNER), request
        for pool_id in set(_state(node)) - {"1.0"}:
            await node.destroy(pool_id)  # their stores go with them
        nursery.cancel_scope.cancel()
    return accepted


def test_one_input(data: bytes) -> bool:
    """True when ``data`` is a block call the node served."""
    try:
        request = frames.decode_frame(data).request
    except BadFrame:
        return False
    if not isinstance(request, frames.Block):
        return False
    accepted: bool = trio.run(_serve, request, clock=trio.testing.MockClock(autojump_threshold=0))
    return accepted
