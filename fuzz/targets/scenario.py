"""Target ``scenario``: a scenario file's bytes through ``scenarios.parse_scenario``, once as
written for real processes and once with its ``sim:`` section applied.

Only ``ScenarioError`` may come out (``scenarios.format.spec`` rule 1).
"""

from __future__ import annotations

from scenarios import ScenarioError, parse_scenario

from ..mutators import yaml_mutator

custom_mutator = yaml_mutator("scenario")


def test_one_input(data: bytes) -> bool:
    accepted = True
    for sim in (False, True):
        try:
            parse_scenario(data, "fuzz.yaml", sim=sim)
        except ScenarioError:
            accepted = False
    return accepted
