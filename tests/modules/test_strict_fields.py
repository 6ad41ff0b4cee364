"""Module route fields are read as written: booleans by ``RouteCall.flag``, pool ids by
``PoolId.parse``, sizes and numbers by ``cluster.ground.parse``; nothing is stripped. Each refused
case here was accepted before (the hostile-input suite's findings) and must change nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

import pytest
from storage_helpers import call_route, make_array, member_ids

from cluster.ground.errors import BadRequest, NotFound, ValidationFailed
from cluster.modules.rt_cte_core import CteCoreContainer
from cluster.runtime import Runtime

E = TypeVar("E", bound=BaseException)


def snapshot(runtime: Runtime) -> str:
    """What a refused request may not change: the pool table and every pool's own view."""
    own = [c.stats() for c in runtime.containers() if c.info.mod_name != "rt_admin"]
    return json.dumps([runtime.pools_json(), own], sort_keys=True, default=str)


@contextmanager
def refused(
    runtime: Runtime, kind: type[E], match: str | None = None
) -> Iterator[pytest.ExceptionInfo[E]]:
    """The block raises ``kind`` (matching ``match``) and changes nothing of ``snapshot``."""
    before = snapshot(runtime)
    with pytest.raises(kind, match=match) as info:
        yield info
    assert snapshot(runtime) == before


async def make_core(runtime: Runtime) -> CteCoreContainer:
    await runtime.compose("rt_cte_core", "core", "700.0", {})
    core = runtime.pools.by_name("core")
    assert isinstance(core, CteCoreContainer)
    await call_route(
        runtime, "rt_cte_core", "POST", "700.0/register_target", {"name": "t", "capacity": "64K"}
    )
    return core


# -- rt_safe_bdev: flags and member fields ----------------------------------------------------


@pytest.mark.parametrize("value", ["maybe", "2", " 1", "1 ", "yes!", "\uff11", "-1", "nan"])
async def test_remove_member_refuses_a_flag_that_is_no_boolean(
    runtime: Runtime, value: str
) -> None:
    # Before, was_faulty=maybe was read as false and the member was removed.
    array = await make_array(runtime, 2, 1)
    with refused(runtime, BadRequest, "was_faulty: expected one of true/1/yes/on"):
        await call_route(
            runtime, "rt_safe_bdev", "POST", f"{array.info.pool_id}/remove_member",
            {"member_pool_id": member_ids(array, "data")[0], "was_faulty": value},
        )  # fmt: skip


@pytest.mark.parametrize(
    ("value", "state"),
    [("true", "faulty"), ("YES", "faulty"), ("on", "faulty"), ("1", "faulty"),
     ("false", "removed"), ("0", "removed"), ("Off", "removed"), ("", "removed")],
)  # fmt: skip
async def test_remove_member_flag_spellings(runtime: Runtime, value: str, state: str) -> None:
    array = await make_array(runtime, 2, 1)
    member = member_ids(array, "data")[0]
    await call_route(
        runtime, "rt_safe_bdev", "POST", f"{array.info.pool_id}/remove_member",
        {"member_pool_id": member, "was_faulty": value},
    )  # fmt: skip
    states = {m["pool_id"]: m["state"] for m in array.stats()["members"]}
    assert states[member] == state


@pytest.mark.parametrize(
    "params",
    [
        {"member_name": "n", "capacity": "256K", "as_parity": "2"},
        {"member_name": "n", "capacity": "256K", "as_parity": "maybe"},
    ],
)
async def test_add_member_refuses_a_bad_as_parity(runtime: Runtime, params: dict[str, str]) -> None:
    array = await make_array(runtime, 2, 1)
    with refused(runtime, BadRequest, "as_parity: expected one of"):
        await call_route(
            runtime, "rt_safe_bdev", "POST", f"{array.info.pool_id}/add_member", params
        )


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"member_name": " arr_extra", "capacity": "256K"}, "member_name"),
        ({"member_name": "m" * 65, "capacity": "256K"}, "member_name"),
        ({"member_name": "a\x00b", "capacity": "256K"}, "member_name"),
        ({"member_name": "n", "capacity": " 256K"}, "capacity"),
        ({"member_name": "n", "capacity": "\uff12\uff15\uff16K"}, "capacity"),
        ({"member_name": "n", "capacity": "256_0K"}, "capacity"),
        ({"member_name": "n", "capacity": "256K", "node_id": " 0"}, "node_id"),
        ({"member_name": "n", "capacity": "256K", "node_id": "-5"}, "node_id"),
        ({"member_name": "n", "capacity": "256K", "node_id": "\u0660"}, "node_id"),
    ],
)
async def test_add_member_fields_are_read_as_written(
    runtime: Runtime, params: dict[str, str], field: str
) -> None:
    # Before, every field was stripped: " 256K" was 256K and " 0" this node.
    array = await make_array(runtime, 2, 1)
    await runtime.compose("rt_bdev", "arr_extra", "899.0", {"capacity": "256K"})
    with refused(runtime, ValidationFailed) as info:
        await call_route(
            runtime, "rt_safe_bdev", "POST", f"{array.info.pool_id}/add_member",
            {**params, "as_parity": "1"},
        )  # fmt: skip
    assert list(info.value.errors) == [field]


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"members": "b0,b1", "max_failures": " 1"}, "max_failures"),
        ({"members": "b0,b1", "max_failures": "\u0661"}, "max_failures"),
        ({"members": "b0,b1", "chunk_size": " 4K"}, "chunk_size"),
        ({"members": "b0,b1", "chunk_size": 4096.0}, "chunk_size"),
    ],
)
async def test_array_parameters_are_read_as_written(
    runtime: Runtime, config: dict[str, object], field: str
) -> None:
    for i in range(2):
        await runtime.compose("rt_bdev", f"b{i}", f"80{i}.0", {"capacity": "64K"})
    with refused(runtime, ValidationFailed) as info:
        await runtime.compose("rt_safe_bdev", "arr", "850.0", config)
    assert list(info.value.errors) == [field]


