"""Target ``numbers``: text, and the values JSON makes of it, through every parser of
``cluster.ground.parse`` (query parameters, environment variables and YAML values all end here).

Only ``ParseError`` may come out (rule 3). What is accepted keeps the rules: integers are
canonical (``str(parse_int(t)) == t``, rule 1), every number is within the range asked for and
floats are finite (rule 2), a boolean is one of ``BOOL_WORDS`` (rule 5); ``shown`` of anything
is one short line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from cluster.ground import parse
from cluster.ground.parse import ParseError

LOW, HIGH = -1, parse.MAX_NODE_ID
SIZE_HIGH = 1 << 50


def _accepted(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except ParseError:
        return None


def _text(text: str) -> bool:
    value = _accepted(lambda: parse.parse_int(text, low=LOW, high=HIGH, what="id"))
    assert value is None or (str(value) == text and LOW <= value <= HIGH), (text, value)
    port = _accepted(lambda: parse.parse_port(text))
    assert port is None or 0 <= port <= parse.PORT_MAX
    rate = _accepted(lambda: parse.parse_float(text, low=0.0, high=1e6, low_open=True))
    assert rate is None or (math.isfinite(rate) and 0.0 < rate <= 1e6), (text, rate)
    size = _accepted(lambda: parse.parse_size(text, low=1, high=SIZE_HIGH))
    assert size is None or 1 <= size <= SIZE_HIGH, (text, size)
    flag = _accepted(lambda: parse.parse_bool(text))
    assert flag is None or text.lower() in parse.BOOL_WORDS, text
    return any(v is not None for v in (value, port, rate, size, flag))


def _typed(value: Any) -> bool:
    n = _accepted(lambda: parse.int_value(value, low=LOW, high=HIGH))
    assert n is None or (type(n) is int and LOW <= n <= HIGH), (value, n)
    x = _accepted(lambda: parse.float_value(value, low=-1e9, high=1e9))
    assert x is None or (math.isfinite(x) and -1e9 <= x <= 1e9), (value, x)
    size = _accepted(lambda: parse.size_value(value, low=0, high=SIZE_HIGH))
    assert size is None or 0 <= size <= SIZE_HIGH, (value, size)
    flag = _accepted(lambda: parse.bool_value(value))
    assert "\n" not in parse.shown(value)
    return any(v is not None for v in (n, x, size, flag))


def test_one_input(data: bytes) -> bool:
    text = data.decode("utf-8", "surrogatepass" if data.isascii() else "replace")
    accepted = _text(text)
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        value = text
    return _typed(value) or accepted
