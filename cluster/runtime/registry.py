"""The module registry: which modules a node can load, by name.

Built-in modules are listed in ``BUILTIN``; add-on modules register a ``rtsim.modules`` entry
point naming a ``Module`` subclass. ``rt_run refresh`` re-scans both.

A parent that forks nodes (the zygote) calls ``preload_modules`` once: it scans the entry
points and imports the built-in modules' code there, and the nodes it forks load from that
scan. Scanning every installed distribution's metadata costs a process about 2 MB of private
memory it never gives back; done once before the fork, the pages stay shared.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import Iterable
from importlib.metadata import entry_points

from .module import Module, ModuleContext

__all__ = ["BUILTIN", "available_modules", "load_modules", "preload_modules"]

log = logging.getLogger(__name__)

BUILTIN = {
    "rt_admin": "cluster.modules.rt_admin:AdminModule",
    "rt_bdev": "cluster.modules.rt_bdev:BdevModule",
    "rt_safe_bdev": "cluster.modules.rt_safe_bdev:SafeBdevModule",
    "rt_cte_core": "cluster.modules.rt_cte_core:CteCoreModule",
}


def available_modules() -> dict[str, str]:
    """Every module name that can be loaded, with its ``package.module:Class`` path."""
    found = dict(BUILTIN)
    for ep in entry_points(group="rtsim.modules"):
        found.setdefault(ep.name, ep.value)
    return found


_preloaded: dict[str, str] | None = None  # the scan a forking parent made (preload_modules)


def preload_modules() -> None:
    """Scan once and import the built-in modules' code, for a parent that forks nodes. Add-on
    modules are imported by each node, as before: their imports may start threads, which a
    fork must not inherit."""
    global _preloaded
    _preloaded = available_modules()
    for path in BUILTIN.values():
        # A module that fails here fails again, logged, when a node loads it.
        with contextlib.suppress(Exception):
            importlib.import_module(path.partition(":")[0])


def _import(path: str) -> type[Module]:
    mod_path, _, cls_name = path.partition(":")
    cls = getattr(importlib.import_module(mod_path), cls_name)
    if not (isinstance(cls, type) and issubclass(cls, Module)):
        raise TypeError(f"{path} is not a Module subclass")
    return cls


def load_modules(runtime: ModuleContext, names: Iterable[str]) -> dict[str, Module]:
    """Load the named modules (rt_admin always first); a module that fails is logged, skipped."""
    available = _preloaded if _preloaded is not None else available_modules()
    wanted = ["rt_admin", *[n for n in names if n != "rt_admin"]]
    loaded: dict[str, Module] = {}
    for name in wanted:
        path = available.get(name)
        if path is None:
            log.error("module %s is not installed (available: %s)", name, ", ".join(available))
            continue
        try:
            loaded[name] = _import(path)(runtime)
        except Exception as exc:
            log.error("module %s failed to load: %s", name, exc)
    return loaded
