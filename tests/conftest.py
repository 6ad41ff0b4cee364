"""Fixtures every test room may use:

harness        the processes of one test (tests/support/harness.py)
runtime        a network-less runtime, workers served, the admin pool in (tests/support/runtime.py)
cluster_home   a private RT_CLUSTER_HOME for rt_cluster, every process of it ended afterwards
procs, zygote  the zygote that forks a local cluster's nodes, and the folder it records them in

A test marked ``python_swim`` patches swim's classes (bench/explore's planted bugs): while this
process runs swim compiled (``swim.native``), it runs in a child pytest with ``RTSIM_PURE=1``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from functools import partial
from pathlib import Path

import pytest
import trio

from cluster.local import Member, Processes, Zygote, live_members
from cluster.runtime import Runtime
from tests.support import Harness, open_harness
from tests.support.clusters import ZYGOTE, end_everything, holders_of, zygote_env
from tests.support.runtime import serving_runtime


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    """Processes of this test; every one is ended (and proved gone) at teardown, whatever the
    test did."""
    with open_harness(tmp_path) as h:
        yield h


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    """A network-free runtime with running workers and the admin pool."""
    async with serving_runtime(tmp_path / "data") as rt:
        yield rt


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


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Path]:
    """The directory the zygote records nodes in; every node recorded there, and anything
    holding a file under ``tmp_path``, is killed afterwards."""
    d = tmp_path / "procs"
    d.mkdir()
    try:
        yield d
    finally:
        running = live_members(tmp_path)
        trio.run(lambda: Processes().terminate(running, hard=True, name=Member.label))
        for pid in holders_of(tmp_path):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def zygote(tmp_path: Path, procs: Path) -> Iterator[Zygote]:
    with Processes().open_zygote(ZYGOTE, zygote_env(tmp_path), tmp_path / "zygote.log") as z:
        yield z


@pytest.fixture
def fake_serf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``serf`` on PATH that is never run (planning only looks it up)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    serf = bin_dir / "serf"
    serf.write_text("#!/bin/sh\nexit 1\n")
    serf.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return serf


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    import swim

    if not swim.native.IN_USE:
        return
    for item in items:
        if item.get_closest_marker("python_swim"):
            item.runtest = partial(_with_python_swim, item)  # type: ignore[method-assign]


def _with_python_swim(item: pytest.Item) -> None:
    """Run ``item`` alone in a child pytest with swim as Python; its failure is this one's."""
    env = {**os.environ, "RTSIM_PURE": "1"}
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", item.nodeid]
    child = subprocess.Popen(
        argv,
        cwd=item.config.rootpath,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its group: the search's forked jobs end with it
    )
    try:
        out, _ = child.communicate(timeout=600)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    if child.returncode != 0:
        pytest.fail(f"in a child pytest with RTSIM_PURE=1:\n{out[-6000:]}", pytrace=False)
