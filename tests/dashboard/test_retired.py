"""Routes of the retired standalone dashboard: 404 naming the replacement."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import call


@pytest.mark.parametrize(
    ("method", "path", "replacement"),
    [
        ("GET", "/api/node/3/workers", "GET /api/nodes/3/workers"),
        ("GET", "/api/node/3/system_stats", "GET /api/nodes/3/system_stats"),
        ("GET", "/api/node/1/bdev_stats", "GET /api/nodes/1/bdevs"),
        ("GET", "/api/system", "GET /api/nodes/local/workers; GET /api/health for liveness"),
        ("GET", "/api/workers", "GET /api/nodes/local/workers; GET /api/health for liveness"),
        ("POST", "/api/topology/node/2/shutdown", "none; use `rt_run stop` or `rt_run restart`"),
        ("POST", "/api/topology/node/2/restart", "none; use `rt_run stop` or `rt_run restart`"),
    ],
)
async def test_retired_route_names_replacement(
    client: Any, method: str, path: str, replacement: str
) -> None:
    status, body, _ = await call(client, method, path)
    assert status == 404
    assert body["error"].startswith(f"retired route {method} {path}: replaced by {replacement}")
    assert list(body) == ["error"]


async def test_retired_shutdown_does_nothing(client: Any) -> None:
    await call(client, "POST", "/api/topology/node/0/shutdown")
    status, _, _ = await call(client, "GET", "/api/health")
    assert status == 200
