"""A runtime without network for module tests: workers served, admin pool in, tmp data dir."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from storage_helpers import make_runtime

from cluster.runtime import Runtime


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    r = make_runtime(tmp_path / "data")
    async with trio.open_nursery() as nursery:
        await nursery.start(r.workers.serve)
        r.install_admin_pool()
        yield r
        nursery.cancel_scope.cancel()
