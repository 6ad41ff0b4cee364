"""Admission: the spec's HTTP thread pool, as a bound on requests handled at once.

Rules:
1. A request is admitted only once its whole body has arrived (``dashboard.intake``: size and
   read-time limits, 413/408), so a slow client never holds a slot. A bodiless request (a
   GET, as HTTP/1.x frames it) is complete with its head and goes straight on.
2. At most ``max_threads`` requests are inside the app at a time (a ``trio.Semaphore`` around
   each ASGI call, held until the response is sent); more wait their turn.
3. Requests that forward to a peer (``/api/nodes/<peer>/...``, a pool monitor with a
   non-local routing, ``/api/cluster/views``, which asks every member) first take a slot of
   a smaller forward limiter, so forwards can hold at most ``max_threads - reserve`` slots:
   however many forwards to a dead or paused peer are in flight, node-local routes such as
   ``/api/health`` keep ``reserve`` slots and keep answering.
4. A forward's bound (5 s, the runtime's ``forward_timeout``) counts from its arrival: a
   forward that finds the slots free runs under the runtime's own bound; one that must queue
   for a slot gets what is left of the bound for queueing and asking together, and answers
   503 when that runs out before its answer is ready. No forward waits past the bound.
5. Classifying a request looks at its path and query string only, parsed as the handler
   parses them (``dashboard.params.parse_pairs``; the ASGI path is percent-decoded).
6. ``GET /api/health`` (liveness, answered from memory) takes one of ``HEALTH_SLOTS`` slots of
   its own, never a request slot: however many requests queue for the ``max_threads`` slots,
   a liveness check does not wait behind them (500 busy clients made it wait as long as
   they did, over 1 s); a flood of health checks queues for its own slots only. As many as
   the default ``max_threads``: with 2, concurrent checks went one or two per scheduler pass,
   paying trio's I/O poll per answer and a queue handover each (``bench.api``: 0.5-0.8 of a
   bare app's requests/s at 16 and 64 connections); an answer from memory holds its slot
   only while it is written, so more slots cost nothing while idle. The plain check never
   gets here: ``dashboard.door`` answers it at the ASGI door; these slots take the ones it
   passes on (a trailing slash, a query string, a body).
7. The last message of every answer is sent shielded from cancellation. quart-trio cancels
   the request's tasks when hypercorn reports the exchange over, which hypercorn does inside
   that very send, before it closes a connection that must close (``Connection: close``, or
   its ``keep_alive_max_requests``): unshielded, the close was cancelled and the connection
   stayed open until the client left or ``read_timeout`` passed. Writes are shielded by
   hypercorn already, so this adds no wait of its own.
8. Taking a free slot is no checkpoint (``acquire_nowait``); only a request that must wait
   for one goes through the scheduler. With rule 1's straight path for a bodiless request,
   admission adds no scheduler pass to a GET (each pass is an I/O poll: ``bench.api``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import trio

from cluster.ground.errors import BadRequest
from cluster.runtime import FORWARD_TIMEOUT, is_local, routing_forwards

from .errors import send_error
from .intake import Intake, Refusal
from .params import parse_pairs

__all__ = ["HEALTH_PATH", "HEALTH_SLOTS", "Admission", "is_forward"]

Scope = Any  # an ASGI scope mapping
Asgi = Callable[..., Any]
HEALTH_PATH = "/api/health"
HEALTH_SLOTS = 16  # health checks answered at once (rule 6), beside the request slots


def is_health(scope: Scope) -> bool:
    """Whether the request is the liveness check of rule 6 (a GET or HEAD of the path, a
    trailing slash ignored as the app ignores it)."""
    path = scope.get("path", "")
    return scope.get("method") in ("GET", "HEAD") and path.rstrip("/") == HEALTH_PATH


def shielded_end(send: Any) -> Any:
    """``send`` with rule 7: an answer's last message goes out shielded."""

    async def send_end_shielded(message: Any) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            with trio.CancelScope(shield=True):
                await send(message)
        else:
            await send(message)

    return send_end_shielded


