"""open_cluster(mode="netns") and pytest-xdist: every process and every namespace a chaos test
started ends with it (on an error, on Ctrl-C), and two xdist workers, each with a real and a
netns cluster up at the same time, never clash on a port, a name or a subnet."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cluster.local import live_members, read_record
from cluster.local.netns import leftovers, network_key, privileged
from scenarios import open_cluster
from scenarios.play.leftovers import registered
from tests.support import running, wait_for
from tests.support.clusters import end_an_inner_run, sigint_as_in_a_terminal

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not privileged(), reason="network namespaces need root"),
]
pytest_plugins = ("pytester",)


def _nothing_left(directory: Path, pids: list[int]) -> None:
    assert pids, "the cluster ran no process"
    assert live_members(directory) == []
    assert [p for p in pids if running(p)] == []  # a zombie has ended: its parent reaps it
    assert leftovers(network_key(directory)) == []
    assert directory not in registered()


async def _open_and_fail(home: Path, pids: list[int]) -> None:
    async with open_cluster(2, mode="netns", directory=home, name="err") as c:
        assert c.mode == "netns"
        assert c.directory is not None
        assert str(c.dashboard_url(1)).startswith("http://10.77.")
        assert len(leftovers(network_key(c.directory))) == 5  # 2 namespaces, 2 links, bridge
        pids += [m.pid for m in live_members(c.directory)]
        raise RuntimeError("boom")


async def test_a_netns_block_ends_processes_and_namespaces_on_an_error(tmp_path: Path) -> None:
    pids: list[int] = []
    with pytest.raises(RuntimeError, match="boom"):
        await _open_and_fail(tmp_path / "c", pids)
    _nothing_left(tmp_path / "c" / "cluster", pids)


HANG = """
import os, pathlib

async def test_hangs(rt_cluster):
    c = await rt_cluster(2, mode="netns")
    pathlib.Path(os.environ["RT_TEST_OUT"]).write_text(str(c.directory))
    await c.sleep(600)
"""


def test_ctrl_c_in_netns_mode_leaves_nothing(pytester: pytest.Pytester, tmp_path: Path) -> None:
    out = tmp_path / "dir.txt"
    pytester.makeini("[pytest]\ntrio_mode = true\n")
    test_file = pytester.makepyfile(test_inner=HANG)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(test_file)],
        cwd=pytester.path,
        env={**os.environ, "RT_TEST_OUT": str(out)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=sigint_as_in_a_terminal,
    )
    try:
        # Its whole name, not the file's mere existence: write_text creates, then writes.
        wait_for(
            "the inner test's cluster to start",
            lambda: out.is_file() and out.read_text(),
            timeout=120,
        )
        directory = Path(out.read_text())
        pids = [m.pid for m in live_members(directory)]
        assert len(pids) == 2
        assert leftovers(network_key(directory))
        proc.send_signal(signal.SIGINT)
        text, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            end_an_inner_run(out)
        if proc.stdout is not None:
            proc.stdout.close()  # else its pipe is closed by the garbage collector, in a later test
    assert "KeyboardInterrupt" in text
    _nothing_left(directory, pids)


TWO_WORKERS = """
import json, os, pathlib, trio

OUT = pathlib.Path(os.environ["RT_TEST_OUT"])

async def _both(rt_cluster, me, other):
    real = await rt_cluster(2, mode="real")
    netns = await rt_cluster(2, mode="netns")
    (OUT / me).write_text(json.dumps([str(real.directory), str(netns.directory)]))
    with trio.fail_after(120):  # both workers' clusters up at once
        while not (OUT / other).exists():
            await trio.sleep(0.1)
    for c in (real, netns):
        await c.kill(1)
        await c.wait_dead(1)
        assert (await c.check()).ok

async def test_a(rt_cluster):
    await _both(rt_cluster, "a", "b")

async def test_b(rt_cluster):
    await _both(rt_cluster, "b", "a")
"""


def test_two_xdist_workers_never_clash(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\ntrio_mode = true\n")
    pytester.makepyfile(test_inner=TWO_WORKERS)
    monkeypatch.setenv("RT_TEST_OUT", str(tmp_path))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(passed=2)
    dirs = [Path(d) for w in "ab" for d in json.loads((tmp_path / w).read_text())]
    records = [read_record(d) for d in dirs]
    assert len({r.name for r in records}) == 4
    ports = [
        (r.host_of(n), port)
        for r in records
        for n in r.nodes
        for port in (n.runtime_port, n.dashboard_port)
    ]
    assert len(set(ports)) == len(ports)  # no address and port twice
    subnets = [r.network.subnet for r in records if r.network is not None]
    assert len(set(subnets)) == 2
    for d in dirs:
        assert live_members(d) == []
        assert leftovers(network_key(d)) == []
