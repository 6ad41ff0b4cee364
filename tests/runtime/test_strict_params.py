"""Request parameters the runtime reads are parsed strictly, at the boundary: routings (a
monitor's ``routing``, a pool's ``pool_query``), ``min_event_id``, pool names and the identity
fields of a compose entry. Each case here was answered 200 before (the hostile-input suite's
findings); now each is a 400 that changes nothing."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster.ground.errors import BadRequest, ValidationFailed
from cluster.ground.parse import MAX_NODE_ID
from cluster.runtime import MAX_NAME, Routing, name_error, parse_routing, routing_forwards
from cluster.runtime.peers import MAX_RANGE_COUNT, routing_targets
from cluster.runtime.runtime import Runtime


def _resolve(node: str) -> int:
    if node not in ("0", "1", "2"):
        raise BadRequest(f"unknown or malformed node id: {node}")
    return int(node)


# -- routings ---------------------------------------------------------------------------------

BAD_ROUTINGS = [
    "range:-5:10", "range:0:-1", "range:0:99999999999", "range:0:0", "range:0", "range:0:1:2",
    f"range:0:{MAX_RANGE_COUNT + 1}", f"range:{MAX_NODE_ID + 1}:1", "range:00:1", "range: 0:1",
    "dynamic:x", "dynamic:1", "local:", "local:1", "broadcast:1", " broadcast", "broadcast ",
    "broadcast\x00", "Broadcast", "direct_id:-1", "direct_id:", "direct_id: 1", "direct_id:1_0",
    "direct_id:\u0661", "direct_id:\uff11", f"direct_id:{MAX_NODE_ID + 1}", "direct_id:local",
    "direct_id:99999999999999999999", "physical:1e3", "physical:+1", "direct_hash:-1",
    "direct_hash:nan", f"direct_hash:{1 << 64}", "bogus", "x" * 5000,
]  # fmt: skip


@pytest.mark.parametrize("text", BAD_ROUTINGS, ids=lambda t: repr(t[:30]))
def test_malformed_routings_are_refused(text: str) -> None:
    # Before, range:-5:10 sliced from the end, range:0:99999999999 and dynamic:x were accepted.
    with pytest.raises(BadRequest, match="bad routing"):
        parse_routing(text)
    with pytest.raises(BadRequest, match="bad routing"):
        routing_targets(text, 0, [0, 1, 2], _resolve)


@pytest.mark.parametrize(
    ("text", "routing", "targets"),
    [
        ("", Routing("local"), [0]),
        ("local", Routing("local"), [0]),
        ("dynamic", Routing("dynamic"), [0]),
        ("broadcast", Routing("broadcast"), [0, 1, 2]),
        ("direct_id:2", Routing("direct_id", 2), [2]),
        ("physical:1", Routing("physical", 1), [1]),
        ("direct_hash:4", Routing("direct_hash", 4), [1]),
        (f"direct_hash:{(1 << 64) - 1}", Routing("direct_hash", (1 << 64) - 1), [0]),
        ("range:1:2", Routing("range", 1, 2), [1, 2]),
        (f"range:0:{MAX_RANGE_COUNT}", Routing("range", 0, MAX_RANGE_COUNT), [0, 1, 2]),
    ],
)
def test_routing_forms(text: str, routing: Routing, targets: list[int]) -> None:
    assert parse_routing(text) == routing
    assert routing_targets(text, 0, [2, 0, 1], _resolve) == targets


def test_a_routing_that_names_no_live_node_is_refused() -> None:
    with pytest.raises(BadRequest, match="names none of the 3 live nodes"):
        routing_targets("range:3:1", 0, [0, 1, 2], _resolve)
    with pytest.raises(BadRequest, match="unknown or malformed node id"):
        routing_targets("direct_id:7", 0, [0, 1, 2], _resolve)


@given(st.text(max_size=30))
def test_forward_classification_never_raises_and_parsing_raises_only_bad_request(
    text: str,
) -> None:
    """The dashboard's admission classifies every request with ``routing_forwards``: it must
    never raise, and a routing it calls local never reaches a peer once parsed."""
    forwards = routing_forwards(text)
    try:
        routing = parse_routing(text)
    except BadRequest:
        return
    if not forwards:
        assert routing.kind in ("local", "dynamic")


async def test_a_monitor_with_a_bad_routing_is_refused(runtime: Runtime) -> None:
    for text in ("range:-5:10", "range:0:99999999999", "dynamic:x"):
        with pytest.raises(BadRequest, match="bad routing"):
            await runtime.pool_monitor("1.0", "stats", text)


# -- min_event_id -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw", ["\u0661", " 1", "1 ", "1_0", "+1", "-1", "01", "1.5", "nan", "1e3", "9" * 5000, "\x00"]
)
async def test_min_event_id_is_strict(runtime: Runtime, raw: str) -> None:
    # Before, int() read "\u0661" (an Arabic-Indic one), " 1" and "1_0" as numbers.
    with pytest.raises(BadRequest, match="min_event_id"):
        runtime.admin_monitor("system_stats", {"min_event_id": raw})


async def test_min_event_id_accepts_canonical_numbers(runtime: Runtime) -> None:
    for _ in range(3):
        runtime.stats.sample()
    assert len(runtime.admin_monitor("system_stats", {"min_event_id": ""})["entries"]) == 3
    assert len(runtime.admin_monitor("system_stats", {"min_event_id": "0"})["entries"]) == 3
    entries = runtime.admin_monitor("system_stats", {"min_event_id": "2"})["entries"]
    assert [e["event_id"] for e in entries] == [2]


# -- compose: names, pool queries, identity fields --------------------------------------------


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("x" * (MAX_NAME + 1), "at most 64 characters"),
        ("x" * 5000, "at most 64 characters"),
        ("a\x00b", "printable"),
        ("a\nb", "printable"),
        ("a\u202eb", "printable"),  # right-to-left override: a format character
        ("a\u00a0b", "printable"),  # no-break space
        (" a", "no space at the start or the end"),
        ("a ", "no space at the start or the end"),
        (" ", "no space at the start or the end"),
        ("a,b", "no comma"),
        ("", "required"),
    ],
)
async def test_bad_pool_names_are_refused_and_create_nothing(
    runtime: Runtime, name: str, why: str
) -> None:
    assert why in (name_error(name) or "")
    before = json.dumps(runtime.pools_json())
    with pytest.raises(ValidationFailed) as info:
        await runtime.compose("rt_bdev", name, "800.0", {"capacity": "16K"})
    assert list(info.value.errors) == ["pool_name"]
    assert why in info.value.errors["pool_name"]
    assert json.dumps(runtime.pools_json()) == before


@pytest.mark.parametrize("name", ["a", "x" * MAX_NAME, "demo ram", "été-1_b.c", "\u6f22"])
def test_good_pool_names(name: str) -> None:
    assert name_error(name) is None


@pytest.mark.parametrize(
    "query", ["direct_id:-1", "range:-5:10", "dynamic:x", "sideways", " local", "local\x00"]
)
async def test_bad_pool_queries_are_refused_and_create_nothing(
    runtime: Runtime, query: str
) -> None:
    before = json.dumps(runtime.pools_json())
    with pytest.raises(ValidationFailed) as info:
        await runtime.compose("rt_bdev", "b", "800.0", {"capacity": "16K"}, pool_query=query)
    assert list(info.value.errors) == ["pool_query"]
    assert json.dumps(runtime.pools_json()) == before


async def test_good_pool_queries_compose(runtime: Runtime) -> None:
    for i, query in enumerate(["local", "broadcast", "direct_id:0", "range:0:1"]):
        body = await runtime.compose(
            "rt_bdev", f"b{i}", f"80{i}.0", {"capacity": "16K"}, pool_query=query
        )
        assert body["ok"] is True


async def test_compose_entry_identity_fields_are_text(runtime: Runtime) -> None:
    # A YAML pool id 800.10 is the float 800.1: it is refused, not composed as 800.1.
    entry = {"mod_name": "rt_bdev", "pool_name": "b", "pool_id": 800.10, "capacity": "16K"}
    with pytest.raises(ValidationFailed) as info:
        await runtime.compose_entry(entry)
    assert info.value.errors == {"pool_id": "must be text (quote it in YAML), not float"}
    with pytest.raises(ValidationFailed) as info:
        await runtime.compose_entry({**entry, "pool_id": "800.10", "pool_name": ["b"]})
    assert list(info.value.errors) == ["pool_name"]
    assert [p["pool_id"] for p in runtime.pools_json()["pools"]] == ["1.0"]
    body = await runtime.compose_entry({**entry, "pool_id": "800.10"})
    assert body["pool_id"] == "800.10"
