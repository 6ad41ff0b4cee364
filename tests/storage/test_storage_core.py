"""Pure parts of the storage modules: sizes, erasure code, allocator, placement plans."""

from __future__ import annotations

import itertools
import os

import pytest

from cluster.storage import Allocator, Codec, Extent, NoSpace, format_size, parse_size, plan_moves


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("512MB", 512 << 20),
        ("16M", 16 << 20),
        ("16mb", 16 << 20),
        ("1GiB", 1 << 30),
        ("1gib", 1 << 30),
        ("4096", 4096),
        ("4096B", 4096),
        ("2K", 2048),
        ("1T", 1 << 40),
        ("1P", 1 << 50),
        ("1.5K", 1536),
        (" 8 M ", 8 << 20),
        (65536, 65536),
    ],
)
def test_parse_size_accepts(text: str | int, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "M", "12X", "1MBB", "1iB", "-5", "1 2M", "1E", "abc", "0x10"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="unparseable size"):
        parse_size(text)


def test_format_size_round_trips() -> None:
    for n in (1, 1024, 3 << 20, 1536, 5 << 30):
        assert parse_size(format_size(n)) == n


@pytest.mark.parametrize(("k", "m"), [(1, 1), (2, 1), (3, 2), (4, 3), (6, 2)])
def test_codec_recovers_any_m_losses(k: int, m: int) -> None:
    codec = Codec(k, m)
    data = [os.urandom(512) for _ in range(k)]
    stripe = data + codec.encode(data)
    for r in range(m + 1):
        for lost in itertools.combinations(range(k + m), r):
            blocks = [None if i in lost else b for i, b in enumerate(stripe)]
            assert codec.recover_data(blocks) == data
    with pytest.raises(ValueError, match="readable"):
        codec.recover_data([None] * (m + 1) + stripe[m + 1 :])


def test_one_parity_is_plain_xor_and_rows_do_not_depend_on_m() -> None:
    data = [os.urandom(64) for _ in range(3)]
    xor = int.from_bytes(data[0], "little") ^ int.from_bytes(data[1], "little")
    xor ^= int.from_bytes(data[2], "little")
    assert Codec(3, 1).encode(data) == [xor.to_bytes(64, "little")]
    assert Codec(3, 3).encode(data)[:2] == Codec(3, 2).encode(data)


def test_allocator_first_fit_coalesces_and_reports_no_space() -> None:
    a = Allocator(16 * 4096)
    x, y, z = a.allocate(4096), a.allocate(5000), a.allocate(4096)
    assert (x, y, z) == (Extent(0, 4096), Extent(4096, 8192), Extent(12288, 4096))
    a.free(y)
    a.free(x)
    assert a.free_runs()[0] == (0, 12288)
    with pytest.raises(ValueError, match="double free"):
        a.free(x)
    with pytest.raises(NoSpace):
        a.allocate(17 * 4096)
    a.grow(20 * 4096)
    assert a.remaining == 19 * 4096


def test_plan_moves_refuses_when_blobs_do_not_fit() -> None:
    assert plan_moves({"a": 5000, "b": 100}, {"t1": 8192, "t2": 4096}) == {"a": "t1", "b": "t2"}
    assert plan_moves({"a": 5000, "b": 5000}, {"t1": 8192, "t2": 4096}) is None


@pytest.mark.parametrize(
    "runs",
    [
        [(-4096, 8192)],  # before the start
        [(0, 1 << 40)],  # past the end
        [(0, 8192), (4096, 4096)],  # overlapping
        [(100, 4096)],  # not aligned
        [(0, 0)],  # empty
    ],
)
def test_loading_a_free_list_that_does_not_fit_the_device_changes_nothing(
    runs: list[tuple[int, int]],
) -> None:
    alloc = Allocator(64 * 1024)
    alloc.allocate(4096)
    before = alloc.free_runs()
    with pytest.raises(ValueError):
        alloc.load_free_runs(runs)
    assert alloc.free_runs() == before


def test_a_free_list_round_trips() -> None:
    alloc = Allocator(64 * 1024)
    alloc.allocate(8192)
    copy = Allocator(64 * 1024)
    copy.load_free_runs(alloc.free_runs())
    assert copy.free_runs() == alloc.free_runs()
