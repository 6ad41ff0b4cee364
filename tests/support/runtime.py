"""A runtime without network, for tests of the runtime, its modules and the dashboard over it."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from cluster.ground.settings import load_settings
from cluster.runtime import Membership, Runtime

__all__ = ["make_runtime", "serving_runtime"]


def make_runtime(data_dir: Path, node_id: int = 0, membership: Membership | None = None) -> Runtime:
    """Node ``node_id``'s runtime on the embedded settings, its data under ``data_dir``;
    nothing runs."""
    settings = load_settings("embedded", env={"HOME": str(data_dir.parent)})
    runtime = dataclasses.replace(settings.runtime, data_dir=str(data_dir))
    return Runtime(dataclasses.replace(settings, runtime=runtime), node_id, membership)


@asynccontextmanager
async def serving_runtime(data_dir: Path) -> AsyncIterator[Runtime]:
    """``make_runtime`` with its workers served and the admin pool in, until the block ends."""
    rt = make_runtime(data_dir)
    async with trio.open_nursery() as nursery:
        await nursery.start(rt.workers.serve)
        rt.install_admin_pool()
        yield rt
        nursery.cancel_scope.cancel()
