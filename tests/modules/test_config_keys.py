"""Module parameters: a key the module does not read is refused (400, naming the key and the
known ones), in one check for every module (``Module.config_keys``); a parameter given as YAML
text is blamed at the line and column its key was written; start-up compose still works."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import trio
from test_config_sweep import BASE

from cluster.ground.errors import ValidationFailed
from cluster.ground.settings import parse_settings_text
from cluster.runtime import Runtime, startup_compose

KNOWN = {
    "rt_bdev": "bdev_type, capacity, made_for",
    "rt_safe_bdev": "members, parity_members, max_failures, chunk_size, recover_period_s, "
    "scrub_period_s, recover_pace_s, auto_replace_after_s",
    "rt_cte_core": "targets, rescore_period_s",
}


async def test_every_key_a_module_reads_is_declared(runtime: Runtime) -> None:
    # BASE (the config sweep) sets every parameter each module reads
    for mod, config in BASE.items():
        keys = runtime.modules[mod].config_keys
        assert keys is not None
        assert set(config) <= set(keys), mod
    assert set(runtime.modules["rt_safe_bdev"].config_keys or ()) - set(BASE["rt_safe_bdev"]) == {
        "recover_pace_s",
        "auto_replace_after_s",
    }


@pytest.mark.parametrize("mod", sorted(KNOWN))
async def test_an_unknown_key_is_a_400_naming_it_and_the_known_keys(
    runtime: Runtime, mod: str
) -> None:
    for i in range(3):
        await runtime.compose("rt_bdev", f"m{i}", f"80{i}.0", {"capacity": "256K"})
    before = sorted(str(c.info.pool_id) for c in runtime.pools.all())
    config = {**BASE[mod], "capacty": "1M"}
    with pytest.raises(ValidationFailed) as info:
        await runtime.compose(mod, "x", "600.0", config)
    assert info.value.status == 400
    assert info.value.errors == {
        "capacty": f"unknown parameter 'capacty' of {mod} (known: {KNOWN[mod]})"
    }
    assert sorted(str(c.info.pool_id) for c in runtime.pools.all()) == before


async def test_unknown_keys_and_bad_values_are_reported_together(runtime: Runtime) -> None:
    with pytest.raises(ValidationFailed) as info:
        await runtime.compose("rt_bdev", "d", "800.0", {"capacity": "lots", 7: 1, "x" * 80: 2})
    errors = info.value.errors
    assert errors["capacity"] == "unparseable size 'lots'"
    assert errors["7"].startswith("unknown parameter '7' of rt_bdev")
    long_key = "x" * 40 + "..."
    assert errors[long_key].startswith(f"unknown parameter '{long_key}'")


async def test_yaml_parameters_are_blamed_at_their_line_and_column(runtime: Runtime) -> None:
    text = "# a device\nbdev_type: ram\ncapacity: lots\n  \ncapacty: 1M\n"
    with pytest.raises(ValidationFailed) as info:
        await runtime.compose("rt_bdev", "d", "800.0", text)
    assert info.value.errors == {
        "capacty": "line 5, column 1: unknown parameter 'capacty' of rt_bdev "
        "(known: bdev_type, capacity, made_for)",
        "capacity": "line 3, column 1: unparseable size 'lots'",
    }
    with pytest.raises(ValidationFailed) as info:  # a flow mapping: the key's own column
        await runtime.compose("rt_bdev", "d", "800.0", "{bdev_type: tape, capacity: 1M}")
    assert info.value.errors["bdev_type"].startswith("line 1, column 2: unknown type 'tape'")
    with pytest.raises(ValidationFailed) as info:  # and the parse errors themselves
        await runtime.compose("rt_bdev", "d", "800.0", "capacity: 1M\nbdev_type: [ram\n")
    assert info.value.errors["config"].startswith("not valid YAML: line 3, column 1: ")


async def test_known_keys_compose_from_yaml_text(runtime: Runtime) -> None:
    body = await runtime.compose("rt_bdev", "d", "800.0", "bdev_type: ram\ncapacity: 64K\n")
    assert body == {"ok": True, "pool_name": "d", "pool_id": "800.0"}


async def test_the_admin_module_takes_no_parameters(runtime: Runtime) -> None:
    errors = runtime.modules["rt_admin"].config_errors({"size": 1})
    assert errors == {"size": "unknown parameter 'size' of rt_admin (known: none)"}


async def _started(settings_text: str, tmp_path: Path) -> list[str]:
    """The pool names a node composes at start from ``settings_text``."""
    settings = parse_settings_text(settings_text, "test.yaml")
    settings = dataclasses.replace(
        settings, runtime=dataclasses.replace(settings.runtime, data_dir=str(tmp_path))
    )
    runtime = Runtime(settings, 0)
    async with trio.open_nursery() as nursery:
        await nursery.start(runtime.workers.serve)
        runtime.install_admin_pool()
        await startup_compose(runtime)
        names = [c.info.pool_name for c in runtime.pools.all()]
        nursery.cancel_scope.cancel()
    return names


async def test_startup_compose_from_a_settings_file_still_works(tmp_path: Path) -> None:
    text = """
compose:
  - {mod_name: rt_bdev, pool_name: a, pool_id: "800.0", bdev_type: ram, capacity: 256K}
  - {mod_name: rt_bdev, pool_name: b, capacity: 256K}
  - {mod_name: rt_bdev, pool_name: typo, capcity: 256K}
  - {mod_name: rt_safe_bdev, pool_name: arr, members: "a,b", max_failures: 1,
     recover_pace_s: 0}
  - {mod_name: rt_cte_core, pool_name: core, targets: [{name: t, attach_pool_name: arr}]}
"""
    names = await _started(text, tmp_path)
    # the entry with a typo is refused (and logged); the others are composed
    assert set(names) >= {"rt_admin", "a", "b", "arr", "core"}
    assert "typo" not in names


async def test_the_demo_pools_compose_at_start(tmp_path: Path) -> None:
    names = await _started("workload: {pools: true}\n", tmp_path)
    assert {"demo_ram", "demo_file", "demo_array", "demo_cte"} <= set(names)
