"""Strict parsing of numbers at the boundary: ids, ports, sizes, counts and rates.

Rules:
1. Text is parsed as written: ASCII digits only, no surrounding spaces, no ``+``, no ``_``, no
   other script's digits. Integers are canonical (``0``, ``800``, ``-1``; never ``0800`` or
   ``-0``), so ``str(parse_int(t, ...)) == t`` for every accepted ``t``.
2. Every parser takes the range it accepts; a value outside it is refused like malformed text.
   Floats are finite (no ``nan``, no ``inf``, no overflow to infinity).
3. Every refusal is one ``ParseError`` (a ValueError) whose message names ``what`` was parsed,
   the accepted range and the text (cut short); callers map it to their own boundary error
   (BadRequest, SettingsError, an argparse error). Nothing else escapes, whatever the input.
4. ``int_value``, ``float_value`` and ``size_value`` take what YAML or JSON already typed (a
   bool is not a number) or text, with the same rules.
5. A boolean is written as one of ``BOOL_WORDS`` (``true``/``false``, ``1``/``0``, ``yes``/
   ``no``, ``on``/``off``, in any case) and nothing else: ``maybe``, ``2``, `` 1`` and the
   empty text are refused, never read as false.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

__all__ = [
    "BOOL_WORDS",
    "MAX_NODE_ID",
    "PORT_MAX",
    "ParseError",
    "bool_value",
    "float_value",
    "int_value",
    "parse_bool",
    "parse_float",
    "parse_int",
    "parse_port",
    "parse_size",
    "shown",
    "size_value",
]

MAX_NODE_ID = (1 << 31) - 1  # what the membership wire format carries
PORT_MAX = 65535

_INT_RE = re.compile(r"(?:0|-?[1-9][0-9]*)\Z")
_FLOAT_RE = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\Z")
_SIZE_RE = re.compile(r"([0-9]+(?:\.[0-9]+)?)(?:([KMGTPkmgtp])(?:[iI]?[bB])?|[bB])?\Z")
_POWERS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5}
_MAX_TEXT = 64  # longer text is no number we accept; refuse it before converting anything
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")
BOOL_WORDS = _TRUE + _FALSE


class ParseError(ValueError):
    """Text or a value that is not the number asked for; the message says what was expected."""


def shown(value: object, limit: int = 40) -> str:
    """``value`` quoted for a one-line message: control characters escaped, text past ``limit``
    characters cut (an error never echoes a huge input back)."""
    if isinstance(value, str):
        return repr(value[:limit]) + ("..." if len(value) > limit else "")
    text = repr(value)
    return text if len(text) <= limit + 2 else text[:limit] + "..."


def _range(low: float, high: float) -> str:
    return f"from {low:g} to {high:g}" if isinstance(low, float) else f"from {low} to {high}"


def parse_int(text: str, *, low: int, high: int, what: str = "value") -> int:
    """An integer from ``low`` to ``high`` written canonically in ASCII digits."""
    if not isinstance(text, str) or len(text) > _MAX_TEXT or not _INT_RE.match(text):
        raise ParseError(f"{what}: expected an integer {_range(low, high)}, got {shown(text)}")
    value = int(text)
    if not low <= value <= high:
        raise ParseError(f"{what}: {value} is out of range ({_range(low, high)})")
    return value


def parse_port(text: str, *, what: str = "port", low: int = 0) -> int:
    """A TCP/UDP port number (0 lets the system choose, where the caller allows it)."""
    return parse_int(text, low=low, high=PORT_MAX, what=what)


def parse_float(
    text: str, *, low: float, high: float, what: str = "value", low_open: bool = False
) -> float:
    """A finite decimal number in ``[low, high]`` (``(low, high]`` with ``low_open``)."""
    if not isinstance(text, str) or len(text) > _MAX_TEXT or not _FLOAT_RE.match(text):
        raise ParseError(f"{what}: expected a number {_range(low, high)}, got {shown(text)}")
    return _ranged_float(float(text), low, high, what, low_open)


def _ranged_float(value: float, low: float, high: float, what: str, low_open: bool) -> float:
    if not math.isfinite(value):
        raise ParseError(f"{what}: expected a finite number, got {value}")
    if value < low or (low_open and value == low) or value > high:
        bound = f"> {low:g} and <= {high:g}" if low_open else _range(float(low), float(high))
        raise ParseError(f"{what}: {value:g} is out of range ({bound})")
    return value


def parse_size(text: str, *, low: int = 0, high: int, what: str = "size") -> int:
    """Bytes from ``4096``, ``16K``, ``512MB``, ``1GiB``, ``1.5M`` (powers of 1024, rounded
    down to whole bytes), within ``[low, high]``."""
    m = _SIZE_RE.match(text) if isinstance(text, str) and len(text) <= _MAX_TEXT else None
    if m is None:
        raise ParseError(f"{what}: expected a size such as 4096, 16M or 1GiB, got {shown(text)}")
    number, suffix = m.group(1), (m.group(2) or "").upper()
    value = int(Fraction(number) * (1 << (10 * _POWERS[suffix])))  # exact: no float rounding
    if not low <= value <= high:
        raise ParseError(f"{what}: {text} ({value} bytes) is out of range ({_range(low, high)})")
    return value


def int_value(value: Any, *, low: int, high: int, what: str = "value") -> int:
    """An int as YAML or JSON typed it (not a bool), or integer text, within the range."""
    if isinstance(value, str):
        return parse_int(value, low=low, high=high, what=what)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ParseError(f"{what}: expected an integer {_range(low, high)}, got {shown(value)}")
    if not low <= value <= high:
        raise ParseError(f"{what}: {shown(value)} is out of range ({_range(low, high)})")
    return value


def float_value(
    value: Any, *, low: float, high: float, what: str = "value", low_open: bool = False
) -> float:
    """A finite number as YAML or JSON typed it (not a bool), or number text, within range."""
    if isinstance(value, str):
        return parse_float(value, low=low, high=high, what=what, low_open=low_open)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ParseError(f"{what}: expected a number {_range(low, high)}, got {shown(value)}")
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        raise ParseError(f"{what}: {shown(value)} is out of range") from None
    return _ranged_float(number, low, high, what, low_open)


def size_value(value: Any, *, low: int = 0, high: int, what: str = "size") -> int:
    """Bytes as YAML or JSON typed them (an int, not a bool or a float), or size text
    (``parse_size``), within ``[low, high]``."""
    if isinstance(value, str):
        return parse_size(value, low=low, high=high, what=what)
    return int_value(value, low=low, high=high, what=what)


def parse_bool(text: str, *, what: str = "value") -> bool:
    """``True`` for true/1/yes/on, ``False`` for false/0/no/off (any case); nothing else."""
    ok = isinstance(text, str) and len(text) <= 8 and text.isascii()
    word = text.lower() if ok else None
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ParseError(f"{what}: expected one of {'/'.join(BOOL_WORDS)}, got {shown(text)}")


def bool_value(value: Any, *, what: str = "value") -> bool:
    """A bool as YAML or JSON typed it, or boolean text (``parse_bool``); a number is no bool."""
    if isinstance(value, bool):
        return value
    return parse_bool(value, what=what)
