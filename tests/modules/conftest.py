"""A runtime without network for module tests: workers served, admin pool in, tmp data dir."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from cluster.runtime import Runtime
from cluster.settings import load_settings


def make_runtime(data_dir: Path) -> Runtime:
    settings = load_settings("embedded", env={})
    settings = dataclasses.replace(
        settings, runtime=dataclasses.replace(settings.runtime, data_dir=str(data_dir))
    )
    return Runtime(settings, 0)


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    r = make_runtime(tmp_path / "data")
    async with trio.open_nursery() as nursery:
        await nursery.start(r.workers.serve)
        r.install_admin_pool()
        yield r
        nursery.cancel_scope.cancel()


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
