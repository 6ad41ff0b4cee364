"""Every compose config field of every module, given any JSON value: the pool composes, or the
compose is refused with one 400 ``ApiError`` and leaves no pool, extent or task behind."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster.ground.errors import ApiError
from cluster.modules.rt_bdev import BdevContainer
from cluster.runtime import Runtime
from tests.support.runtime import make_runtime

MEMBERS = ("m0", "m1", "m2")
BASE: dict[str, dict[str, Any]] = {
    "rt_bdev": {"bdev_type": "ram", "capacity": "64K", "made_for": "0/950.0/5eed"},
    "rt_safe_bdev": {
        "members": "m0,m1",
        "parity_members": "m2",
        "max_failures": 1,
        "chunk_size": 4096,
        "recover_period_s": 0.2,
        "scrub_period_s": 2.0,
    },
    "rt_cte_core": {"targets": [{"name": "t", "capacity": "64K"}], "rescore_period_s": 1.0},
}
FIELDS = [(mod, key) for mod, cfg in BASE.items() for key in cfg] + [
    ("rt_cte_core", f"targets.0.{key}")
    for key in ("name", "capacity", "bdev_type", "attach_pool_id", "attach_pool_name")
]

TRICKY = st.sampled_from(
    [0, -1, 1, 2, 63, 64, 65, 511, 512, 4096, 1 << 20, (1 << 20) + 1, 1 << 50, 1 << 64, 10**400,
     -(1 << 63), 0.0, 1e-6, 0.01, 0.5, 1.5, 3600.0, 3601.0, 1e308, math.inf, -math.inf, math.nan,
     True, False, None, "", " ", "0", "-1", "1", "01", "1.0", "1e3", "4K", "1P", "2P", "1PB",
     "9" * 5000, "nan", "inf", "١٢", "m0", "m0,m1", "m0,m0", "m2", "arr", "ram", "file", "noop",
     "hbm", "tape", "800.0", "1.0", "0.0", "x", [], {}, ["m0"], ["m0", "m1"], [1, 2], [None],
     [{"name": "t"}], {"name": "t"}, [[["deep"]]]]
)  # fmt: skip
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
VALUES = TRICKY | JSON


def with_value(config: Mapping[str, Any], key: str, value: Any) -> dict[str, Any]:
    out = {k: (list(v) if isinstance(v, list) else v) for k, v in config.items()}
    if key.startswith("targets.0."):
        out["targets"] = [{**out["targets"][0], key.removeprefix("targets.0."): value}]
    else:
        out[key] = value
    return out


def footprint(runtime: Runtime) -> tuple[list[str], list[int], int]:
    """Pool ids, free bytes of the member devices, periodic tasks: what must not change."""
    ids = sorted(str(c.info.pool_id) for c in runtime.pools.all())
    free = [d.remaining_capacity for d in runtime.pools.all() if isinstance(d, BdevContainer)]
    periodic = sum(len(runtime.workers.periodic_of(c.info.pool_id)) for c in runtime.pools.all())
    return ids, free, periodic


async def compose_once(
    data_dir: Path, mod: str, config: dict[str, Any], must_compose: bool = False
) -> None:
    runtime = make_runtime(data_dir)
    async with trio.open_nursery() as nursery:
        await nursery.start(runtime.workers.serve)
        runtime.install_admin_pool()
        for i, name in enumerate(MEMBERS):
            await runtime.compose("rt_bdev", name, f"80{i}.0", {"capacity": "256K"})
        if mod == "rt_cte_core":
            await runtime.compose("rt_safe_bdev", "arr", "850.0", {"members": "m0,m1"})
        before = footprint(runtime)
        refused: ApiError | None = None
        try:
            await runtime.compose(mod, "x", "600.0", config)
        except ApiError as exc:
            refused = exc
        if refused is not None:
            assert not must_compose, refused.message
            assert refused.status == 400, f"{type(refused).__name__}: {refused.message}"
            assert refused.message
            assert footprint(runtime) == before, "a refused compose left something behind"
        else:
            await runtime.destroy("600.0")
            assert footprint(runtime)[:2] == before[:2], "a destroyed pool left something"
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize(("mod", "key"), FIELDS, ids=[f"{m}:{k}" for m, k in FIELDS])
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(value=VALUES)
def test_any_value_of_any_field_composes_or_is_refused_with_400(
    mod: str, key: str, value: Any
) -> None:
    config = with_value(BASE[mod], key, value)
    with tempfile.TemporaryDirectory() as tmp:
        trio.run(compose_once, Path(tmp), mod, config)


def test_the_base_configs_compose() -> None:
    """The sweep's starting points are valid, so each refusal is the swept field's doing."""
    for mod, config in BASE.items():
        with tempfile.TemporaryDirectory() as tmp:
            trio.run(compose_once, Path(tmp), mod, config, True)
