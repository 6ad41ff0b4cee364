"""scenarios: timed fault scenarios (YAML files here) and their runner.

The folder is grouped by job: ``format`` (the file format), ``play`` (the one ``Cluster``, the
one engine, a backend per mode), ``judge`` (trace, analysis, checks, properties),
``reporting`` (report, charts, timeline, runs page) and ``explore``; ``runner`` runs and judges
a file, ``replay`` writes a failed chaos test as one, ``pytest_plugin`` is the fixture.

A scenario runs on real node processes (a throwaway local cluster, ``cluster.local``, or a
running cluster named by its hostfile, ``attach``; either way every node's events are read over
HTTP, ``collect``) or on swim's simulated network in virtual time; either way the run becomes a
``Trace`` (events, actions, HTTP answers on one clock) judged by one analysis into
``results.json`` and a self-contained ``report.html``. See docs/rt_cluster.md for the file
format.

Public surface: ``load_scenario``, ``parse_scenario``, ``Scenario``, ``ScenarioError``,
``run_scenario``, ``run_many``, ``run_scenario_cli``, ``write_outputs``, ``library``,
``find_scenario``, ``analyse``, ``render_report``, ``Trace``, ``Action``; for chaos tests in
Python (docs/testing.md): ``open_cluster``, ``start_cluster``, ``Cluster``, ``WaitTimeout``,
``CheckResult``, and the checkers of ``scenarios.judge.checks`` (``History``, ``Verdict``); for
arrays in such tests, ``Cluster.make_array`` gives an ``Array`` (its ``check`` a
``Durability``, naming each ``LostWrite``).
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .format.spec import (
        Expectation,
        Scenario,
        ScenarioError,
        Step,
        load_scenario,
        parse_scenario,
    )
    from .judge import checks
    from .judge.analysis import Analysis, analyse
    from .judge.checks import Checker, CheckResult, History, Verdict
    from .judge.trace import Action, HttpResult, Trace, Views
    from .play.arrays import Array, Durability, LostWrite
    from .play.chaos import Cluster, WaitTimeout
    from .play.opening import open_cluster, start_cluster
    from .reporting.report import render_report
    from .reporting.results import write_outputs
    from .runner import (
        find_scenario,
        library,
        run_many,
        run_scenario,
        run_scenario_cli,
    )

# The package is a door, not a floor (as ``cluster`` is): importing ``scenarios`` (which the
# pytest plugin's entry point does in every pytest session of a project that installs rtsim)
# loads nothing of its own until a name is asked for.
_WHERE = {
    "checks": "",  # the module itself: scenarios.judge.checks
    "Analysis": "judge.analysis",
    **dict.fromkeys(("Array", "Durability", "LostWrite"), "play.arrays"),
    "analyse": "judge.analysis",
    **dict.fromkeys(("Cluster", "WaitTimeout"), "play.chaos"),
    **dict.fromkeys(("open_cluster", "start_cluster"), "play.opening"),
    **dict.fromkeys(("Checker", "CheckResult", "History", "Verdict"), "judge.checks"),
    "render_report": "reporting.report",
    **dict.fromkeys(
        (
            "find_scenario",
            "library",
            "run_many",
            "run_scenario",
            "run_scenario_cli",
        ),
        "runner",
    ),
    "write_outputs": "reporting.results",
    **dict.fromkeys(
        ("Expectation", "Scenario", "ScenarioError", "Step", "load_scenario", "parse_scenario"),
        "format.spec",
    ),
    **dict.fromkeys(("Action", "HttpResult", "Trace", "Views"), "judge.trace"),
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'scenarios' has no attribute {name!r}")
    value = (
        import_module("scenarios.judge.checks")
        if where == ""
        else getattr(import_module(f"scenarios.{where}"), name)
    )
    globals()[name] = value
    return value


__all__ = [
    "Action",
    "Analysis",
    "Array",
    "CheckResult",
    "Checker",
    "Cluster",
    "Durability",
    "Expectation",
    "History",
    "HttpResult",
    "LostWrite",
    "Scenario",
    "ScenarioError",
    "Step",
    "Trace",
    "Verdict",
    "Views",
    "WaitTimeout",
    "analyse",
    "checks",
    "find_scenario",
    "library",
    "load_scenario",
    "open_cluster",
    "parse_scenario",
    "render_report",
    "run_many",
    "run_scenario",
    "run_scenario_cli",
    "start_cluster",
    "write_outputs",
]
