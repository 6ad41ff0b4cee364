"""The fuzz targets, one module per parser (``fuzz.TARGETS`` names them).

Each module defines ``test_one_input(data: bytes) -> None``, which feeds ``data`` to its parser,
lets the parser's one documented error pass, and checks what the parser promises of what it
accepts. Anything it raises is a defect (``fuzz`` rule 2). This package imports no project
module (``fuzz`` rule 1); the helpers here split one input into the parts of a structured one.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["chunks", "join_chunks"]


def chunks(data: bytes, *, width: int = 2) -> Iterator[bytes]:
    """The parts of ``data`` written as ``length:width big-endian, bytes``... (a cut last part
    is what remains). The format of inputs that hold several packets or frames."""
    at = 0
    while at + width <= len(data):
        n = int.from_bytes(data[at : at + width], "big")
        yield data[at + width : at + width + n]
        at += width + n


def join_chunks(parts: list[bytes], *, width: int = 2) -> bytes:
    """The input ``chunks`` splits into ``parts`` (seeds are written with it)."""
    return b"".join(len(p).to_bytes(width, "big") + p for p in parts)
