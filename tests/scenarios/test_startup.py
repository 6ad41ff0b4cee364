"""What ``rt_cluster scenario --sim`` pays for besides the simulation (issue 45: the whole
command at 20x real time): a run on the simulated network imports neither the launcher nor the
node RPC, explore, nor an HTTP client (``scenarios.command`` rule 3, ``cluster.rt_cluster.cli``
rule 4, ``scenarios.play.engine`` rule 5, the lazy door of ``cluster.local``), and the command
run as a process does not collect its garbage at exit (``scenarios.command`` rule 4). Each case
runs in a fresh interpreter, whose modules are those of the command alone; nothing here is
timed."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Modules a simulated run has no use for: real mode's launcher, processes and RPC, the cluster
# commands' handlers, explore's search and jobs, and the HTTP client of real runs and arrays.
NOT_FOR_SIM = (
    "cluster.local.launcher",
    "cluster.local.processes",
    "cluster.local.startup",
    "cluster.rpc",
    "cluster.rt_cluster.commands",
    "scenarios.explore",
    "scenarios.explore.search",
    "scenarios.explore.jobs",
    "scenarios.play.arrayrun",
    "scenarios.play.realcluster",
    "httpx",
)

RUN = """
import json, sys
from scenarios.command import main
status = main(sys.argv[1:])
print(json.dumps({"status": status, "modules": sorted(sys.modules)}))
"""


def _loaded(*argv: str) -> tuple[int, set[str]]:
    """The exit status of ``rt_cluster argv`` in a fresh interpreter, and every module it
    had loaded when the command returned."""
    done = subprocess.run(
        [sys.executable, "-c", RUN, *argv], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    last = json.loads(done.stdout.splitlines()[-1])
    return last["status"], set(last["modules"])


def test_a_simulated_scenario_loads_nothing_of_real_mode(tmp_path: Path) -> None:
    status, modules = _loaded("scenario", "kill_one", "--sim", "-n", "5", "--out", str(tmp_path))
    assert status == 0
    assert (tmp_path / "results.json").is_file()
    assert {"scenarios.play.sim", "swim", "trio"} <= modules  # the run was played
    assert sorted(modules & set(NOT_FOR_SIM)) == []
    assert "cluster.sim" not in modules  # whole nodes only for a file with storage


def test_a_simulated_scenario_with_storage_loads_whole_nodes_not_the_launcher(
    tmp_path: Path,
) -> None:
    status, modules = _loaded(
        "scenario", "array_partition", "--sim", "-n", "5", "--out", str(tmp_path)
    )
    assert status == 0
    assert {"cluster.sim", "scenarios.play.wholesim", "scenarios.play.arrayrun"} <= modules
    launcher = {m for m in NOT_FOR_SIM if m.startswith(("cluster.local", "scenarios.explore"))}
    assert sorted(modules & (launcher | {"scenarios.play.realcluster"})) == []


def test_the_cluster_commands_still_load_their_handlers(tmp_path: Path) -> None:
    """The other side of ``cli`` rule 4: ``list`` (a cluster command) loads its handlers
    when it runs."""
    env = {**os.environ, "RT_CLUSTER_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", RUN, "list"], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    last = json.loads(done.stdout.splitlines()[-1])
    assert last["status"] == 0
    assert "cluster.rt_cluster.commands" in last["modules"]


def test_every_name_of_the_local_door_resolves() -> None:
    """``cluster.local`` loads a name's module when the name is asked for: each name of its
    ``__all__`` is the object its own module defines."""
    import cluster.local as local

    for name in local.__all__:
        value = getattr(local, name)
        home = importlib.import_module(f"cluster.local.{local._WHERE[name]}")
        assert value is getattr(home, name), name
    assert sorted(local._WHERE) == sorted(local.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        getattr(local, "nothing")  # noqa: B009


# An exit hook registered before ``main`` runs after the command's own (they run last in,
# first out): it sees whether the collector was left the heap at exit.
AT_EXIT = """
import atexit, gc, sys
atexit.register(
    lambda: print("at exit:", gc.get_freeze_count() > 0, gc.isenabled(), flush=True)
)
from scenarios.command import main
how = sys.argv.pop(1)
sys.exit(main() if how == "own" else main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    ("how", "runs", "frozen", "collecting"),
    [("own", "1", True, False), ("own", "2", True, True), ("given", "1", False, True)],
)
def test_the_process_command_leaves_its_heap_at_exit(
    how: str, runs: str, frozen: bool, collecting: bool, tmp_path: Path
) -> None:
    """Rule 4 of ``scenarios.command``: ``main()`` on the process's own command line freezes
    the collector's objects at exit, and one simulated run goes without the collector;
    ``main(argv)`` (a test, a caller) leaves it alone."""
    argv = ["scenario", "kill_one", "--sim", "-n", "5", "--runs", runs, "--out", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-c", AT_EXIT, how, *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "PASS" in done.stdout
    assert done.stdout.splitlines()[-1] == f"at exit: {frozen} {collecting}"
