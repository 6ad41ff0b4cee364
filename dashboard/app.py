"""The app factory: ``create_app(runtime, viz_settings)`` builds one dashboard app, no globals.

Rules:
1. Blueprints: ``rt_admin`` (node, pool and page routes), one per other loaded module (its
   ``/api/mod/<mod_name>/`` routes), and the retired-route stubs. Order of matching: registered
   routes, then assets (``/viz/<mod>/...``), then ``/``, else the JSON 404.
2. Before any handler: the Host, cross-site and body-size rules of ``dashboard.safety``.
3. Around every request: admission (its whole body first, within size and time limits, then
   one of ``max_threads`` slots; ``dashboard.admission``).
4. After every request (``ResponseTap``): counted in ``/metrics`` (by the status answered;
   ``CLIENT_GONE``, 499, for a client that disconnected before any answer, never 500);
   security headers; never a CORS header; an exception escaping the app before it answered
   is still a JSON answer (``dashboard.errors.escaped_answer``).
5. Every body is JSON (``dashboard.jsonio``) except pages and ``/metrics``.
6. The plain ``GET /api/health`` is answered at the door, before admission and the app
   (``dashboard.door``): the same answer, counted the same, with the same headers.
7. A served dashboard builds its quart app (blueprints, routes, about 3 MB of a node's own
   memory) on the first request that passes the door, not at start: a node nobody watches
   never builds it (issue 33). The door, admission and metrics exist from the start, so
   every request is counted from the first, and the assets are logged at start as before.
"""

from __future__ import annotations

import encodings.idna  # noqa: F401  werkzeug's Host codec: loaded now, not under EMFILE
import logging
from dataclasses import dataclass
from typing import Any

import trio
from quart.globals import request_ctx
from quart_trio import QuartTrio
from werkzeug.exceptions import RequestEntityTooLarge

from cluster.ground.settings import VizSettings
from cluster.runtime import FORWARD_TIMEOUT, RuntimeView

from .admin import ADMIN, admin_blueprint
from .admission import HEALTH_PATH, Admission, shielded_end
from .assets import mounts
from .door import HealthDoor
from .errors import MAX_BODY, escaped_answer, install_error_handlers, send_error
from .intake import BODY_TIMEOUT
from .jsonio import JsonProvider
from .metrics import DashboardMetrics
from .modules import module_blueprint
from .retired import retired_blueprint
from .safety import SAFE_METHODS, SitePolicy

__all__ = ["CLIENT_GONE", "Dashboard", "DashboardState", "create_app", "dashboard_state"]

log = logging.getLogger(__name__)
EXTENSION = "rtsim"
ROUTE_KEY = "rtsim.route"  # the matched rule, left in the ASGI scope for ResponseTap
CLIENT_GONE = 499  # the status counted for a client that left before its answer (nginx's)
_SECURITY_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),  # no clickjacking of the destroy buttons
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"referrer-policy", b"same-origin"),
)


class ResponseTap:
    """ASGI middleware for rule 4: counts each answer by route and status, adds the security
    headers, answers what escaped the app. At the ASGI layer, because werkzeug header objects
    cost more per request than the rest of a small JSON answer."""

    def __init__(self, app: Any, metrics: DashboardMetrics, door: HealthDoor | None = None) -> None:
        self.app = app
        self.metrics = metrics
        self.door = door

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.door is not None and self.door.takes(scope):  # rule 6
            await self.door.answer(scope, _secured(shielded_end(send)))
            self.metrics.count(HEALTH_PATH, scope["method"], 200)
            return
        status: int | None = None  # of the answer started
        gone = False  # the client went away (http.disconnect received)

        secured = _secured(send)

        async def tapped(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await secured(message)

        async def watched() -> Any:
            nonlocal gone
            message = await receive()
            gone = gone or message.get("type") == "http.disconnect"
            return message

        try:
            await self.app(scope, watched, tapped)
        except Exception as exc:
            if status is not None:
                raise
            await send_error(tapped, *escaped_answer(exc, scope["method"], scope["path"]))
        finally:
            if status is None:  # no answer: the client left (or hypercorn sends a bare 500)
                status = CLIENT_GONE if gone else 500
            self.metrics.count(scope.get(ROUTE_KEY), scope.get("method", ""), status)


def _secured(send: Any) -> Any:
    """``send`` adding the security headers to the answer's start (rule 4)."""

    async def with_headers(message: Any) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *_SECURITY_HEADERS]}
        await send(message)

    return with_headers


@dataclass(frozen=True, slots=True)
class DashboardState:
    """What one app holds: the runtime it serves and its own policy, metrics, admission."""

    runtime: RuntimeView
    viz: VizSettings
    policy: SitePolicy
    metrics: DashboardMetrics
    admission: Admission


