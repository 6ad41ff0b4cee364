"""Go's ``compress/lzw`` (LSB, 8-bit literals) as ``swim.memberlist.lzw`` speaks it: round
trips across table clears, Go's own special case, and the refusals of rule 1 (an undefined
code, a missing end code, output past the bound, found while the output grows). That Go's bytes
compress again byte for byte is pinned on real captures in ``test_memberlist_codec.py``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from swim.memberlist import lzw

CLEAR, EOF = 256, 257


class Counted(bytes):
    """Bytes that count how many of them a reader took."""

    taken = 0

    def __iter__(self) -> Iterator[int]:
        for b in super().__iter__():
            self.taken += 1
            yield b


RNG = random.Random(20240607)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"a",
        bytes(range(256)),
        b"abc" * 20_000,
        b"\x00" * 100_000,
        RNG.randbytes(20_000),
        bytes(RNG.choice(b"ab") for _ in range(50_000)),
    ],
    ids=["empty", "one", "every-byte", "abc", "zeros", "random", "two-letters"],
)
def test_compress_then_decompress_gives_the_data_back(data: bytes) -> None:
    packed = lzw.compress(data)
    assert (packed[0], packed[1] & 1) == (0, 1)  # 9 bits of 256: a clear code first (rule 2)
    assert lzw.decompress(packed, len(data)) == data


def test_the_table_clears_past_4096_codes_on_both_sides(monkeypatch: pytest.MonkeyPatch) -> None:
    clears = []
    grow = lzw._Writer.grow

    def counted(self: lzw._Writer) -> bool:
        kept = grow(self)
        clears.append(not kept)
        return kept

    monkeypatch.setattr(lzw._Writer, "grow", counted)
    data = RNG.randbytes(30_000)  # random bytes: about one code each
    assert lzw.decompress(lzw.compress(data), len(data)) == data
    assert sum(clears) >= 5, "the writer never cleared a full table"


def test_a_code_defined_by_its_own_step_expands_as_go_expands_it() -> None:
    # 258 is being defined as the code is read: the last string and its own first byte.
    assert lzw.decompress(lzw.pack_codes([CLEAR, 65, 258, EOF]), 10) == b"AAA"
    assert lzw.decompress(lzw.pack_codes([65, 66, 258, EOF]), 10) == b"ABAB"  # no clear first


@pytest.mark.parametrize(
    "codes",
    [[CLEAR, 65, 300, EOF], [CLEAR, 258, EOF], [CLEAR, 65, 259, EOF], [CLEAR, 511]],
    ids=["far-ahead", "nothing-yet", "one-ahead", "past-the-table"],
)
def test_a_code_not_defined_yet_is_refused(codes: list[int]) -> None:
    with pytest.raises(lzw.LzwError, match="not defined"):
        lzw.decompress(lzw.pack_codes(codes), 1000)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        lzw.pack_codes([CLEAR]),
        lzw.pack_codes([CLEAR, 65, 66]),
        lzw.compress(b"hello world" * 50)[:-2],
    ],
    ids=["nothing", "clear-only", "literals", "cut"],
)
def test_a_stream_without_its_end_code_is_refused(data: bytes) -> None:
    with pytest.raises(lzw.LzwError, match="ends before its end code"):
        lzw.decompress(data, 1 << 20)


def test_output_past_the_bound_stops_the_stream_early() -> None:
    bomb = lzw.compress(b"\x00" * 500_000)
    assert len(bomb) < 1500  # it expands 400-fold
    assert len(lzw.decompress(bomb, 500_000)) == 500_000
    counted = Counted(bomb)
    with pytest.raises(lzw.LzwError, match="expands beyond 10000 bytes"):
        lzw.decompress(counted, 10_000)
    assert counted.taken < len(bomb) // 5, f"read {counted.taken} of {len(bomb)} bytes"
    with pytest.raises(lzw.LzwError, match="expands beyond 1 bytes"):
        lzw.decompress(lzw.pack_codes([CLEAR, 65, 66, EOF]), 1)
    assert lzw.decompress(lzw.pack_codes([CLEAR, 65, 66, EOF]), 2) == b"AB"


def test_any_bytes_decompress_or_raise_lzw_error_only() -> None:
    rng = random.Random(7)
    taken = 0
    for n in range(3000):
        data = rng.randbytes(rng.randrange(1, 64))
        if n % 2:
            data = lzw.pack_codes([CLEAR, 65]) + data
        try:
            out = lzw.decompress(data, 4096)
        except lzw.LzwError:
            continue
        taken += 1
        assert len(out) <= 4096
    assert taken  # some random streams are valid: the loop saw both outcomes
