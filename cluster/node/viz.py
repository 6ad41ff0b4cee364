"""The dashboard a node serves, found by name: the node imports no HTTP layer.

Rules:
1. The dashboard is a ``ServeDashboard`` callable, given to the node as itself or by a
   ``"module:attribute"`` name (``DASHBOARD``: the project's ``dashboard.serve_dashboard``,
   as the registry names the modules). A name is resolved once: in a parent that forks nodes,
   before it forks (``node.process.preload``), else when the first node starts one.
2. Without the HTTP libraries (``HTTP_LIBRARIES``) a node runs with no dashboard and says so
   as a warning, whether or not the settings enable it; the name is then never imported.
3. A port that cannot be bound is a logged warning and the node runs on without a dashboard;
   once bound, the runtime knows its address (``viz_address``).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from collections.abc import Awaitable
from typing import Protocol

import trio

from cluster.ground.settings import VizSettings
from cluster.runtime import Runtime, RuntimeView

__all__ = ["DASHBOARD", "HTTP_LIBRARIES", "ServeDashboard", "resolve_dashboard", "start_dashboard"]

log = logging.getLogger(__name__)
DASHBOARD = "dashboard:serve_dashboard"
HTTP_LIBRARIES = ("hypercorn", "quart_trio")


class ServeDashboard(Protocol):
    """Serve ``runtime``'s dashboard until cancelled; report ``(bind, port)`` once bound."""

    def __call__(
        self,
        runtime: RuntimeView,
        viz_settings: VizSettings,
        *,
        task_status: trio.TaskStatus[tuple[str, int]] = ...,
    ) -> Awaitable[None]: ...


_resolved: dict[str, ServeDashboard] = {}


def http_library_missing() -> str | None:
    """The first of ``HTTP_LIBRARIES`` that is not installed, or None."""
    for name in HTTP_LIBRARIES:
        try:
            if importlib.util.find_spec(name) is None:
                return name
        except (ImportError, ValueError):
            return name
    return None


def resolve_dashboard(name: str = DASHBOARD) -> ServeDashboard:
    """The callable ``name`` (``"module:attribute"``) names, imported once (rule 1)."""
    if name not in _resolved:
        module, _, attribute = name.partition(":")
        serve: ServeDashboard = getattr(importlib.import_module(module), attribute)
        _resolved[name] = serve
    return _resolved[name]


async def start_dashboard(
    runtime: Runtime,
    viz: VizSettings,
    nursery: trio.Nursery,
    dashboard: ServeDashboard | str = DASHBOARD,
) -> None:
    """Start the dashboard in ``nursery`` when the settings enable it (rules 2 and 3)."""
    missing = http_library_missing()
    if missing is not None:
        log.warning(
            "Viz: runtime built without the HTTP server library (%s); dashboard absent", missing
        )
        return
    if not viz.enabled:
        return
    serve = resolve_dashboard(dashboard) if isinstance(dashboard, str) else dashboard
    try:
        bound = await nursery.start(serve, runtime, viz)
    except OSError as exc:
        log.warning(
            "Viz: could not listen on %s:%d (%s); dashboard disabled",
            viz.bind,
            viz.port,
            exc.strerror or exc,
        )
        return
    runtime.viz_address = (bound[0], bound[1])
    log.info("Viz: dashboard listening at http://%s:%d", bound[0], bound[1])