def dashboard_state(app: QuartTrio) -> DashboardState:
    state: DashboardState = app.extensions[EXTENSION]
    return state


class Dashboard:
    """One node's dashboard (rule 7): the door, admission and metrics from the start; the
    quart app (``app``) built on first use. ``nursery`` is set by whoever serves it and
    handles the ASGI lifespan (``dashboard.serve``); an app built while served is started
    (``QuartTrio.startup``) in that nursery before it answers."""

    def __init__(self, runtime: RuntimeView, viz_settings: VizSettings) -> None:
        self.runtime = runtime
        self.viz = viz_settings
        self.admission = Admission(
            self._to_app,
            viz_settings.max_threads,
            lambda: runtime.node_id,
            # the runtime's bound on a forward (tests shorten it on the runtime)
            lambda: float(getattr(runtime, "forward_timeout", FORWARD_TIMEOUT)),
        )
        self.metrics = DashboardMetrics(runtime, self.admission.statistics)
        vs = viz_settings
        self.policy = SitePolicy.for_bind(vs.bind, vs.port, vs.allowed_hosts)
        self.asgi = ResponseTap(self.admission, self.metrics, HealthDoor(runtime, self.policy))
        self.nursery: trio.Nursery | None = None
        self._app: QuartTrio | None = None
        self._app_asgi: Any = None  # the quart app's own ASGI entry, behind admission
        self._ready: trio.Event | None = None  # set once the app is built (and started)
        for mod, folder in sorted(mounts(runtime).items()):
            log.info("Viz: mounted %s assets at /viz/%s (from %s)", mod, mod, folder)

    @property
    def app(self) -> QuartTrio:
        """The quart app, built now when it was not yet."""
        if self._app is None:
            app = _quart_app(self)
            self._app_asgi = app.asgi_app
            app.asgi_app = self.asgi  # type: ignore[method-assign,assignment]
            self._app = app
        return self._app

    @property
    def started(self) -> bool:
        """Was the app built and started in the server's nursery?"""
        return self._ready is not None and self._ready.is_set() and self.nursery is not None

    async def _to_app(self, scope: Any, receive: Any, send: Any) -> None:
        if self._ready is None:
            self._ready = trio.Event()
            try:
                app = self.app
                if self.nursery is not None:
                    app.nursery = self.nursery
                    await app.startup()
            finally:
                self._ready.set()
        await self._ready.wait()
        if self._app_asgi is None:
            raise RuntimeError("the dashboard app could not be built")
        await self._app_asgi(scope, receive, send)


def create_app(runtime: RuntimeView, viz_settings: VizSettings) -> QuartTrio:
    """A QuartTrio app serving ``runtime``; ``viz_settings.port`` is the bound port."""
    return Dashboard(runtime, viz_settings).app


def _quart_app(dashboard: Dashboard) -> QuartTrio:
    """Rules 1-5: the app of ``dashboard``, with its parts."""
    runtime, viz_settings = dashboard.runtime, dashboard.viz
    policy, metrics, admission = dashboard.policy, dashboard.metrics, dashboard.admission

    app = QuartTrio("dashboard", static_folder=None, template_folder=None)
    app.json = JsonProvider(app)
    app.config.update(
        MAX_CONTENT_LENGTH=MAX_BODY,
        BODY_TIMEOUT=BODY_TIMEOUT,  # the body is complete before admission; a second guard
        PROVIDE_AUTOMATIC_OPTIONS=True,
    )
    app.url_map.strict_slashes = False  # a trailing slash is ignored
    app.url_map.merge_slashes = False  # "//" is not redirected; assets refuse it instead

    app.extensions[EXTENSION] = DashboardState(runtime, viz_settings, policy, metrics, admission)

    install_error_handlers(app)

    @app.before_request
    async def guard() -> None:
        req = request_ctx.request  # the request itself: one context lookup, not one per use
        rule = req.url_rule
        scope: Any = req.scope
        scope[ROUTE_KEY] = rule.rule if rule is not None else None  # for ResponseTap
        policy.check(req)
        if req.method not in SAFE_METHODS:  # GET bodies are never read
            length = req.content_length
            if length is not None and length > MAX_BODY:
                raise RequestEntityTooLarge()
            # The body arrived whole before admission (dashboard.intake); reading it here
            # keeps the 413 for an app called without the intake (a second guard).
            await req.get_data(cache=True, as_text=False, parse_form_data=False)

    app.register_blueprint(admin_blueprint(runtime, metrics))
    for name, module in runtime.modules.items():
        if name != ADMIN:
            app.register_blueprint(module_blueprint(runtime, module))
    app.register_blueprint(retired_blueprint())
    return app
