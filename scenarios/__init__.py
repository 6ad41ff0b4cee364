"""scenarios: timed fault scenarios (YAML files here) and their runner.

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
``CheckResult``, and the checkers of ``scenarios.checks`` (``History``, ``Verdict``); for
arrays in such tests, ``Cluster.make_array`` gives an ``Array`` (its ``check`` a
``Durability``, naming each ``LostWrite``).
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import checks
    from .analysis import Analysis, analyse
    from .arrays import Array, Durability, LostWrite
    from .chaos import Cluster, WaitTimeout, open_cluster, start_cluster
    from .checks import Checker, CheckResult, History, Verdict
    from .report import render_report
    from .runner import (
        find_scenario,
        library,
        run_many,
        run_scenario,
        run_scenario_cli,
        write_outputs,
    )
    from .spec import Expectation, Scenario, ScenarioError, Step, load_scenario, parse_scenario
    from .trace import Action, HttpResult, Trace, Views

# The package is a door, not a floor (as ``cluster`` is): importing ``scenarios`` (which the
# pytest plugin's entry point does in every pytest session of a project that installs rtsim)
# loads nothing until a name is asked for.
_WHERE = {
    "checks": "",
    "Analysis": "analysis",
    **dict.fromkeys(("Array", "Durability", "LostWrite"), "arrays"),
    "analyse": "analysis",
    **dict.fromkeys(("Cluster", "WaitTimeout", "open_cluster", "start_cluster"), "chaos"),
    **dict.fromkeys(("Checker", "CheckResult", "History", "Verdict"), "checks"),
    "render_report": "report",
    **dict.fromkeys(
        (
            "find_scenario",
            "library",
            "run_many",
            "run_scenario",
            "run_scenario_cli",
            "write_outputs",
        ),
        "runner",
    ),
    **dict.fromkeys(
        ("Expectation", "Scenario", "ScenarioError", "Step", "load_scenario", "parse_scenario"),
        "spec",
    ),
    **dict.fromkeys(("Action", "HttpResult", "Trace", "Views"), "trace"),
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'scenarios' has no attribute {name!r}")
    value = (
        import_module(f"scenarios.{name}")
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
