"""Strict boundary parsers: canonical ASCII, ranged, finite; one error type for anything else."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster.ground.errors import BadRequest
from cluster.ground.ids import POOL_PART_MAX, PoolId, parse_node_id
from cluster.ground.parse import (
    BOOL_WORDS,
    MAX_NODE_ID,
    ParseError,
    bool_value,
    float_value,
    int_value,
    parse_bool,
    parse_float,
    parse_int,
    parse_port,
    parse_size,
    size_value,
)

ANY_TEXT = st.one_of(
    st.text(max_size=30),
    st.text(alphabet="0123456789.-+_ eE\t\n٣²kKmMgGiIbB", max_size=20),
    st.from_regex(r"-?[0-9]{1,80}(\.[0-9]*)?", fullmatch=True),
)


@pytest.mark.parametrize(
    "text",
    [" 8", "8 ", "+8", "1_000", "٣", "²", "08", "-0", "", "0x10", "1e3", "8\n", "9" * 100],
    ids=repr,
)
def test_parse_int_refuses_anything_but_canonical_ascii(text: str) -> None:
    with pytest.raises(ParseError, match="port"):
        parse_int(text, low=-100, high=10**120, what="port")


def test_parse_int_ranges() -> None:
    assert parse_int("-1", low=-1, high=5) == -1
    with pytest.raises(ParseError, match=r"node id: 6 is out of range \(from -1 to 5\)"):
        parse_int("6", low=-1, high=5, what="node id")
    assert parse_port("0") == 0
    assert parse_port("65535") == 65535
    with pytest.raises(ParseError):
        parse_port("65536")
    with pytest.raises(ParseError):
        parse_port("-1")


@given(st.integers(min_value=-(10**30), max_value=10**30))
def test_parse_int_round_trips_every_integer(n: int) -> None:
    assert parse_int(str(n), low=-(10**30), high=10**30) == n


@given(ANY_TEXT)
def test_parse_int_accepts_exactly_its_canonical_texts(text: str) -> None:
    try:
        value = parse_int(text, low=-(10**9), high=10**9)
    except ParseError:
        return
    assert str(value) == text


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e999", " 1", "1,5", "+1", "1_0", "٣"])
def test_parse_float_refuses_non_finite_and_non_ascii(text: str) -> None:
    with pytest.raises(ParseError):
        parse_float(text, low=-math.inf, high=math.inf)


def test_parse_float_ranges() -> None:
    assert parse_float("0.5", low=0, high=1, low_open=True) == 0.5
    assert parse_float("1", low=0, high=1, low_open=True) == 1.0
    assert parse_float(".5e1", low=0, high=10) == 5.0
    with pytest.raises(ParseError, match="out of range"):
        parse_float("0", low=0, high=1, low_open=True)
    with pytest.raises(ParseError, match="out of range"):
        parse_float("1.5", low=0, high=1)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_parse_float_round_trips_every_finite_float(x: float) -> None:
    assert parse_float(repr(x), low=-math.inf, high=math.inf) == x


@given(ANY_TEXT)
def test_parse_float_gives_a_finite_float_or_parse_error(text: str) -> None:
    try:
        value = parse_float(text, low=-1e300, high=1e300)
    except ParseError:
        return
    assert math.isfinite(value)
    assert value == float(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [("4096", 4096), ("16K", 16 << 10), ("512MB", 512 << 20), ("1GiB", 1 << 30), ("1.5k", 1536)],
)
def test_parse_size(text: str, value: int) -> None:
    assert parse_size(text, high=1 << 40) == value


@pytest.mark.parametrize("text", ["-1", " 4K", "4 K", "1PB", "\u0661K", "4KK", "", "1e3"])
def test_parse_size_refusals(text: str) -> None:
    with pytest.raises(ParseError):
        parse_size(text, high=1 << 40)


@given(st.integers(min_value=0, max_value=1 << 50), st.sampled_from(["", "B", "K", "M", "G"]))
def test_parse_size_round_trips(n: int, unit: str) -> None:
    scale = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[unit]
    assert parse_size(f"{n}{unit}", high=1 << 90) == n * scale


@given(ANY_TEXT)
def test_parse_size_gives_bytes_in_range_or_parse_error(text: str) -> None:
    try:
        value = parse_size(text, low=1, high=1 << 30)
    except ParseError:
        return
    assert 1 <= value <= 1 << 30


@given(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20)))
def test_typed_values_are_ranged_or_refused(value: object) -> None:
    try:
        n = int_value(value, low=0, high=100)
        assert type(n) is int
        assert 0 <= n <= 100
    except ParseError:
        pass
    try:
        x = float_value(value, low=0.0, high=1.0, low_open=True)
        assert 0.0 < x <= 1.0
    except ParseError:
        pass


def test_typed_values_refuse_bools_and_huge_ints() -> None:
    with pytest.raises(ParseError):
        int_value(True, low=0, high=1)
    with pytest.raises(ParseError):
        float_value(10**400, low=0, high=math.inf)
    with pytest.raises(ParseError):
        float_value(math.nan, low=0, high=1)


# -- ids ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [" 800.0 ", "800.0 ", " 800.0", "0800.0", "800.00", "+800.0", "800.0.0", "٨00.0", "8_00.0"],
)
def test_a_pool_id_with_anything_around_or_inside_is_refused(text: str) -> None:
    # Before, " 800.0 " parsed as 800.0 and a destroy request with it destroyed that pool.
    with pytest.raises(BadRequest, match="bad pool id"):
        PoolId.parse(text)


@given(st.integers(0, POOL_PART_MAX), st.integers(0, POOL_PART_MAX))
def test_pool_ids_round_trip(major: int, minor: int) -> None:
    pid = PoolId(major, minor)
    assert PoolId.parse(str(pid)) == pid


@given(ANY_TEXT)
def test_pool_id_parse_is_a_pool_id_or_bad_request(text: str) -> None:
    try:
        pid = PoolId.parse(text)
    except BadRequest:
        return
    assert str(pid) == text


@given(st.integers(0, MAX_NODE_ID))
def test_node_ids_round_trip(n: int) -> None:
    assert parse_node_id(str(n)) == n


@pytest.mark.parametrize("text", [" 3", "3 ", "03", "-1", "+3", str(MAX_NODE_ID + 1), "٣"])
def test_malformed_node_ids_are_none(text: str) -> None:
    assert parse_node_id(text) is None


# -- booleans and sizes -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [("true", True), ("TRUE", True), ("1", True), ("Yes", True), ("on", True),
     ("false", False), ("False", False), ("0", False), ("no", False), ("OFF", False)],
)  # fmt: skip
def test_parse_bool_accepts_the_documented_spellings(text: str, value: bool) -> None:
    assert parse_bool(text) is value
    assert bool_value(text) is value
    assert bool_value(value) is value


@pytest.mark.parametrize(
    "text", ["maybe", "2", " 1", "1 ", "", "y", "t", "-1", "\u0661", "truee", "on\x00", "ye\u0455"]
)
def test_parse_bool_refuses_anything_else(text: str) -> None:
    # Before, remove_member read was_faulty=maybe as false and removed the member.
    with pytest.raises(ParseError, match="was_faulty: expected one of true/1/yes/on"):
        parse_bool(text, what="was_faulty")


@given(st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=12)))
def test_bool_value_is_a_bool_or_parse_error(value: object) -> None:
    try:
        b = bool_value(value)
    except ParseError:
        return
    assert isinstance(value, str)
    assert value.lower() in BOOL_WORDS
    assert b is (value.lower() in ("true", "1", "yes", "on"))


def test_size_value_takes_ints_and_strict_text() -> None:
    assert size_value(4096, high=1 << 20) == 4096
    assert size_value("16K", high=1 << 20) == 16 << 10
    for bad in (True, 4096.0, -1, " 16K", "16 K", "\uff11K", "1_0K", None, [1]):
        with pytest.raises(ParseError):
            size_value(bad, high=1 << 20)


def test_fractional_sizes_are_exact() -> None:
    # float(1.3) * 2**50 is not 1.3 * 2**50 rounded down; the device's own parser is exact.
    from cluster.storage import parse_size as storage_size

    for text in ("1.3P", "0.1K", "7.77777G", "1.000000000000001T"):
        assert parse_size(text, high=1 << 60) == storage_size(text)
