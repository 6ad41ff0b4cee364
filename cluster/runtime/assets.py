"""Where a module's page assets are: ``RT_VIZ_PATH`` roots first, then the source checkout's
``viz/<mod_name>`` ("built, not installed"), then ``<prefix>/share/rt/viz/<mod_name>``."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

__all__ = ["find_assets", "viz_roots"]

_SOURCE_VIZ = Path(__file__).resolve().parents[2] / "viz"


def viz_roots(extra: Iterable[str] = ()) -> list[Path]:
    roots = [Path(p).expanduser() for p in extra]
    roots.append(_SOURCE_VIZ)
    roots.append(Path(sys.prefix) / "share" / "rt" / "viz")
    return roots


def find_assets(mod_name: str, extra_roots: Iterable[str] = ()) -> Path | None:
    """The first ``<root>/<mod_name>`` folder that exists, or None."""
    for root in viz_roots(extra_roots):
        candidate = root / mod_name
        if candidate.is_dir():
            return candidate
    return None
