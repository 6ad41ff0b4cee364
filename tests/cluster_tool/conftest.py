from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest


def _kill_recorded(home: Path) -> None:
    """Last resort: SIGKILL every process any cluster under ``home`` recorded."""
    for rec in home.glob("*/cluster.json"):
        try:
            nodes = json.loads(rec.read_text()).get("nodes", [])
        except (OSError, ValueError):
            continue
        for n in nodes:
            pid = int(n.get("pid") or 0)
            if pid > 0:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


@pytest.fixture
def cluster_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private RT_CLUSTER_HOME; every recorded process is killed afterwards, whatever happened."""
    home = tmp_path / "clusters"
    home.mkdir()
    monkeypatch.setenv("RT_CLUSTER_HOME", str(home))
    try:
        yield home
    finally:
        _kill_recorded(home)
