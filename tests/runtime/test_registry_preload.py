"""A parent that forks nodes scans the installed modules once (``preload_modules``); the
nodes it forks load from that scan instead of each scanning every distribution again."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cluster.ground.settings import load_settings
from cluster.runtime import BUILTIN, Runtime, preload_modules, registry


def runtime_for_tests(home: Path) -> Runtime:
    return Runtime(load_settings("embedded", env={"HOME": str(home)}), 0)


def test_nodes_load_from_the_preloaded_scan(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(registry, "_preloaded", None)
    preload_modules()
    for path in BUILTIN.values():
        assert path.partition(":")[0] in sys.modules  # the code is imported before any fork

    def no_second_scan() -> dict[str, str]:
        raise AssertionError("scanned the entry points again")

    monkeypatch.setattr(registry, "available_modules", no_second_scan)
    rt = runtime_for_tests(tmp_path)
    assert set(rt.modules) == set(BUILTIN)


def test_without_a_preload_each_runtime_scans(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(registry, "_preloaded", None)
    scans = []

    def counted() -> dict[str, str]:
        scans.append(1)
        return dict(BUILTIN)

    monkeypatch.setattr(registry, "available_modules", counted)
    runtime_for_tests(tmp_path)
    assert scans == [1]
