"""Errors the runtime raises, each carrying the HTTP status the dashboard answers with.

    ApiError (500)
    ├── BadRequest (400)        a malformed node id, pool id or parameter
    │   └── ValidationFailed    create/compose validation: every failing field at once
    ├── Forbidden (403)         refused on purpose (the admin pool, a cross-site request)
    ├── NotFound (404)          no such pool, route or asset
    ├── Conflict (409)          the action cannot be done in the current state
    │   └── PoolGone            the pool was destroyed under a running task or request
    └── PeerUnavailable (503)   the runtime or a peer did not answer in time
        └── PeerUnreachable     the transport to a peer failed (refused, reset, bad reply)

The dashboard translates every ApiError once, at its boundary, into ``{"error": message}``
(or ``{"ok": false, "errors": {...}}`` for ValidationFailed). Nothing else maps to a status.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "ApiError",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "NotFound",
    "PeerUnavailable",
    "PeerUnreachable",
    "PoolGone",
    "SettingsError",
    "ValidationFailed",
]


MAX_MESSAGE = 1000  # characters of an error message


class ApiError(Exception):
    """An error with an HTTP status and a message for the ``error`` field."""

    status = 500

    def __init__(self, message: str) -> None:
        if len(message) > MAX_MESSAGE:  # never echo a huge input back in full
            message = f"{message[:MAX_MESSAGE]}... ({len(message)} characters)"
        super().__init__(message)
        self.message = message

    def body(self) -> dict[str, object]:
        return {"error": self.message}


class BadRequest(ApiError):
    status = 400


class ValidationFailed(BadRequest):
    """All failing fields of a create or compose request, reported together."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = dict(errors)

    def body(self) -> dict[str, object]:
        return {"ok": False, "errors": self.errors}


class Forbidden(ApiError):
    status = 403


class NotFound(ApiError):
    status = 404


class Conflict(ApiError):
    status = 409


class PeerUnavailable(ApiError):
    status = 503


class PeerUnreachable(PeerUnavailable):
    """The node RPC client's one error for every transport failure: the peer refused the
    connection, reset it, or answered something that is not a reply."""


class PoolGone(Conflict):
    """Raised by a task whose pool was destroyed under it (periodic tasks retry on it; a
    request that meets it is answered 409)."""

    def __init__(self, pool: str) -> None:
        super().__init__(f"pool {pool} was destroyed")
        self.pool = pool


class SettingsError(Exception):
    """A configuration file or variable that cannot be used; the message names key and file."""
