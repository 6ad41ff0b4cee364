"""``GET /api/health`` answered at the ASGI door: liveness from memory, before admission and
the app, for the load balancers and watchers that ask it many times a second.

Rules:
1. Only the plain request takes the door: ``GET`` or ``HEAD`` of exactly ``/api/health``, no
   query string, HTTP/1.x without a body, a head the intake would take (``head_refusal``),
   and a ``Host`` the site policy serves (``SitePolicy.host_ok``). Anything else (a refused
   Host, a trailing slash, a query, a body) goes on to the app, which answers it as before:
   the door never answers differently from the app, only sooner.
2. The answer is the app's, byte for byte: ``runtime.health()`` through the app's one JSON
   encoder (``jsonio.dumps``), ``content-type: application/json`` and its length (a HEAD gets
   the headers and no body); ``ResponseTap`` adds the security headers and counts it under
   the route ``/api/health``, as it counts the app's.
3. The route table and the OpenAPI document still list ``/api/health`` (its handler stays,
   for the requests the door passes on).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cluster.runtime import RuntimeView

from .admission import HEALTH_PATH
from .intake import bodiless, head_refusal
from .jsonio import dumps
from .safety import SitePolicy

__all__ = ["HealthDoor"]

_JSON = (b"content-type", b"application/json")


class HealthDoor:
    """Rule 1's test and rule 2's answer."""

    def __init__(self, runtime: RuntimeView, policy: SitePolicy) -> None:
        self._runtime = runtime
        self._policy = policy

    def takes(self, scope: Any) -> bool:
        """Does ``scope`` take the door (rule 1)?"""
        if scope.get("path") != HEALTH_PATH or scope.get("method") not in ("GET", "HEAD"):
            return False
        if scope.get("query_string") or not bodiless(scope) or head_refusal(scope) is not None:
            return False
        if not self._policy.check_host:
            return True
        for name, value in scope.get("headers") or ():
            if name.lower() == b"host":
                return self._policy.host_ok(bytes(value).decode("latin-1"))
        return True  # no Host (HTTP/1.0): the app's check passes it too

    async def answer(self, scope: Any, send: Callable[[Any], Any]) -> None:
        """Rule 2."""
        body = dumps(self._runtime.health()).encode() + b"\n"  # as the app's JSON provider ends it
        headers = [_JSON, (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        head = scope.get("method") == "HEAD"
        await send({"type": "http.response.body", "body": b"" if head else body})
