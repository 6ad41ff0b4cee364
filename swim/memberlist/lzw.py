"""Go's ``compress/lzw`` in the LSB order with 8-bit literals: how memberlist compresses.

A code stream starts at 9 bits a code; codes 0-255 are literals, 256 clears the table, 257
ends the stream, and the table grows from 258. The width grows by one bit each time the next
code to be defined reaches a power of two, up to 12 bits; a full table waits for a clear.

Rules:
1. ``decompress`` raises only ``LzwError``: a code that is not defined yet, a stream that ends
   before its end code, or output beyond ``max_out`` (a small stream can expand a lot: the
   bound is checked as the output grows, never after).
2. ``compress`` writes what Go's writer writes: a clear code first, the codes, the end code.
"""

from __future__ import annotations

__all__ = ["LzwError", "compress", "decompress", "pack_codes"]

_CLEAR, _EOF, _FIRST = 256, 257, 258
_MAX_WIDTH = 12
_MAX_CODE = (1 << _MAX_WIDTH) - 1


class LzwError(Exception):
    """A malformed or oversized LZW stream."""


def decompress(data: bytes, max_out: int) -> bytes:
    """The bytes ``data`` expands to; ``LzwError`` if malformed or longer than ``max_out``."""
    out = bytearray()
    table: list[bytes] = [bytes([i]) for i in range(256)] + [b"", b""]
    width, hi, last = 9, _EOF, b""
    acc = nbits = 0
    it = iter(data)
    while True:
        while nbits < width:
            byte = next(it, None)
            if byte is None:
                raise LzwError("the stream ends before its end code")
            acc |= byte << nbits
            nbits += 8
        code = acc & ((1 << width) - 1)
        acc >>= width
        nbits -= width
        if code == _CLEAR:
            del table[_FIRST:]
            width, hi, last = 9, _EOF, b""
            continue
        if code == _EOF:
            return bytes(out)
        if code < len(table):
            entry = table[code]
        elif code == len(table) and last:
            entry = last + last[:1]  # the code this very step defines
        else:
            raise LzwError(f"code {code} is not defined")
        out += entry
        if len(out) > max_out:
            raise LzwError(f"expands beyond {max_out} bytes")
        if last:
            table.append(last + entry[:1])
        hi += 1
        last = entry
        if hi >= 1 << width:
            if width < _MAX_WIDTH:
                width += 1
            else:
                hi -= 1
                last = b""  # a full table: nothing more is defined until a clear code


def compress(data: bytes) -> bytes:
    """``data`` as Go's LZW writer (LSB, 8-bit literals) writes it."""
    writer = _Writer()
    writer.put(_CLEAR)
    if data:
        codes: dict[bytes, int] = {}
        current = data[:1]
        for i in range(1, len(data)):
            nxt = current + data[i : i + 1]
            if nxt in codes:
                current = nxt
                continue
            writer.put(current[0] if len(current) == 1 else codes[current])
            if writer.grow():
                codes[nxt] = writer.hi
            else:
                codes.clear()
            current = data[i : i + 1]
        writer.put(current[0] if len(current) == 1 else codes[current])
        writer.grow()
    writer.put(_EOF)
    return writer.finish()


def pack_codes(codes: list[int], width: int = 9) -> bytes:
    """``codes`` of ``width`` bits each, LSB first, as they are (no clear or end code added):
    a hand-made stream, for tests and fuzz seeds."""
    writer = _Writer()
    writer.width = width
    for code in codes:
        writer.put(code)
    return writer.finish()


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()
        self.acc = self.nbits = 0
        self.width, self.hi = 9, _EOF

    def put(self, code: int) -> None:
        self.acc |= code << self.nbits
        self.nbits += self.width
        while self.nbits >= 8:
            self.out.append(self.acc & 0xFF)
            self.acc >>= 8
            self.nbits -= 8

    def grow(self) -> bool:
        """One more code is defined; False when the table was full and has been cleared."""
        self.hi += 1
        if self.hi == 1 << self.width:
            self.width += 1
        if self.hi == _MAX_CODE:
            self.put(_CLEAR)
            self.width, self.hi = 9, _EOF
            return False
        return True

    def finish(self) -> bytes:
        if self.nbits:
            self.out.append(self.acc & 0xFF)
        return bytes(self.out)