def is_forward(path: str, query: bytes, own_id: int) -> bool:
    """Whether a request will be forwarded to a peer, by the runtime's own decision
    (``cluster.runtime.is_local``, ``routing_forwards``) on its path and query parameters,
    parsed as the handler will parse them."""
    if not path.startswith("/api/"):
        return False
    parts = path.strip("/").split("/")  # ASGI's path is percent-decoded already
    if len(parts) >= 4 and parts[1] == "nodes":
        return not is_local(parts[2], own_id)
    if parts[1:] == ["cluster", "views"]:
        return True  # asks every member at once, under the same bound
    if len(parts) == 4 and parts[1] == "pools" and parts[3] == "monitor":
        try:
            params = parse_pairs(query.decode("utf-8"), "query string")
        except (UnicodeDecodeError, BadRequest):
            return False  # the handler refuses it with a 400 before any forward
        return routing_forwards(params.get("routing", ""))
    return False


async def _take(slots: trio.Semaphore) -> None:
    """``slots.acquire()``, without its trip through the scheduler when a slot is free (a free
    slot means nobody waits: trio's semaphore is FIFO). Rule 8."""
    try:
        slots.acquire_nowait()
    except trio.WouldBlock:
        await slots.acquire()


class Admission:
    """ASGI middleware applying the rules above to ``app``.

    ``own_id()`` is the node's id; ``forward_bound()`` the forward timeout in seconds.
    """

    def __init__(
        self,
        app: Asgi,
        max_threads: int,
        own_id: Callable[[], int],
        forward_bound: Callable[[], float] = lambda: FORWARD_TIMEOUT,
        intake: Intake | None = None,
    ) -> None:
        self.app = app
        self.max_threads = max(1, max_threads)
        reserve = max(1, self.max_threads // 4) if self.max_threads > 1 else 0
        # Semaphores, not CapacityLimiters: a slot is owned by the request, not by a task.
        self.requests = trio.Semaphore(self.max_threads, max_value=self.max_threads)
        self.forward_slots = max(1, self.max_threads - reserve)
        self.forwards = trio.Semaphore(self.forward_slots, max_value=self.forward_slots)
        self.health = trio.Semaphore(HEALTH_SLOTS, max_value=HEALTH_SLOTS)
        self.intake = intake or Intake()
        self._own_id = own_id
        self._forward_bound = forward_bound

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = shielded_end(send)
        admitted = await self.intake.admit(scope, receive)
        if isinstance(admitted, Refusal):
            await send_error(send, admitted.status, admitted.message)
            return
        if admitted is None:
            return  # the client went away before its body arrived
        receive, held = admitted
        try:
            if is_forward(scope.get("path", ""), scope.get("query_string", b""), self._own_id()):
                await self._forward(scope, receive, send)
            else:
                slots = self.health if is_health(scope) else self.requests
                await _take(slots)
                try:
                    await self.app(scope, receive, send)
                finally:
                    slots.release()
        finally:
            self.intake.release(held)

    def _take_slots_nowait(self) -> bool:
        try:
            self.forwards.acquire_nowait()
        except trio.WouldBlock:
            return False
        try:
            self.requests.acquire_nowait()
        except trio.WouldBlock:
            self.forwards.release()
            return False
        return True

    async def _forward(self, scope: Scope, receive: Any, send: Any) -> None:
        """Rules 3 and 4."""
        bound, arrived = self._forward_bound(), trio.current_time()
        if self._take_slots_nowait():  # nothing queued: the runtime's own bound applies
            try:
                await self.app(scope, receive, send)
            finally:
                self.requests.release()
                self.forwards.release()
            return
        answering = False
        admitted = math.inf

        with trio.CancelScope(deadline=arrived + bound) as bounded:

            async def send_in_time(message: Any) -> None:
                nonlocal answering
                if message["type"] == "http.response.start":
                    await trio.lowlevel.checkpoint_if_cancelled()  # past the bound: no answer
                    bounded.deadline = math.inf  # the answer is ready; sending it is no wait
                    answering = True
                await send(message)

            async with self.forwards, self.requests:
                admitted = trio.current_time()
                await self.app(scope, receive, send_in_time)
        if bounded.cancelled_caught and not answering:
            await send_error(send, 503, self._late(bound, admitted - arrived))

    def _late(self, bound: float, queued: float) -> str:
        if math.isinf(queued):
            return (
                f"forward not started within {bound:g}s: all {self.forward_slots} forward "
                "slots stayed busy (slow or paused peers)"
            )
        return f"forward timed out after {bound:g}s ({queued:.1f}s of it queued for a slot)"

    def statistics(self) -> dict[str, int]:
        return {
            "max_threads": self.max_threads,
            "requests_in_flight": self.max_threads - self.requests.value,
            "requests_waiting": self.requests.statistics().tasks_waiting,
            "forwards_in_flight": self.forward_slots - self.forwards.value,
            "forward_slots": self.forward_slots,
        }
