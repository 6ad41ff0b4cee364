from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
import trio

from cluster.local import ClusterRecord, NodeRecord, Processes


def _end_recorded(home: Path) -> None:
    """Last resort: SIGKILL every process any cluster under ``home`` recorded (a pid that now
    belongs to another process is left alone) and prove each gone."""
    recorded: list[NodeRecord] = []
    for path in home.glob("*/cluster.json"):
        try:
            record = ClusterRecord.from_json(json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            continue
        recorded += [n for n in record.nodes if n.pid > 0]
    end = partial(Processes().terminate, recorded, hard=True, name=lambda n: f"pid {n.pid}")
    trio.run(end)


@pytest.fixture
def cluster_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private RT_CLUSTER_HOME; every recorded process is killed afterwards, whatever happened."""
    home = tmp_path / "clusters"
    home.mkdir()
    monkeypatch.setenv("RT_CLUSTER_HOME", str(home))
    try:
        yield home
    finally:
        _end_recorded(home)
