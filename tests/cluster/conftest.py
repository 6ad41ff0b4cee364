from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
import trio

from cluster.runtime.runtime import Runtime
from cluster.settings import load_settings


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    """A network-free runtime with running workers and the admin pool."""
    settings = load_settings("embedded", env={"HOME": str(tmp_path)})
    settings = replace(settings, runtime=replace(settings.runtime, data_dir=str(tmp_path / "data")))
    rt = Runtime(settings, 0)
    async with trio.open_nursery() as nursery:
        await nursery.start(rt.workers.serve)
        rt.install_admin_pool()
        yield rt
        nursery.cancel_scope.cancel()
