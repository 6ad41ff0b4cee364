from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import end_everything


@pytest.fixture
def cluster_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private RT_CLUSTER_HOME; every process of its clusters is killed afterwards, whatever
    happened."""
    home = tmp_path / "clusters"
    home.mkdir()
    monkeypatch.setenv("RT_CLUSTER_HOME", str(home))
    try:
        yield home
    finally:
        end_everything(home)
