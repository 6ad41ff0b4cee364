"""Every YAML error names its line and column, the reader's too (a control character, bad
UTF-8); ``load_marked`` tells where each top-level key was written."""

from __future__ import annotations

import pytest

from cluster.ground.errors import SettingsError
from cluster.ground.safeyaml import Limits, YamlError, YamlTooLarge, load, load_marked
from cluster.ground.settings import parse_settings_text


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("a: 1\nb: \x01", (2, 4)),  # a control character
        ("a: éé\nb: x\x01", (2, 5)),  # columns count characters, not bytes
        (b"a: 1\n\xff\xfe", (2, 1)),  # not UTF-8
        ("a: 1\nb: [1, 2\nc: 3", (3, 2)),  # the parser's own errors
        ("a: 1\n  b: 2", (2, 4)),
        ("a: 1\na: 2", (2, 1)),  # ours: duplicate key
        ("k: &x 1", (1, 4)),  # ours: anchors
        ("\ud800", (1, 1)),  # a lone surrogate cannot be encoded
    ],
)
def test_every_error_has_a_line_and_column(text: str | bytes, where: tuple[int, int]) -> None:
    with pytest.raises(YamlError) as info:
        load(text)
    assert (info.value.line, info.value.column) == where
    assert str(info.value).startswith(f"line {where[0]}, column {where[1]}: ")


def test_only_the_size_refusal_has_no_position() -> None:
    with pytest.raises(YamlTooLarge) as info:
        load("a: 1\n" * 10, limits=Limits(max_bytes=8))
    assert info.value.line is None


def test_load_marked_gives_top_level_key_positions() -> None:
    data, marks = load_marked("x: 1\ny: [1, 2]\nz:\n  q: 1\n'w': {a: 1}\n5: 3\n")
    assert data == {"x": 1, "y": [1, 2], "z": {"q": 1}, "w": {"a": 1}, 5: 3}
    assert marks == {"x": (1, 1), "y": (2, 1), "z": (3, 1), "w": (5, 1), 5: (6, 1)}
    assert load_marked("{a: 1, b: 2}")[1] == {"a": (1, 2), "b": (1, 8)}
    assert load_marked("- a\n- b\n") == (["a", "b"], {})
    assert load_marked("") == (None, {})


def test_a_settings_file_error_names_the_line() -> None:
    with pytest.raises(SettingsError, match=r"rt\.yaml: not valid YAML: line 3, column 1: "):
        parse_settings_text("runtime:\n  num_threads: 2\n\x07", "rt.yaml")
