"""The compose door: module parameters as YAML text go through the safe loader, so a hostile
``config`` is a 400 field error at once (never a hang, a 500 or a TypeError deeper down)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster.ground.errors import ValidationFailed
from cluster.node import cli, nodeclient
from cluster.runtime.compose import CONFIG_LIMITS, check_compose
from cluster.runtime.runtime import Runtime
from tests.support.yamlbombs import ALIAS_BOMB

# The fields the issue named, each holding the bomb's last alias.
FIELDS = ("members", "parity_members", "max_failures", "chunk_size", "capacity", "bdev_type")


@pytest.mark.parametrize("field", FIELDS)
async def test_an_alias_bomb_in_a_compose_request_is_a_400(runtime: Runtime, field: str) -> None:
    config = ALIAS_BOMB + f"{field}: *i\n"
    with pytest.raises(ValidationFailed) as info:
        await runtime.compose("rt_safe_bdev", "bomb", "850.0", config)
    assert info.value.status == 400
    assert info.value.errors["config"] == (
        "not valid YAML: line 1, column 4: anchors (&a) are not allowed"
    )
    assert info.value.body() == {"ok": False, "errors": info.value.errors}
    assert [c.info.pool_name for c in runtime.containers()] == ["rt_admin"]


async def test_a_date_in_compose_reaches_the_module_as_text(runtime: Runtime) -> None:
    # Before, a datetime.date reached the module's checks and the pool's saved config.
    request = {
        "mod_name": "rt_bdev",
        "pool_name": "d",
        "pool_id": "800.0",
        "pool_query": "local",
        "config": "capacity: 64K\ncreated: 2024-01-01\n",
    }
    with pytest.raises(ValidationFailed) as info:  # a key rt_bdev does not read is refused
        check_compose(runtime.pools, runtime.modules, request)
    assert info.value.errors == {
        "created": "line 2, column 1: unknown parameter 'created' of rt_bdev "
        "(known: bdev_type, capacity, made_for)"
    }
    with pytest.raises(ValidationFailed) as info:
        await runtime.compose("rt_bdev", "d", "800.0", "capacity: 2024-01-01\n")
    assert "2024-01-01" in info.value.errors["capacity"]


async def test_compose_config_text_is_bounded(runtime: Runtime) -> None:
    big = "capacity: 64K\n" + "# x\n" * (CONFIG_LIMITS.max_bytes // 4)
    with pytest.raises(ValidationFailed) as info:
        await runtime.compose("rt_bdev", "big", "800.0", big)
    assert info.value.errors["config"].startswith("not valid YAML: larger than")
    deep = "a: " + "[" * 100 + "]" * 100
    with pytest.raises(ValidationFailed, match="nested deeper"):
        await runtime.compose("rt_bdev", "deep", "800.0", deep)


async def test_a_pool_id_with_spaces_is_refused_by_compose(runtime: Runtime) -> None:
    with pytest.raises(ValidationFailed) as info:
        await runtime.compose("rt_bdev", "sp", " 800.0 ", "capacity: 64K")
    assert info.value.errors["pool_id"].startswith("bad pool id")


def test_rt_run_compose_file_with_a_bomb_or_a_date_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("RT_SERVER_CONF", raising=False)
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(ALIAS_BOMB)
    assert cli.main(["compose", str(bomb), "--port", "1"]) == 1
    assert capsys.readouterr().err == (
        f"rt_run: {bomb}: not valid YAML: line 1, column 4: anchors (&a) are not allowed\n"
    )
    sent = []
    reply = {"results": [{"pool_name": "d", "pool_id": "800.0"}]}
    monkeypatch.setattr(nodeclient, "_call", lambda args, request: sent.append(request) or reply)
    dated = tmp_path / "dated.yaml"
    dated.write_text("- {mod_name: rt_bdev, pool_name: d, when: 2024-01-01}\n")
    assert cli.main(["compose", str(dated), "--port", "1"]) == 0
    assert sent[0].entries[0]["when"] == "2024-01-01"
