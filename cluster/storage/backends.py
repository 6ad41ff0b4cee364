"""Where a block device's bytes live: anonymous memory, a sparse file, or nowhere.

Rules:
1. Offsets and lengths are bytes; callers check bounds before calling.
2. ``RamStore`` maps anonymous memory: pages cost RSS only once written, so a hundred demo nodes
   with a few MiB of devices each stay small until their workload has touched every page.
3. ``FileStore`` keeps a sparse file of ``capacity`` bytes; a new device starts empty (the file
   is truncated), and closing it keeps the file (destroying a pool deletes no data).
4. ``export_chunks`` / ``import_chunks`` carry only the non-zero chunks, for ``rt_run migrate``.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .erasure import Buffer, load_numpy

if TYPE_CHECKING:
    from .erasure import Bytes as Rows

__all__ = [
    "FileStore",
    "NoopStore",
    "RamStore",
    "Store",
    "export_chunks",
    "import_chunks",
    "open_store",
]

EXPORT_CHUNK = 64 * 1024


class Store(Protocol):
    capacity: int

    def read(self, offset: int, size: int) -> bytes: ...
    def read_into(self, offset: int, out: memoryview) -> None: ...
    def write_rows(self, offset: int, rows: Rows) -> None: ...
    def write(self, offset: int, data: Buffer) -> None: ...
    def close(self) -> None: ...


class RamStore:
    """Bytes in anonymous memory (``ram``, ``hbm`` and ``pinned`` devices)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._map = mmap.mmap(-1, capacity)
        self._view = memoryview(self._map)  # released before the map is closed

    def read(self, offset: int, size: int) -> bytes:
        return self._map[offset : offset + size]

    def read_into(self, offset: int, out: memoryview) -> None:
        out[:] = self._view[offset : offset + len(out)]

    def write(self, offset: int, data: Buffer) -> None:
        self._map[offset : offset + len(data)] = data

    def write_rows(self, offset: int, rows: Rows) -> None:
        np = load_numpy()  # a view of the map for one copy from strided rows, then dropped
        dst = np.frombuffer(self._map, np.uint8, count=rows.size, offset=offset)
        dst.reshape(rows.shape)[:] = rows
        del dst

    def close(self) -> None:
        self._view.release()
        self._map.close()


class FileStore:
    """Bytes in a sparse file, created (empty) when the device is."""

    def __init__(self, path: Path, capacity: int) -> None:
        self.capacity = capacity
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        os.ftruncate(self._fd, 0)
        os.ftruncate(self._fd, capacity)

    def read(self, offset: int, size: int) -> bytes:
        data = os.pread(self._fd, size, offset)
        return data if len(data) == size else data.ljust(size, b"\0")

    def read_into(self, offset: int, out: memoryview) -> None:
        while out:
            n = os.preadv(self._fd, [out], offset)
            if n == 0:  # past the end of the file: zeros
                out[:] = bytes(len(out))
                return
            out, offset = out[n:], offset + n

    def write_rows(self, offset: int, rows: Rows) -> None:
        self.write(offset, rows.tobytes())

    def write(self, offset: int, data: Buffer) -> None:
        view = memoryview(data)
        while view:
            n = os.pwrite(self._fd, view, offset)
            view, offset = view[n:], offset + n

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class NoopStore:
    """Discards writes and reads zeros: the cost of the I/O path without the device."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity

    def read(self, offset: int, size: int) -> bytes:
        return bytes(size)

    def read_into(self, offset: int, out: memoryview) -> None:
        out[:] = bytes(len(out))

    def write(self, offset: int, data: Buffer) -> None:
        pass

    def write_rows(self, offset: int, rows: Rows) -> None:
        pass

    def close(self) -> None:
        pass


def open_store(bdev_type: str, capacity: int, path: Path) -> Store:
    """The store for a device of ``bdev_type`` (``path`` is used by ``file`` only)."""
    if bdev_type == "file":
        return FileStore(path, capacity)
    if bdev_type == "noop":
        return NoopStore(capacity)
    return RamStore(capacity)


def export_chunks(store: Store) -> Iterator[tuple[int, bytes]]:
    """``(offset, bytes)`` for every non-zero chunk of the store."""
    zero = bytes(EXPORT_CHUNK)
    for offset in range(0, store.capacity, EXPORT_CHUNK):
        chunk = store.read(offset, min(EXPORT_CHUNK, store.capacity - offset))
        if chunk != zero[: len(chunk)]:
            yield offset, chunk


def import_chunks(store: Store, chunks: Iterable[tuple[int, bytes]]) -> None:
    for offset, chunk in chunks:
        if offset >= 0 and offset + len(chunk) <= store.capacity:
            store.write(offset, bytes(chunk))
