"""Target ``query``: a query string's bytes as ``dashboard.params.request_params`` reads them:
UTF-8, then ``parse_pairs``.

Only ``BadRequest`` may come out (rule 3; text that is not UTF-8 is the caller's 400); the map
holds at most ``MAX_FIELDS`` keys, and the first of repeated keys wins (rule 2).
"""

from __future__ import annotations

from cluster.ground.errors import BadRequest
from dashboard.params import MAX_FIELDS, parse_pairs


def test_one_input(data: bytes) -> bool:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    try:
        params = parse_pairs(text, "query string")
    except BadRequest:
        return False
    assert len(params) <= MAX_FIELDS
    for key, value in params.items():
        assert isinstance(key, str), key
        assert isinstance(value, str), value
    return True
