"""Admission: the spec's HTTP thread pool, as a bound on requests handled at once.

Rules:
1. At most ``max_threads`` requests are inside the app at a time (a ``trio.Semaphore`` around each
   ASGI call, held until the response is sent); more wait their turn.
2. Requests that forward to a peer (``/api/nodes/<peer>/...``, and a pool monitor with a
   non-local routing) first take a slot of a smaller forward limiter, so forwards can hold at
   most ``max_threads - reserve`` slots: however many forwards to a dead or paused peer are in
   flight (each bounded by the 5 s forward timeout), node-local routes such as ``/api/health``
   keep ``reserve`` slots and keep answering.
3. Classifying a request looks at its path only; it never reads the body.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from cluster.errors import BadRequest
from cluster.runtime import is_local, routing_forwards

from .params import parse_pairs

__all__ = ["Admission", "is_forward"]

Scope = Any  # an ASGI scope mapping
Asgi = Callable[..., Any]


def is_forward(path: str, query: bytes, own_id: int) -> bool:
    """Whether a request will be forwarded to a peer, by the runtime's own decision
    (``cluster.runtime.is_local``, ``routing_forwards``) on its path and query parameters,
    parsed as the handler will parse them."""
    if not path.startswith("/api/"):
        return False
    parts = path.strip("/").split("/")  # ASGI's path is percent-decoded already
    if len(parts) >= 4 and parts[1] == "nodes":
        return not is_local(parts[2], own_id)
    if len(parts) == 4 and parts[1] == "pools" and parts[3] == "monitor":
        try:
            params = parse_pairs(query.decode("utf-8"), "query string")
        except (UnicodeDecodeError, BadRequest):
            return False  # the handler refuses it with a 400 before any forward
        return routing_forwards(params.get("routing", ""))
    return False


class Admission:
    """ASGI middleware applying the rules above to ``app``."""

    def __init__(self, app: Asgi, max_threads: int, own_id: Callable[[], int]) -> None:
        self.app = app
        self.max_threads = max(1, max_threads)
        reserve = max(1, self.max_threads // 4) if self.max_threads > 1 else 0
        # Semaphores, not CapacityLimiters: a slot is owned by the request, not by a task.
        self.requests = trio.Semaphore(self.max_threads, max_value=self.max_threads)
        self.forward_slots = max(1, self.max_threads - reserve)
        self.forwards = trio.Semaphore(self.forward_slots, max_value=self.forward_slots)
        self._own_id = own_id

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if is_forward(scope.get("path", ""), scope.get("query_string", b""), self._own_id()):
            async with self.forwards, self.requests:
                await self.app(scope, receive, send)
        else:
            async with self.requests:
                await self.app(scope, receive, send)

    def statistics(self) -> dict[str, int]:
        return {
            "max_threads": self.max_threads,
            "requests_in_flight": self.max_threads - self.requests.value,
            "requests_waiting": self.requests.statistics().tasks_waiting,
            "forwards_in_flight": self.forward_slots - self.forwards.value,
            "forward_slots": self.forward_slots,
        }
