"""The one place where failures become HTTP answers.

Rules:
1. Every ``cluster.ground.errors.ApiError`` becomes its status and ``err.body()``
   (``{"error": ...}``, or ``{"ok": false, "errors": {...}}`` for a create/compose validation
   failure). A node id that names no node (``cluster.runtime.UnknownNode``) is worded with
   where ids are listed (``cluster.api.unknown_node``).
2. Routing failures keep the reference's messages: an unknown path is 404
   ``no route or asset for <path>``; a wrong method 405 with the ``Allow`` header RFC 9110
   requires; a body over the cap 413; anything else the HTTP layer rejects is 400
   ``malformed request: ...``.
3. A handler that runs out of file descriptors or buffers (EMFILE, ENFILE, ENOBUFS, ENOMEM)
   answers 503 ``node is short of resources (...): try again``: the request may succeed later.
4. Any other exception escaping a handler is logged with its traceback and answered 500
   ``handler failed: <what>``; the node runs on.
5. Refusals made before the app runs (``dashboard.admission``: a slow or oversized body, a
   forward past its bound) are written as ASGI messages by ``send_error``: the same
   ``{"error": ...}`` body, and the connection closed after it.
6. An exception that escapes the app before it answered (quart raises werkzeug's ``BadHost``
   while it builds the request, before any handler) is answered by ``escaped_answer``: its
   4xx as ``malformed request: ...``, anything else 500 ``handler failed`` (logged), never
   hypercorn's bare 500.
"""

from __future__ import annotations

import errno
import logging
from typing import Any, TypeVar

from quart import Quart, request
from werkzeug.exceptions import (
    BadHost,
    HTTPException,
    MethodNotAllowed,
    NotFound,
    RequestEntityTooLarge,
)

from cluster.api import unknown_node
from cluster.ground.errors import ApiError, BadRequest
from cluster.runtime import UnknownNode

from .jsonio import dumps

__all__ = [
    "MAX_BODY",
    "RESOURCE_ERRNOS",
    "api_answer",
    "error_response",
    "escaped_answer",
    "install_error_handlers",
    "send_error",
]

log = logging.getLogger(__name__)
MAX_BODY = 1024 * 1024  # bytes: form bodies and any other request body
E = TypeVar("E", bound=BaseException)
RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


def error_response(status: int, message: str) -> tuple[dict[str, Any], int]:
    return {"error": message}, status


def api_answer(exc: ApiError) -> tuple[dict[str, object], int]:
    """The body and status of an ``ApiError`` (rule 1)."""
    if isinstance(exc, UnknownNode):
        exc = BadRequest(unknown_node(exc.node))
    return exc.body(), exc.status


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


async def send_error(send: Any, status: int, message: str) -> None:
    """Answer ``{"error": message}`` with ``status`` on an ASGI ``send``, outside the app (rule
    5); ``Connection: close``, since the request's body may be unread."""
    body = dumps({"error": message}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _first(exc: BaseException, kind: type[E]) -> E | None:
    """``exc`` itself, or the first ``kind`` in it when it is an exception group."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _first(inner, kind)
            if found is not None:
                return found
    return None


def _short_of_resources(exc: BaseException) -> tuple[int, str] | None:
    os_error = _first(exc, OSError)
    if os_error is None or os_error.errno not in RESOURCE_ERRNOS:
        return None
    log.warning("dashboard: %s", os_error)
    return 503, f"node is short of resources ({errno.errorcode[os_error.errno]}): try again"


def escaped_answer(exc: Exception, method: str, path: str) -> tuple[int, str]:
    """(status, message) for an exception that escaped the app before it answered (rule 6)."""
    short = _short_of_resources(exc)
    if short is not None:
        return short
    http = _first(exc, HTTPException)
    if isinstance(http, BadHost):
        return 400, "malformed request: the Host header is not a valid host name"
    if http is not None and 400 <= (http.code or 500) < 500:
        return http.code or 400, f"malformed request: {http.description or http.name}"
    log.error("dashboard: %s %s failed outside any handler", method, path, exc_info=exc)
    return 500, f"handler failed: {type(exc).__name__}"


def install_error_handlers(app: Quart) -> None:
    @app.errorhandler(ApiError)
    async def api_error(exc: ApiError) -> tuple[dict[str, object], int]:
        return api_answer(exc)

    @app.errorhandler(HTTPException)
    async def http_error(exc: HTTPException) -> tuple[dict[str, Any], int, dict[str, str]]:
        body, status = _http_error(exc)
        if isinstance(exc, MethodNotAllowed) and exc.valid_methods:  # RFC 9110, 15.5.6
            return body, status, {"Allow": ", ".join(sorted(exc.valid_methods))}
        return body, status, {}

    @app.errorhandler(Exception)
    async def handler_failed(exc: Exception) -> tuple[dict[str, Any], int]:
        if isinstance(exc, ExceptionGroup):  # e.g. from a nursery inside the runtime
            api = [e for e in exc.exceptions if isinstance(e, ApiError)]
            if api:
                return api_answer(api[0])
        short = _short_of_resources(exc)
        if short is not None:
            return error_response(*short)
        log.exception("dashboard handler for %s %s failed", request.method, request.path)
        what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return error_response(500, f"handler failed: {what}")
