"""The node RPC's ``disk`` fault action (``cluster.node.control``, rule 3) on a node in this
process: it sets an rt_bdev device's fault, the faults answer shows it, ``heal`` clears it,
and every bad field is a 400 that changes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cluster.ground.errors import BadRequest, Conflict
from cluster.ground.settings import load_settings
from cluster.node import Node, open_node
from cluster.rpc import BadFrame, Block, Compose, Faults, Monitor, rpc_call
from cluster.rpc.frames import decode_untrusted
from cluster.runtime import DiskFault

HEALTHY = {"blocked": [], "loss": {}, "delay": {}, "disk": {}, "active": False}


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    settings = load_settings("embedded", env={"HOME": str(tmp_path)}, flags={"port": 0})
    settings = replace(
        settings,
        runtime=replace(settings.runtime, data_dir=str(tmp_path / "data")),
        workload=replace(settings.workload, enabled=False),
    )
    async with open_node(settings, seed=1) as node:
        entry = {"mod_name": "rt_bdev", "pool_name": "m1", "pool_id": "901.0", "capacity": "64K"}
        await rpc_call("127.0.0.1", node.rpc_port, Compose((entry,)), 5)
        yield node


async def call(node: Node, request: Any) -> Any:
    return await rpc_call("127.0.0.1", node.rpc_port, request, 5)


def faults_of(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: answer[k] for k in HEALTHY}


async def test_a_disk_fault_is_set_shown_and_healed(node: Node) -> None:
    assert faults_of(await call(node, Monitor("faults"))) == HEALTHY
    said = await call(node, Faults("disk", pool="m1", latency_ms=0, errors=100))
    assert said == {"ok": True, "node_id": 0, "action": "disk", "pool": "m1"}
    with pytest.raises(Conflict, match=r"^read of block device 901\.0 failed: Input/output"):
        await call(node, Block("m1", "read", 0, 16))
    answer = await call(node, Monitor("faults"))
    assert answer["disk"] == {"m1": {"latency_ms": 0.0, "errors": 100.0, "full": False}}
    assert answer["active"] is True
    view = await call(node, Monitor("view"))
    assert view["faults"]["disk"] == answer["disk"]

    await call(node, Faults("disk", pool="m1", full=True))  # a new fault replaces the old
    assert (await call(node, Monitor("faults")))["disk"] == {
        "m1": {"latency_ms": 0.0, "errors": 0.0, "full": True}
    }
    await call(node, Faults("disk", pool="m1"))  # all zero: cleared
    assert faults_of(await call(node, Monitor("faults"))) == HEALTHY

    await call(node, Faults("disk", pool="m1", latency_ms=5, errors=1))
    await call(node, Faults("loss", None, 10))
    await call(node, Faults("heal"))  # clears the membership's faults and every disk's
    assert faults_of(await call(node, Monitor("faults"))) == HEALTHY
    assert await call(node, Block("m1", "read", 0, 4)) == bytes(4)


HOSTILE: list[tuple[Faults, str]] = [
    (Faults("disk", pool="m9", errors=5), r"no pool named 'm9' on node 0"),
    (Faults("disk", pool="", errors=5), r"no pool named '' on node 0"),
    (Faults("disk", pool="x" * 5000), r"no pool named 'x{80}\.\.\.' on node 0"),
    (Faults("disk", pool="rt_admin", errors=5), r"'rt_admin' \(rt_admin\) is not an rt_bdev"),
    (Faults("disk", pool="m1", latency_ms=-1), r"latency_ms: -1(\.0)? is out of range"),
    (Faults("disk", pool="m1", latency_ms=600_001), r"latency_ms: 600001(\.0)? is out of range"),
    (Faults("disk", pool="m1", latency_ms=1e308), r"latency_ms: 1e\+308 is out of range"),
    (Faults("disk", pool="m1", errors=100.5), r"errors percent: 100\.5 is out of range"),
    (Faults("disk", pool="m1", errors=-0.1), r"errors percent: -0\.1 is out of range"),
]


async def test_bad_disk_faults_are_refused_with_400_and_change_nothing(node: Node) -> None:
    await call(node, Faults("disk", pool="m1", latency_ms=1))
    for request, message in HOSTILE:
        with pytest.raises(BadRequest, match=message):
            await call(node, request)
    device = node.runtime.pools.by_name("m1")
    assert device is not None
    assert device.disk_fault == DiskFault(latency_ms=1)
    assert node.rpc_stats.failed == 0
    with pytest.raises(BadRequest, match=r"unknown fault action 'melt' \(one of: .*disk"):
        await call(node, Faults("melt"))


def test_a_disk_frame_of_the_wrong_types_is_a_bad_frame() -> None:
    base = {"k": "control", "op": "faults", "action": "disk", "pool": "m1"}
    assert decode_untrusted({**base, "full": True}) == Faults("disk", pool="m1", full=True)
    for bad in ({"full": 1}, {"full": "true"}, {"pool": 1}, {"errors": "5"}, {"latency_ms": None}):
        with pytest.raises(BadFrame):
            decode_untrusted({**base, **bad})
