"""Target ``settings``: a configuration file's bytes through
``cluster.ground.settings.parse_settings_text``.

Only ``SettingsError`` may come out (rule 3); settings it accepts show as plain JSON
(``to_dict``, what ``/api/config`` answers) and name their paths (``paths``).
"""

from __future__ import annotations

import json

from cluster.ground.errors import SettingsError
from cluster.ground.settings import parse_settings_text

from ..mutators import yaml_mutator

custom_mutator = yaml_mutator("settings")


def test_one_input(data: bytes) -> bool:
    try:
        settings = parse_settings_text(data, "fuzz.yaml")
    except SettingsError:
        return False
    json.dumps(settings.to_dict())
    settings.paths()
    return True