# -- rt_bdev: capacity ------------------------------------------------------------------------


@pytest.mark.parametrize("capacity", [" 16K", "16K ", "16 K", "\uff11\uff16K", "1_6K", "+16K"])
async def test_a_capacity_is_read_as_written(runtime: Runtime, capacity: str) -> None:
    with refused(runtime, ValidationFailed) as info:
        await call_route(
            runtime, "rt_bdev", "POST", "create",
            {"pool_name": "b", "pool_id": "800.0", "capacity": capacity},
        )  # fmt: skip
    assert info.value.errors == {"capacity": f"unparseable size '{capacity}'"}


# -- rt_cte_core: targets and monitor queries -------------------------------------------------


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"name": "u", "attach_pool_id": " 800.0 "}, "attach_pool_id"),
        ({"name": "u", "attach_pool_id": "800.0 "}, "attach_pool_id"),
        ({"name": "u", "attach_pool_id": "\u0668\u0660\u0660.0"}, "attach_pool_id"),
        ({"name": " u", "attach_pool_id": "800.0"}, "name"),
        ({"name": "u\x00", "attach_pool_id": "800.0"}, "name"),
        ({"name": "u" * 65, "attach_pool_id": "800.0"}, "name"),
        ({"name": "u" * 60, "capacity": "16K"}, "name"),  # its device, core_uuu..., is too long
        ({"name": "u", "capacity": " 16K"}, "capacity"),
    ],
)
async def test_register_target_fields_are_read_as_written(
    runtime: Runtime, params: dict[str, str], field: str
) -> None:
    # Before, attach_pool_id " 800.0 " was stripped and attached pool 800.0.
    core = await make_core(runtime)
    await runtime.compose("rt_bdev", "b", "800.0", {"capacity": "64K"})
    with refused(runtime, ValidationFailed) as info:
        await call_route(
            runtime, "rt_cte_core", "POST", f"{core.info.pool_id}/register_target", params
        )
    assert list(info.value.errors) == [field]


async def test_unregister_does_not_strip_the_name(runtime: Runtime) -> None:
    core = await make_core(runtime)
    for name in (" t", "t "):  # before, stripped to "t": that target was unregistered
        with refused(runtime, NotFound, "no target named"):
            await call_route(
                runtime, "rt_cte_core", "POST", f"{core.info.pool_id}/unregister_target",
                {"name": name},
            )  # fmt: skip
    assert list(core.targets) == ["t"]


@pytest.mark.parametrize(
    "query",
    [
        "put:hz/a:\uff11",  # a full-width one: str.isdigit() accepted it
        "put:hz/a:\u0661",
        "put:hz/a:1_0",
        "put:hz/a:+1",
        "put:hz/a: 1",
        "put:hz/a:-1",
        "put:hz/a:01",
        "put:hz/a:1e3",
        f"put:hz/a:{(64 << 20) + 1}",
        "put:hz/a:" + "9" * 5000,
        "put:hz/" + "n" * 256 + ":1",
        "put:" + "t" * 256 + "/a:1",
        "put:hz/a\x00:1",
        "get:hz/" + "n" * 5000,
        "put::",
    ],
    ids=lambda q: repr(q[:24]),
)
async def test_monitor_put_is_strict(runtime: Runtime, query: str) -> None:
    core = await make_core(runtime)
    with refused(runtime, BadRequest):
        await core.monitor(query, {})


async def test_monitor_put_takes_canonical_sizes(runtime: Runtime) -> None:
    core = await make_core(runtime)
    for size in ("0", "1", "4096"):
        body = await core.monitor(f"put:hz/a{size}:{size}", {})
        assert body["size"] == int(size)
