"""The one YAML loader: limits by construction, plain data out, one error type with a place."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.ground import safeyaml
from cluster.ground.safeyaml import Limits, YamlError, YamlTooLarge, load, load_file
from tests.support.yamlbombs import ALIAS_BOMB

PLAIN = (str, int, float, bool, type(None))


def is_plain(value: object) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, PLAIN) and is_plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(is_plain(v) for v in value)
    return isinstance(value, PLAIN)


def test_plain_documents_load_as_pyyaml_loads_them() -> None:
    text = "a: 1\nb: [1, 2.5, true, null, x, '7']\nc: {d: 0x1F, e: 1_000, f: .inf}\n"
    assert load(text) == yaml.safe_load(text)
    assert load("") is None
    assert load(b"- 1\n- 2\n") == [1, 2]


def test_the_alias_bomb_is_refused_at_its_first_anchor() -> None:
    assert len(ALIAS_BOMB) < 400
    with pytest.raises(YamlError, match="anchors") as info:
        load(ALIAS_BOMB)
    assert (info.value.line, info.value.column) == (1, 4)
    assert str(info.value).startswith("line 1, column 4: ")


@pytest.mark.parametrize(
    ("text", "needle", "line"),
    [
        ("a: 1\nb: *x\n", "aliases", 2),
        ("a: &x 1\n", "anchors", 1),
        ("a:\n  <<: {b: 1}\n", "merge keys", 2),
        ("a: 1\nb: 2\na: 3\n", "duplicate key 'a'", 3),
        ("? [1, 2]\n: x\n", "must be a scalar", 1),
        ("a: !!binary aGVsbG8=\n", "binary is not allowed", 1),
        ("a: !!set {x}\n", "set is not allowed", 1),
        ("a: !!python/object:os.system x\n", "not allowed", 1),
        ("a: !custom x\n", "tag !custom is not allowed", 1),
        ("a: !!int x\n", "not a valid int", 1),
        ("a: !!int\n", "not a valid int", 1),
        ("--- 1\n--- 2\n", "one document", 2),
        ("a: [1,\n", "expected", 2),
        ("a: b: c\n", "mapping values are not allowed", 1),
    ],
)
def test_refusals_carry_line_and_column(text: str, needle: str, line: int) -> None:
    with pytest.raises(YamlError, match=needle) as info:
        load(text)
    assert info.value.line == line
    assert info.value.column is not None
    assert info.value.column >= 1


def test_a_date_stays_the_text_it_was_written_as() -> None:
    assert yaml.safe_load("d: 2024-01-01") == {"d": datetime.date(2024, 1, 1)}  # what it was
    assert load("d: 2024-01-01\nt: 2001-12-14t21:59:43.10-05:00\n") == {
        "d": "2024-01-01",
        "t": "2001-12-14t21:59:43.10-05:00",
    }


@pytest.fixture(params=["libyaml", "python"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The loader runs on libyaml when PyYAML has it, else on the pure-Python parser: the
    refusals below are the same on both, and on every libyaml (older ones have no nesting limit,
    6.0.4's refuses about 1,000 levels itself, reading 1,024 characters ahead)."""
    if request.param == "python":
        monkeypatch.setattr(safeyaml, "_Loader", yaml.SafeLoader)
    elif not yaml.__with_libyaml__:
        pytest.skip("this PyYAML has no libyaml")
    return str(request.param)


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("[" * 100_000 + "]" * 100_000, 1, 33),  # PyYAML's C composer crashes on this
        ("{a: " * 5_000 + "1" + "}" * 5_000, 1, 129),
        ("- " * 5_000 + "x", 1, 65),  # block nesting on one line
        ("a: 1\nb: 2\nc: " + "[" * 3_000 + "]" * 3_000, 3, 35),
        ('k: "' + "x" * 900_000 + '"\nz: ' + "[" * 2_000 + "]" * 2_000, 2, 35),
    ],
    ids=["flow-list", "flow-map", "block", "third-line", "after-900k"],
)
def test_deep_nesting_is_refused_at_our_limit_on_any_parser(
    parser: str, text: str, line: int, column: int
) -> None:
    with pytest.raises(YamlError, match="nested deeper than 32 levels") as info:
        load(text)
    assert (info.value.line, info.value.column) == (line, column)
    assert load("[" * 32 + "]" * 32) is not None


def test_other_limits_before_the_deep_part_still_speak_first(parser: str) -> None:
    text = "k: [" + ",".join(["1"] * 150_000) + "]\nz: " + "[" * 5_000 + "]" * 5_000
    with pytest.raises(YamlError, match="more than 100000 values"):
        load(text)


def test_size_and_node_limits() -> None:
    small = Limits(max_bytes=100, max_depth=4, max_nodes=10)
    with pytest.raises(YamlError, match="larger than 100 bytes"):
        load("x" * 101, small)
    with pytest.raises(YamlError, match="larger than 100 bytes"):
        load("é" * 51, small)  # 102 bytes in UTF-8
    with pytest.raises(YamlError, match="more than 10 values"):
        load("[" + ",".join("1" * 10) + "]", small)
    with pytest.raises(YamlError, match="nested deeper than 4"):
        load("a: {b: {c: {d: {e: 1}}}}", small)


def test_a_file_larger_than_the_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text("# " + "x" * 200 + "\n")
    with pytest.raises(YamlTooLarge, match="larger than 100 bytes"):
        load_file(path, Limits(max_bytes=100))
    assert load_file(path) is None


@pytest.mark.parametrize("data", [b"a: \xff\xfe\n", "a: \ud800\n", "a: \x00\n", "\x07"], ids=repr)
def test_bad_text_is_a_yaml_error(data: str | bytes) -> None:
    with pytest.raises(YamlError):
        load(data)


def test_huge_integers_are_refused_not_a_value_error_from_int() -> None:
    with pytest.raises(YamlError, match="not a valid int"):
        load("x: " + "9" * 5000)


YAMLISH = st.lists(
    st.sampled_from(
        [
            *"ab:-[]{},&*!?|>'\"#%@`\n \t019.e+_~<=\\",
            "!!binary",
            "!!set",
            "!!int",
            "!!float",
            "---",
            "...",
            "<<",
            "2024-01-01",
            "\x00",
            "é",
            "\ufeff",
            "%YAML 1.1\n",
            "&a",
            "*a",
        ]
    ),
    max_size=40,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.one_of(YAMLISH, st.text(max_size=60)))
def test_any_text_is_plain_data_or_one_yaml_error(text: str) -> None:
    try:
        value = load(text)
    except YamlError as exc:
        line = exc.line
    else:
        assert is_plain(value)
        return
    assert line is None or line >= 1


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(JSONISH)
def test_plain_data_round_trips_through_yaml(value: object) -> None:
    assert load(yaml.safe_dump(value)) == value


def test_no_other_module_parses_yaml() -> None:
    """Every door uses this loader: nothing else in the packages calls PyYAML's loaders."""
    root = Path(__file__).resolve().parents[2]
    loaders = (
        "safe_load",
        "yaml.load(",
        "full_load",
        "unsafe_load",
        "yaml.parse(",
        "yaml.compose(",
    )
    found = [
        f"{path.relative_to(root)}: {name}"
        for package in ("cluster", "dashboard", "scenarios", "swim")
        for path in sorted((root / package).rglob("*.py"))
        if path.name != "safeyaml.py"
        for name in loaders
        if name in path.read_text()
    ]
    assert not found
