"""Property tests (issue 12) for the dashboard's parsers of untrusted text: query strings and
form bodies (``dashboard.params``), the Host header (``dashboard.safety``), and request
heads (``dashboard.intake``). Each raises its one error type, or none, for any input."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cluster.ground.errors import BadRequest
from dashboard.intake import MAX_HEADERS, Refusal, declared_length, head_refusal
from dashboard.params import MAX_FIELDS, parse_pairs
from dashboard.safety import SitePolicy, split_host

FAST = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PERCENT = st.sampled_from(["%ff", "%", "%zz", "%00", "%c3%28", "%e2%82", "%2", "%F0%9F%92%A5"])
QUERY_TEXT = st.lists(st.one_of(st.text(max_size=20), PERCENT, st.sampled_from("=&+;")),
                      max_size=30).map("".join)  # fmt: skip


@given(text=QUERY_TEXT)
@example(text="a=%ff")
@example(text="&".join(["k=v"] * (MAX_FIELDS + 1)))
@FAST
def test_parse_pairs_raises_only_bad_request(text: str) -> None:
    message: str | None = None
    try:
        pairs = parse_pairs(text, "query string")
    except BadRequest as exc:
        message = exc.message
    if message is not None:
        assert message.startswith("malformed request: query string: ")
        return
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in pairs.items())
    assert len(pairs) <= MAX_FIELDS


@given(pairs=st.lists(st.tuples(st.text(max_size=10), st.text(max_size=10)), max_size=10))
@FAST
def test_parse_pairs_round_trip_first_key_wins(pairs: list[tuple[str, str]]) -> None:
    text = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in pairs)
    expected: dict[str, str] = {}
    for key, value in pairs:
        expected.setdefault(key, value)
    assert parse_pairs(text, "query string") == expected


def test_too_many_fields_is_400() -> None:
    with pytest.raises(BadRequest, match="Max number of fields exceeded"):
        parse_pairs("&".join(["k=v"] * (MAX_FIELDS + 1)), "form body")


ODD_HOSTS = ["[::1]:", "[::1]:\u0661", "a:\u00b2", "h:" + "9" * 5000, "[", "]:1", "a:b:c"]


@given(value=st.text(max_size=40) | st.sampled_from(ODD_HOSTS))
@FAST
def test_split_host_raises_only_value_error(value: str) -> None:
    try:
        name, port = split_host(value)
    except ValueError:
        return
    assert isinstance(name, str)
    assert port is None or 1 <= port <= 65535


@pytest.mark.parametrize(
    "value",
    ["h:\u0661", "[::1]:\u0663", "h:\u00b2", "h:123456", "h:+1", "h:-1",
     "h:0", "h:08080", "[::1]:065535", "h:65536", "h:99999", "h: 80", "h:8_0"],
)  # fmt: skip
def test_split_host_port_is_ascii_digits(value: str) -> None:
    """Canonical ASCII digits from 1 to 65535 (``cluster.ground.parse``), nothing else."""
    with pytest.raises(ValueError, match="bad port"):
        split_host(value)


@given(host=st.text(max_size=60))
@FAST
def test_host_check_never_raises(host: str) -> None:
    for policy in (SitePolicy.for_bind("127.0.0.1", 8080), SitePolicy.for_bind("0.0.0.0", 80)):
        assert policy.host_ok(host) in (True, False)


HEADER = st.tuples(st.binary(max_size=30), st.binary(max_size=200))


@given(headers=st.lists(HEADER, max_size=8), path=st.text(max_size=100), query=st.binary())
@FAST
def test_head_checks_return_a_refusal_or_none(
    headers: list[tuple[bytes, bytes]], path: str, query: bytes
) -> None:
    scope = {"headers": headers, "path": path, "raw_path": None, "query_string": query}
    refused = head_refusal(scope)
    assert refused is None or (isinstance(refused, Refusal) and refused.status in (400, 414, 431))
    length = declared_length(headers)
    assert length is None or length >= 0


def test_head_limits() -> None:
    big = [(b"x-a", b"a" * MAX_HEADERS)]
    assert head_refusal({"headers": big, "path": "/"}) == Refusal(
        431, f"request headers larger than {MAX_HEADERS} bytes"
    )
    assert head_refusal({"headers": [(b"x-a", b"a\nb")], "path": "/"}) == Refusal(
        400, "malformed request: a header holds a line break"
    )
    assert head_refusal({"headers": [(b"host", b"x")], "path": "/api/health"}) is None
