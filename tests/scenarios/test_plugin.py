"""The rt_cluster fixture: in this suite, and in a pytest of its own (the plugin as installed,
found through its pytest11 entry point), where a failure names its mode, seed and replay."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from scenarios import checks, load_scenario
from scenarios.pytest_plugin import OpenCluster

pytest_plugins = ("pytester",)


def test_the_plugin_is_registered_by_installing_rtsim() -> None:
    found = [ep for ep in entry_points(group="pytest11") if ep.name == "rtsim"]
    assert [ep.value for ep in found] == ["scenarios.pytest_plugin"]


async def test_the_fixture_opens_a_converged_sim_cluster(rt_cluster: OpenCluster) -> None:
    c = await rt_cluster(3, seed=4)
    assert (c.mode, c.seed) == ("sim", 4)
    views = await c.views()
    assert all(state == "alive" for row in views.values() for state in row.values())
    await c.kill(1)
    await c.wait_dead(1)
    assert (await c.check(checks.dead(1))).ok


async def test_two_clusters_in_one_test_are_apart(rt_cluster: OpenCluster) -> None:
    a = await rt_cluster(3, seed=1)
    b = await rt_cluster(2, seed=1)
    await a.kill(2)
    await a.wait_dead(2)
    assert b.running == [0, 1]
    assert a.running == [0, 1]


INNER = """
import pytest
from scenarios import checks, load_scenario

opened = []

async def test_fails(rt_cluster):
    c = await rt_cluster(3)
    opened.append(c)
    await c.kill(2)
    await c.wait_dead(2)
    assert not c.closed
    assert c.seed == 5
    assert (await c.check(checks.dead(1, within=2))).ok, "node 1 was never killed"

async def test_sees_the_first_closed():
    assert len(opened) == 1
    assert opened[0].closed
"""


def test_a_failure_names_mode_seed_and_replay(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntrio_mode = true\n")
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rt-seed", "5")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "node 1 was never killed" in out
    assert "rt_cluster 0" in out
    assert "mode sim, seed 5, nodes 3 at the start" in out
    assert "actions: kill1 at +0.00 s" in out
    assert "--rt-mode sim --rt-seed 5" in out
    found = re.search(r"^scenario: (\S+) \(replay: rt_cluster scenario (\S+) --sim\)$", out, re.M)
    assert found is not None, out
    assert found[1] == found[2]
    replay = load_scenario(found[1], sim=True)
    assert [s.name for s in replay.steps] == ["kill1"]
    assert [e.kind for e in replay.expectations] == ["never_dead", "dead", "dead"]  # wait, check
    report = re.search(r"^report: (\S+)$", out, re.M)
    assert report is not None
    assert Path(report[1]).read_text().startswith("<!")


def test_the_mode_option_is_checked(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner="def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rt-mode", "cloud")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "invalid choice: 'cloud'" in result.stderr.str()


FORK_AND_TERM = """
import os, signal, sys, time
from scenarios.pytest_plugin import graceful_sigterm

graceful_sigterm()
ready, say = os.pipe()
child = os.fork()
if child == 0:  # as pyroute2's helper that enters a namespace: a fork of pytest
    os.write(say, b"up")  # Python runs here: a signal now reaches its handler
    time.sleep(60)
    os._exit(0)
os.read(ready, 2)
os.kill(child, signal.SIGTERM)
_, status = os.waitpid(child, 0)
print(os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM)
"""


def test_sigterm_ends_a_fork_of_pytest_as_sigterm_does() -> None:
    done = subprocess.run(
        [sys.executable, "-c", FORK_AND_TERM], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True", done.stderr
