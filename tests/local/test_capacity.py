"""A cluster that cannot fit in memory is refused at once, in one line, before anything is
written or started (``cluster.local.capacity``; issue 42)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster.local import capacity
from cluster.local.capacity import NODE_MIB, RESERVE_MIB, available_mib, check_fits
from cluster.local.record import BadInput
from tests.support.clusters import run_main


def _meminfo(tmp_path: Path, mib: int) -> Path:
    p = tmp_path / "meminfo"
    p.write_text(f"MemTotal:       24000000 kB\nMemAvailable:   {mib * 1024} kB\n")
    return p


def test_a_size_that_fits_passes_and_one_that_does_not_is_refused_with_the_largest_that_fits(
    tmp_path: Path,
) -> None:
    info = _meminfo(tmp_path, RESERVE_MIB + 100 * NODE_MIB)
    check_fits(100, meminfo=info)
    with pytest.raises(BadInput) as refused:
        check_fits(101, meminfo=info)
    line = str(refused.value)
    assert "\n" not in line
    assert "101 nodes need about" in line
    assert "start at most 100 nodes" in line
    with pytest.raises(BadInput, match="start at most 0 nodes"):
        check_fits(1, meminfo=_meminfo(tmp_path, 10))


def test_serf_agents_count_too(tmp_path: Path) -> None:
    info = _meminfo(tmp_path, RESERVE_MIB + 10 * NODE_MIB)
    check_fits(10, meminfo=info)
    with pytest.raises(BadInput):
        check_fits(10, agents=5, meminfo=info)


def test_without_meminfo_nothing_is_refused(tmp_path: Path) -> None:
    assert available_mib(tmp_path / "missing") is None
    (tmp_path / "odd").write_text("MemAvailable: lots\n")
    assert available_mib(tmp_path / "odd") is None
    check_fits(1_000_000, meminfo=tmp_path / "missing")
    assert available_mib() is not None  # this machine's kernel says


def test_up_refuses_at_once_and_starts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RT_CLUSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(capacity, "available_mib", lambda meminfo=None: RESERVE_MIB + 5 * NODE_MIB)
    code, _out, err = run_main("up", "-n", "50", "--name", "big", "--base-port", "0")
    assert code == 2
    assert err.strip().count("\n") == 0, err
    assert "50 nodes need about" in err
    assert "start at most 5 nodes" in err
    assert not (tmp_path / "home" / "big" / "cluster.json").exists()
    assert not list((tmp_path / "home").glob("big/procs/*.json"))
