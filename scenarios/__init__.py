"""scenarios: timed fault scenarios (YAML files here) and their runner.

A scenario runs on real node processes (a throwaway local cluster, ``cluster.local``, or a
running cluster named by its hostfile, ``attach``; either way every node's events are read over
HTTP, ``collect``) or on swim's simulated network in virtual time; either way the run becomes a
``Trace`` (events, actions, HTTP answers on one clock) judged by one analysis into
``results.json`` and a self-contained ``report.html``. See docs/rt_cluster.md for the file
format.

Public surface: ``load_scenario``, ``parse_scenario``, ``Scenario``, ``ScenarioError``,
``run_scenario``, ``run_many``, ``run_scenario_cli``, ``write_outputs``, ``library``,
``find_scenario``, ``analyse``, ``render_report``, ``Trace``, ``Action``.
"""

from .analysis import Analysis, analyse
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

__all__ = [
    "Action",
    "Analysis",
    "Expectation",
    "HttpResult",
    "Scenario",
    "ScenarioError",
    "Step",
    "Trace",
    "Views",
    "analyse",
    "find_scenario",
    "library",
    "load_scenario",
    "parse_scenario",
    "render_report",
    "run_many",
    "run_scenario",
    "run_scenario_cli",
    "write_outputs",
]
