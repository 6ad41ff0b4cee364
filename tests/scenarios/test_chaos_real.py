"""open_cluster(mode="real") and the rt_cluster fixture leave nothing behind: every process
they started ends with the block or the test, on an error, a failed test, -x and Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cluster.local import live_members
from scenarios import open_cluster
from scenarios.play.leftovers import registered
from scenarios.pytest_plugin import OpenCluster
from tests.support import running, wait_for
from tests.support.clusters import end_an_inner_run, sigint_as_in_a_terminal

pytestmark = pytest.mark.slow
pytest_plugins = ("pytester",)


def _gone(directory: Path, pids: list[int]) -> None:
    assert pids, "the cluster ran no process"
    assert live_members(directory) == []
    assert [p for p in pids if running(p)] == []  # a zombie has ended: its parent reaps it
    assert directory not in registered()


async def _open_and_fail(directory: Path, pids: list[int]) -> None:
    async with open_cluster(2, mode="real", directory=directory, name="err") as c:
        assert c.directory is not None
        assert c.dashboard_url(1) is not None
        pids += [m.pid for m in live_members(c.directory)]
        assert len(pids) == 2
        assert await c.views()  # the nodes answer
        raise RuntimeError("boom")


async def test_the_block_ends_every_process_on_an_error(tmp_path: Path) -> None:
    pids: list[int] = []
    with pytest.raises(RuntimeError, match="boom"):
        await _open_and_fail(tmp_path / "c", pids)
    _gone(tmp_path / "c" / "cluster", pids)


async def test_the_fixture_names_a_real_cluster_for_the_test_and_worker(
    rt_cluster: OpenCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    c = await rt_cluster(1, mode="real")
    assert c.directory is not None
    name = c.directory.parent.name
    assert name.startswith(f"gw3-{os.getpid()}-test_the_fixture_names")
    assert len(live_members(c.directory)) == 1
    assert c.directory in registered()


INNER = """
import os, pathlib

async def test_one(rt_cluster):
    c = await rt_cluster(2, mode="real")
    out = pathlib.Path(os.environ["RT_TEST_OUT"])
    out.write_text(str(c.directory))
    if os.environ.get("RT_TEST_HANG"):
        await c.sleep(600)
    assert False, "fails on purpose"

async def test_two(rt_cluster):
    pathlib.Path(os.environ["RT_TEST_OUT"] + ".2").write_text("ran")
"""


def _pids_of(out: Path) -> tuple[Path, list[int]]:
    directory = Path(out.read_text())
    return directory, [m.pid for m in live_members(directory)]


def test_a_failed_test_and_x_leave_nothing(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "dir.txt"
    monkeypatch.setenv("RT_TEST_OUT", str(out))
    pytester.makeini("[pytest]\ntrio_mode = true\n")
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-x")
    result.assert_outcomes(failed=1)
    assert "fails on purpose" in result.stdout.str()
    assert "mode real, seed" in result.stdout.str()
    assert not Path(str(out) + ".2").exists()  # -x: the second test never ran
    directory = Path(out.read_text())
    assert live_members(directory) == []


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as in a shell's background job


@pytest.mark.parametrize(
    ("sig", "ignore_sigint"),
    [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGTERM, True)],
    ids=["ctrl-c", "sigterm", "sigterm-in-background"],
)
def test_a_signal_to_pytest_leaves_nothing(
    pytester: pytest.Pytester, tmp_path: Path, sig: signal.Signals, ignore_sigint: bool
) -> None:
    out = tmp_path / "dir.txt"
    pytester.makeini("[pytest]\ntrio_mode = true\n")
    test_file = pytester.makepyfile(test_inner=INNER)
    env = {**os.environ, "RT_TEST_OUT": str(out), "RT_TEST_HANG": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(test_file), "-k", "one"],
        cwd=pytester.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_ignore_sigint if ignore_sigint else sigint_as_in_a_terminal,
    )
    try:
        # Its whole name, not the file's mere existence: write_text creates, then writes.
        wait_for(
            "the inner test's cluster to start",
            lambda: out.is_file() and out.read_text(),
            timeout=120,
        )
        directory, pids = _pids_of(out)
        assert len(pids) == 2
        proc.send_signal(sig)
        text, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            end_an_inner_run(out)
        if proc.stdout is not None:
            proc.stdout.close()  # else its pipe is closed by the garbage collector, in a later test
    if ignore_sigint:
        assert proc.returncode == -signal.SIGTERM  # ended as SIGTERM would, nodes first
    else:
        assert "KeyboardInterrupt" in text  # torn down as after Ctrl-C
    wait_for("the nodes to be gone", lambda: live_members(directory) == [], timeout=10)
    assert [p for p in pids if running(p)] == []  # a zombie has ended: its parent reaps it
