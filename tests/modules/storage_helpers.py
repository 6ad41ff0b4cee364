"""Helpers of the module tests: a network-less runtime, route calls, arrays (waits:
tests.support)."""

from __future__ import annotations

import hashlib

from cluster.modules.rt_safe_bdev import SafeBdevContainer
from cluster.runtime import Runtime


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def call_route(
    runtime: Runtime, mod: str, method: str, path: str, params: dict[str, str] | None = None
) -> dict[str, object]:
    """Call a module route the way the dashboard does: ``path`` below /api/mod/<mod>/."""
    from cluster.api import RouteCall

    parts = path.split("/")
    for route in runtime.modules[mod].routes():
        pattern = route.path.split("/")
        if route.method != method or len(pattern) != len(parts):
            continue
        args = {p[1:-1]: v for p, v in zip(pattern, parts, strict=True) if p.startswith("{")}
        if all(p.startswith("{") or p == v for p, v in zip(pattern, parts, strict=True)):
            return await route.handler(RouteCall(runtime, params or {}, args))
    raise AssertionError(f"no route {method} {path} in {mod}")


async def make_array(
    runtime: Runtime, data: int, parity: int, name: str = "arr"
) -> SafeBdevContainer:
    names = []
    for i in range(data):
        cfg = {"bdev_type": "ram", "capacity": "256K"}
        await runtime.compose("rt_bdev", f"{name}_d{i}", runtime.suggest_pool_id("rt_bdev"), cfg)
        names.append(f"{name}_d{i}")
    params = {"pool_name": name, "pool_id": runtime.suggest_pool_id("rt_safe_bdev")}
    params |= {"members": ",".join(names), "max_failures": str(parity), "recover_pace_s": "0"}
    body = await call_route(runtime, "rt_safe_bdev", "POST", "create", params)
    assert body["data_members"] == data
    array = runtime.pools.by_name(name)
    assert isinstance(array, SafeBdevContainer)
    return array


def member_ids(array: SafeBdevContainer, role: str) -> list[str]:
    return [m["pool_id"] for m in array.stats()["members"] if m["role"] == role]
