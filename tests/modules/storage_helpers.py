"""Helpers of the module tests: a network-less runtime, route calls (waits: tests.support)."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from cluster.runtime import Runtime
from cluster.settings import load_settings


def make_runtime(data_dir: Path) -> Runtime:
    settings = load_settings("embedded", env={})
    settings = dataclasses.replace(
        settings, runtime=dataclasses.replace(settings.runtime, data_dir=str(data_dir))
    )
    return Runtime(settings, 0)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def call_route(
    runtime: Runtime, mod: str, method: str, path: str, params: dict[str, str] | None = None
) -> dict[str, object]:
    """Call a module route the way the dashboard does: ``path`` below /api/mod/<mod>/."""
    from cluster.runtime import RouteCall

    parts = path.split("/")
    for route in runtime.modules[mod].routes():
        pattern = route.path.split("/")
        if route.method != method or len(pattern) != len(parts):
            continue
        args = {p[1:-1]: v for p, v in zip(pattern, parts, strict=True) if p.startswith("{")}
        if all(p.startswith("{") or p == v for p, v in zip(pattern, parts, strict=True)):
            return await route.handler(RouteCall(runtime, params or {}, args))
    raise AssertionError(f"no route {method} {path} in {mod}")
