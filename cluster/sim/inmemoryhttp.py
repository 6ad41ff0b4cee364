"""HTTP to the whole-node simulator's dashboards: an httpx transport that hands each request to
the app of the node its URL names (``http://127.0.0.1:<8080 + i>``), in memory.

Rules:
1. The request runs in the caller's task as node ``i``'s (``on_host(i)``): a forward the app
   makes leaves from node ``i`` on the simulated network, under its faults.
2. A paused node answers once resumed; a node down (killed, stopped, not started) refuses the
   connection (``httpx.ConnectError``), as a closed port does.
3. The request's own timeout (httpx's ``read``, else ``connect``) bounds the whole exchange
   in virtual time: past it, ``httpx.ReadTimeout``, as a silent server gives.
4. A node killed while it answers stops answering at once (``serving`` gives the cancel scope
   its kill cancels): its handler, and any forward it was making, end there, and the caller
   gets ``httpx.ReadError``, as a connection reset gives.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import httpx
import trio

from .net import on_host

__all__ = ["InMemoryHttp"]


class InMemoryHttp(httpx.AsyncBaseTransport):
    """Rules 1-4 over ``app_of(port) -> (node, asgi callable or None)``, ``wait_thawed`` and
    ``serving(node)``, the scope a request to the node runs in."""

    def __init__(
        self,
        app_of: Callable[[int], tuple[int, Any]],
        wait_thawed: Callable[[int], Any],
        serving: Callable[[int], AbstractContextManager[trio.CancelScope]],
    ) -> None:
        self._app_of = app_of
        self._wait_thawed = wait_thawed
        self._serving = serving

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        node, asgi = self._app_of(request.url.port or 80)
        if asgi is None:
            raise httpx.ConnectError(f"node {node} serves no dashboard now", request=request)
        timeouts = request.extensions.get("timeout", {})
        limit = timeouts.get("read") or timeouts.get("connect") or float("inf")
        with self._serving(node) as killed, trio.move_on_after(limit) as waited, on_host(node):
            await self._wait_thawed(node)
            response = await httpx.ASGITransport(app=asgi).handle_async_request(request)
        if killed.cancelled_caught:
            raise httpx.ReadError(f"node {node} went down while answering", request=request)
        if waited.cancelled_caught:
            raise httpx.ReadTimeout(f"node {node} did not answer in {limit:g} s", request=request)
        return response
