"""Target ``safeyaml``: YAML bytes through ``cluster.ground.safeyaml.load_marked``, small limits.

Only ``YamlError`` may come out (rule 4); what it accepts is plain data (rule 3: dict, list,
str, int, float, bool, None), nested no deeper than the limit, with no more values than the
limit, and every key it marks is a key of the top-level mapping.
"""

from __future__ import annotations

from typing import Any

from cluster.ground.safeyaml import Limits, YamlError, load_marked

from ..mutators import yaml_mutator

LIMITS = Limits(max_bytes=8192, max_depth=8, max_nodes=500)
SCALARS = (str, int, float, bool, type(None))


def _walk(value: Any) -> int:
    """The number of values in ``value``; AssertionError past the depth limit or for a type
    that is not plain data."""
    count, stack = 0, [(value, 0)]
    while stack:
        v, depth = stack.pop()
        count += 1
        if isinstance(v, dict):
            assert depth < LIMITS.max_depth, "nested deeper than the limit"
            assert all(isinstance(k, SCALARS) for k in v), v
            count += len(v)  # the keys
            stack += [(x, depth + 1) for x in v.values()]
        elif isinstance(v, list):
            assert depth < LIMITS.max_depth, "nested deeper than the limit"
            stack += [(x, depth + 1) for x in v]
        else:
            assert isinstance(v, SCALARS), type(v)
    return count


custom_mutator = yaml_mutator("safeyaml")


def test_one_input(data: bytes) -> bool:
    try:
        value, marks = load_marked(data, LIMITS)
    except YamlError:
        return False
    assert _walk(value) <= LIMITS.max_nodes
    assert not marks or (isinstance(value, dict) and set(marks) <= set(value)), marks
    return True
