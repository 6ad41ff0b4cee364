"""How an ``rt_bdev`` device is configured: its types, its capacity as written, the array
it was made for; every field checked before a device is made (``rt_bdev`` rules 5 and 6).

Shared with the modules that create devices for their members and targets
(``members``, ``rt_cte_core``).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil

from cluster.ground.parse import ParseError, size_value
from cluster.runtime import MAX_WRITER

__all__ = [
    "BDEV_TYPES",
    "BLOCK",
    "MAX_CAPACITY",
    "MEMORY_TYPES",
    "bdev_config_errors",
    "bdev_type_of",
    "free_space",
    "made_for_errors",
    "size_bytes",
]

BDEV_TYPES = ("ram", "file", "hbm", "pinned", "noop")
MEMORY_TYPES = ("ram", "hbm", "pinned")
BLOCK = 4096  # allocation unit, bytes
MAX_CAPACITY = 1 << 50  # bytes (1P), whatever the type
MAX_SIZE = 1 << 60  # bytes: larger is no size (devices have their own, smaller bounds)


def size_bytes(value: Any) -> int:
    """Bytes of a size field: an int as YAML or JSON typed it, or size text as written
    (``cluster.ground.parse.parse_size``: ASCII digits, an optional K/M/G/T/P suffix, no spaces);
    ValueError ``unparseable size '<value>'`` otherwise."""
    try:
        return size_value(value, low=0, high=MAX_SIZE)
    except ParseError:
        shown = value if isinstance(value, str) and len(value) <= 40 else "..."
        raise ValueError(f"unparseable size '{shown}'") from None


def bdev_type_of(config: Mapping[str, Any]) -> str:
    """The configured type (``ram`` when left out); not checked, see ``bdev_config_errors``."""
    raw = config.get("bdev_type")
    return "ram" if raw in (None, "") else str(raw)


def free_space(folder: Path) -> int:
    """Free bytes of the file system ``folder`` is (or will be) on."""
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            return shutil.disk_usage(candidate).free
    return 0


def bdev_config_errors(
    config: Mapping[str, Any], data_dir: Path, types: tuple[str, ...] = BDEV_TYPES
) -> dict[str, str]:
    """Errors by field for ``bdev_type`` and ``capacity`` (shared with the modules that create
    devices for their members and targets); ``data_dir`` holds the ``file`` devices."""
    errors: dict[str, str] = {}
    bdev_type = bdev_type_of(config)
    if not isinstance(config.get("bdev_type", ""), str) or bdev_type not in types:
        errors["bdev_type"] = f"unknown type '{bdev_type[:40]}' (use one of: {', '.join(types)})"
    raw = config.get("capacity", "")
    if raw in ("", None):
        errors["capacity"] = "required (a size such as 16M, 512MB or 1GiB)"
        return errors
    try:
        capacity = size_bytes(raw)
    except ValueError as exc:
        errors["capacity"] = str(exc)
        return errors
    if capacity <= 0:
        errors["capacity"] = "must be > 0"
    elif capacity < BLOCK:
        errors["capacity"] = f"must be at least {BLOCK} bytes (one block)"
    elif capacity > MAX_CAPACITY:
        errors["capacity"] = f"must be at most 1P ({MAX_CAPACITY} bytes)"
    elif bdev_type in MEMORY_TYPES and capacity > psutil.virtual_memory().total:
        errors["capacity"] = f"exceeds this host's memory ({psutil.virtual_memory().total} bytes)"
    elif bdev_type == "file" and capacity > (free := free_space(data_dir)):
        errors["capacity"] = f"exceeds the free space of the node's data folder ({free} bytes)"
    return errors


def made_for_errors(config: Mapping[str, Any]) -> dict[str, str]:
    """``rt_bdev`` rule 6: the error of a ``made_for`` that cannot name an array's writer."""
    if "made_for" not in config:
        return {}
    value = config["made_for"]
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_WRITER:
        return {"made_for": f"1 to {MAX_WRITER} characters of text naming an array's writer"}
    if not value.isascii() or not value.isprintable() or " " in value:
        return {"made_for": "printable ASCII characters only, no space"}
    return {}
