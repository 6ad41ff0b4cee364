"""The one place where failures become HTTP answers.

Rules:
1. Every ``cluster.errors.ApiError`` becomes its status and ``err.body()`` (``{"error": ...}``,
   or ``{"ok": false, "errors": {...}}`` for a create/compose validation failure).
2. Routing failures keep the reference's messages: an unknown path is 404
   ``no route or asset for <path>``; a wrong method 405; a body over the cap 413; anything else
   the HTTP layer rejects is 400 ``malformed request: ...``.
3. Any other exception escaping a handler is logged with its traceback and answered 500
   ``handler failed: <what>``; the node runs on.
"""

from __future__ import annotations

import logging
from typing import Any

from quart import Quart, request
from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound, RequestEntityTooLarge

from cluster.errors import ApiError

__all__ = ["MAX_BODY", "error_response", "install_error_handlers"]

log = logging.getLogger(__name__)
MAX_BODY = 1024 * 1024  # bytes: form bodies and any other request body


def error_response(status: int, message: str) -> tuple[dict[str, Any], int]:
    return {"error": message}, status


def _http_error(exc: HTTPException) -> tuple[dict[str, Any], int]:
    path = request.path
    if isinstance(exc, NotFound):
        return error_response(404, f"no route or asset for {path}")
    if isinstance(exc, MethodNotAllowed):
        allowed = ", ".join(sorted(m for m in (exc.valid_methods or ()) if m != "OPTIONS"))
        return error_response(
            405, f"method {request.method} not allowed for {path} (use {allowed})"
        )
    if isinstance(exc, RequestEntityTooLarge):
        return error_response(413, f"request body larger than {MAX_BODY} bytes")
    status = exc.code or 400
    if 400 <= status < 500:
        return error_response(status, f"malformed request: {exc.description or exc.name}")
    return error_response(status, f"{exc.name}: {exc.description}")


def install_error_handlers(app: Quart) -> None:
    @app.errorhandler(ApiError)
    async def api_error(exc: ApiError) -> tuple[dict[str, Any], int]:
        return exc.body(), exc.status

    @app.errorhandler(HTTPException)
    async def http_error(exc: HTTPException) -> tuple[dict[str, Any], int]:
        return _http_error(exc)

    @app.errorhandler(Exception)
    async def handler_failed(exc: Exception) -> tuple[dict[str, Any], int]:
        if isinstance(exc, ExceptionGroup):  # e.g. from a nursery inside the runtime
            api = [e for e in exc.exceptions if isinstance(e, ApiError)]
            if api:
                return api[0].body(), api[0].status
        log.exception("dashboard handler for %s %s failed", request.method, request.path)
        what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return error_response(500, f"handler failed: {what}")
