"""The flat module names of ``scenarios`` from before its grouping by job, still importable.

``scenarios.chaos`` is ``scenarios.play.chaos``, ``scenarios.spec`` is
``scenarios.format.spec``, and so on (``MOVED``): the same module object under its old name,
so an old import gets what a new one gets. New code imports the new names; this table only
keeps old code (tests, benchmarks, users' tests) working, and imports nothing of its own but
the standard library.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

__all__ = ["MOVED", "install"]

_GROUPS = {
    "format": ("bounds", "records", "spec", "steps", "storage", "values"),
    "judge": ("analysis", "checks", "properties", "suspicions", "trace"),
    "play": (
        "agents",
        "arrays",
        "attach",
        "backend",
        "chaos",
        "collect",
        "real",
        "realcluster",
        "sim",
        "simcluster",
        "waits",
    ),
    "reporting": ("aggregate", "charts", "folding", "report", "runs_page", "summary", "timeline"),
    "explore": ("drawing", "playing", "shrinking"),
}
MOVED = {
    f"scenarios.{name}": f"scenarios.{group}.{name}"
    for group, names in _GROUPS.items()
    for name in names
}


class _Moved(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old name and hands over the module of its new one."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        return None  # the module under its new name has run already


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _Moved) for f in sys.meta_path):
        sys.meta_path.append(_Moved())
