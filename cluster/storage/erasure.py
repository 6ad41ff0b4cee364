"""Erasure coding over GF(2^8): XOR for one parity block, Reed-Solomon for more.

Rules:
1. Systematic code: a stripe is ``k`` data blocks and ``m`` parity blocks, all the same length.
   Parity ``j`` is ``sum_i P[j][i]·d_i`` with ``P`` a Cauchy matrix whose columns are scaled so
   row 0 is all ones: parity 0 is the plain XOR of the data, and every square submatrix of
   ``P`` stays non-singular, so any ``k`` of the ``k+m`` blocks recover the stripe (MDS).
2. Row ``j`` of ``P`` does not depend on ``m``: raising the parity level keeps existing parity
   blocks valid; only the new block has to be computed.
3. Pure Python, fast enough: multiplying a block by a constant is one ``bytes.translate`` with
   a 256-byte table, and XOR of blocks is one big-integer XOR. No per-byte Python loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

__all__ = ["MAX_DATA", "MAX_PARITY", "Codec", "gf_div", "gf_inv", "gf_mul"]

MAX_DATA = 128  # data blocks per stripe: Cauchy points y_i = 128 + i
MAX_PARITY = 128  # parity blocks per stripe: Cauchy points x_j = j

_EXP = [0] * 512
_LOG = [0] * 256
_x = 1
for _i in range(255):
    _EXP[_i] = _x
    _LOG[_x] = _i
    _x <<= 1
    if _x & 0x100:
        _x ^= 0x11D  # the polynomial x^8+x^4+x^3+x^2+1, generator 2
for _i in range(255, 512):
    _EXP[_i] = _EXP[_i - 255]


def gf_mul(a: int, b: int) -> int:
    if a == 0 or b == 0:
        return 0
    return _EXP[_LOG[a] + _LOG[b]]


def gf_inv(a: int) -> int:
    if a == 0:
        raise ZeroDivisionError("0 has no inverse in GF(2^8)")
    return _EXP[255 - _LOG[a]]


def gf_div(a: int, b: int) -> int:
    return gf_mul(a, gf_inv(b))


@lru_cache(maxsize=256)
def _table(c: int) -> bytes:
    """The translate table multiplying every byte by ``c``."""
    return bytes(gf_mul(c, x) for x in range(256))


def _combine(coeffs: Sequence[int], blocks: Sequence[bytes], size: int) -> bytes:
    """``sum_i coeffs[i]·blocks[i]`` over GF(2^8), block-wise."""
    acc = 0
    for c, block in zip(coeffs, blocks, strict=True):
        if c == 1:
            acc ^= int.from_bytes(block, "little")
        elif c:
            acc ^= int.from_bytes(block.translate(_table(c)), "little")
    return acc.to_bytes(size, "little")


def _parity_row(j: int, k: int) -> tuple[int, ...]:
    # Cauchy 1/(x_j + y_i) with x_j = j, y_i = 128 + i; column i scaled by (x_0 + y_i) = y_i.
    return tuple(gf_div(MAX_DATA + i, j ^ (MAX_DATA + i)) for i in range(k))


def _invert(rows: Sequence[Sequence[int]]) -> list[list[int]]:
    """The inverse of a square matrix over GF(2^8) (Gauss-Jordan); ValueError if singular."""
    n = len(rows)
    aug = [list(r) + [int(i == c) for c in range(n)] for i, r in enumerate(rows)]
    for col in range(n):
        pivot = next((r for r in range(col, n) if aug[r][col]), None)
        if pivot is None:
            raise ValueError("singular matrix")
        aug[col], aug[pivot] = aug[pivot], aug[col]
        inv = gf_inv(aug[col][col])
        aug[col] = [gf_mul(inv, v) for v in aug[col]]
        for r in range(n):
            if r != col and aug[r][col]:
                f = aug[r][col]
                aug[r] = [v ^ gf_mul(f, p) for v, p in zip(aug[r], aug[col], strict=True)]
    return [row[n:] for row in aug]


class Codec:
    """Encode and repair stripes of ``k`` data and ``m`` parity blocks."""

    def __init__(self, k: int, m: int) -> None:
        if not 1 <= k <= MAX_DATA or not 0 <= m <= MAX_PARITY:
            raise ValueError(f"unsupported geometry k={k}, m={m}")
        self.k, self.m = k, m
        self.rows = [_parity_row(j, k) for j in range(m)]
        self._decoders: dict[tuple[int, ...], list[list[int]]] = {}

    def parity(self, data: Sequence[bytes], j: int) -> bytes:
        """Parity block ``j`` of the data blocks."""
        return _combine(self.rows[j], data, len(data[0]))

    def encode(self, data: Sequence[bytes]) -> list[bytes]:
        """The ``m`` parity blocks of ``k`` equal-length data blocks."""
        return [self.parity(data, j) for j in range(self.m)]

    def _generator_row(self, position: int) -> Sequence[int]:
        if position < self.k:
            return [int(i == position) for i in range(self.k)]
        return self.rows[position - self.k]

    def recover_data(self, blocks: Sequence[bytes | None]) -> list[bytes]:
        """The ``k`` data blocks from any ``k`` present blocks of ``k+m`` (None = missing)."""
        if len(blocks) != self.k + self.m:
            raise ValueError(f"expected {self.k + self.m} blocks, got {len(blocks)}")
        if all(b is not None for b in blocks[: self.k]):
            return [b for b in blocks[: self.k] if b is not None]
        present = tuple(p for p, b in enumerate(blocks) if b is not None)[: self.k]
        if len(present) < self.k:
            raise ValueError(f"only {len(present)} of the {self.k} blocks needed are readable")
        decoder = self._decoders.get(present)
        if decoder is None:
            decoder = _invert([self._generator_row(p) for p in present])
            self._decoders[present] = decoder
        chosen = [blocks[p] for p in present]
        size = len(chosen[0] or b"")
        out: list[bytes] = []
        for i in range(self.k):
            known = blocks[i]
            out.append(
                known if known is not None else _combine(decoder[i], chosen, size)  # type: ignore[arg-type]
            )
        return out

    def block(self, data: Sequence[bytes], position: int) -> bytes:
        """The block at ``position`` (data ``0..k-1``, then parity) of a full data stripe."""
        return data[position] if position < self.k else self.parity(data, position - self.k)
