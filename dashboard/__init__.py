"""The dashboard: the HTTP layer of a node (quart-trio on hypercorn), nothing else.

    create_app(view, viz_settings) -> QuartTrio        the app, for tests and for serving
    serve_dashboard(view, viz_settings, *, task_status)
                                                       bind, serve, report (bind, port)

``view`` is a ``cluster.runtime.RuntimeView``; the modules' routes, their forms and the API
document's vocabulary are ``cluster.api``'s. Only the node process
(``cluster/node/process.py``) imports this package, lazily. See ``docs/dashboard.md``.
"""

from .app import DashboardState, create_app, dashboard_state
from .serve import serve_dashboard

__all__ = ["DashboardState", "create_app", "dashboard_state", "serve_dashboard"]
