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
from scenarios.pytest_plugin import OpenCluster, section

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


# Issue 44: a new user's test file outside this repository, with no ini file (no trio_mode).
def _outside(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_outside=source)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


def test_the_fixture_runs_without_trio_mode(pytester: pytest.Pytester) -> None:
    result = _outside(pytester, "async def test_x(rt_cluster):\n    c = await rt_cluster(3)\n")
    result.assert_outcomes(passed=1)
    assert "requested an async fixture" not in result.stdout.str()


def test_without_pytest_trio_the_fixture_says_so_in_one_line(pytester: pytest.Pytester) -> None:
    result = _outside(pytester, "async def test_x(rt_cluster):\n    pass\n", "-p", "no:trio")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*rt_cluster is an async fixture run by pytest-trio: install it*"])
    assert "requested an async fixture" not in result.stdout.str()


OWN_CLUSTER = """
import pytest
from scenarios import open_cluster

@pytest.mark.trio
async def test_own_cluster():
    async with open_cluster(4, mode="sim", seed=424242) as c:
        assert len(c.running) == 5
"""


def test_a_failed_assert_is_shown_as_itself(pytester: pytest.Pytester) -> None:
    result = _outside(pytester, OWN_CLUSTER)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "Exception Group" not in out
    assert "ExceptionGroup" not in out
    assert re.search(r"^E +assert 4 == 5$", out, re.M), out  # the user's own assertion


def test_a_cluster_opened_without_the_fixture_gets_the_section(pytester: pytest.Pytester) -> None:
    out = _outside(pytester, OWN_CLUSTER).stdout.str()
    assert "mode sim, seed 424242, nodes 4 at the start" in out
    assert (
        "replay: pytest 'test_outside.py::test_own_cluster', with seed=424242 in the test's "
        "open_cluster call (the same events, one for one)"
    ) in out
    files = re.findall(r"^scenario: (\S+) ", out, re.M)
    assert len(files) == 1
    assert Path(files[0]).exists()


def test_the_section_says_a_plain_assert_replays_to_pass(pytester: pytest.Pytester) -> None:
    out = _outside(pytester, OWN_CLUSTER).stdout.str()
    assert "not its plain asserts: a failed assert replays to verdict: PASS" in out


class _Stand:  # what section() reads of a Cluster
    def __init__(self, mode: str) -> None:
        self.mode, self.seed, self.initial, self.actions, self.t0 = mode, 9, [0, 1], [], 0.0


def test_a_real_section_says_what_its_seed_does_not_replay() -> None:
    real = section(_Stand("real"), "t.py::test", [])  # type: ignore[arg-type]
    assert "--rt-seed 9 (new real processes, the same test: timing is not replayed)" in real
    assert real.splitlines()[2].startswith("rerun: ")
    sim = section(_Stand("sim"), "t.py::test", [])  # type: ignore[arg-type]
    assert "replay: pytest 't.py::test' --rt-mode sim --rt-seed 9 (the same events" in sim
    own = section(_Stand("real"), "t.py::test", [], fixture=False)  # type: ignore[arg-type]
    assert "rerun: pytest 't.py::test' (new real processes" in own


def test_a_whole_sim_failure_says_its_file_replays_the_membership_only(tmp_path: Path) -> None:
    """Whole nodes (``whole=True``) are not in the file (its steps, no array): the pytest line
    replays the run; the file's --sim replay is of its actions on the membership simulator."""
    from scenarios.replay import Failure

    whole = Failure(tmp_path / "scenario.yaml", tmp_path).lines("sim", whole=True)[0]
    assert "replay of its actions on the membership simulator; the pytest line replays" in whole
    assert Failure(tmp_path / "s.yaml", tmp_path).lines("sim")[0].endswith("s.yaml --sim)")
