from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
import trio

from cluster.local import ClusterError, Member, Processes, live_members, read_record

from .helpers import holders_of


def _end_everything(home: Path) -> None:
    """Last resort: SIGKILL every live process any cluster under ``home`` knows of (recorded in
    cluster.json or by a watcher; a pid that now names another process is left alone), prove
    each gone, then SIGKILL whatever still holds a file under ``home``."""
    running: list[Member] = []
    for directory in home.iterdir():
        try:
            record = read_record(directory)
        except ClusterError:
            record = None
        running += live_members(directory, record)
    end = partial(Processes().terminate, running, hard=True, name=Member.label)
    try:
        trio.run(end)
    finally:
        for pid in holders_of(home):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


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
        _end_everything(home)
