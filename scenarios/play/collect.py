"""Every node's membership events, read over HTTP while a scenario runs (``GET /api/events``).

Rules:
1. One ``Feed`` per node: its dashboard URL, the boots read so far and the cursor (the
   ``next`` of the last page). A poll pages from the cursor (``limit`` 5000) until a page
   comes back short: caught up. Polls of one node never overlap (a lock per feed), so no page
   is read twice.
2. Every request is bounded in time (``REQUEST_TIMEOUT``, the spirit of the 5 s forward bound)
   and in bytes, and a poll reads at most ``MAX_PAGES`` pages: a paused, dead or flooding node
   costs one bounded wait and keeps the events read so far; it is asked again next time.
3. Another ``boot`` means the node process restarted and numbers from 1 again: the page is
   read again from ``after=0``; what the old boot gave is kept, and the restart is reported.
4. ``dropped`` (events that left the node's ring before they were read) is counted and
   reported, never silent. An answer of the wrong shape is that poll's error, not a crash.
5. Events are handed on in the event-log shape (``seq`` left out), so the analysis reads what
   it read from the nodes' files.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import trio

__all__ = [
    "MAX_PAGES",
    "PAGE_LIMIT",
    "REQUEST_TIMEOUT",
    "BadPage",
    "BootRead",
    "EventCollector",
    "Feed",
    "Page",
    "open_collector",
    "parse_page",
]

PAGE_LIMIT = 5000  # events asked per request: the API's most
REQUEST_TIMEOUT = 5.0  # seconds one request may take, connecting included
MAX_PAGES = 20  # pages one poll reads at most (100,000 events); the next poll goes on
MAX_BYTES = 16 << 20  # an answer larger than this is refused (a page is about 1 MiB)
POLL_INTERVAL = 1.0  # seconds between two polls of one node in the background
CATCH_UP_BOUND = 1.0  # seconds a read before a step may delay that step
FINISH_BOUND = 15.0  # seconds the last read of every node may take
EVENT_FIELDS = ("mono", "wall", "observer", "subject", "old", "new", "incarnation", "cause")


class BadPage(ValueError):
    """An answer that is not an events page; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class Page:
    """One answer of ``/api/events``: events (event-log shape, with ``seq``), the cursor for the
    next request, how many events the ring lost before ``after``, and the node process's boot."""

    events: tuple[dict[str, Any], ...]
    next: int
    dropped: int
    boot: str


def _count(body: Mapping[str, Any], key: str) -> int:
    value = body.get(key)
    if type(value) is not int or value < 0:
        raise BadPage(f"{key!r} is not a count: {value!r:.40}")
    return value


def _event(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise BadPage(f"an event is not an object: {raw!r:.60}")
    mono = raw.get("mono")
    if not isinstance(mono, int | float) or isinstance(mono, bool) or not math.isfinite(mono):
        raise BadPage(f"an event has no time: {raw!r:.80}")
    for key in ("observer", "subject", "seq"):
        if type(raw.get(key)) is not int:
            raise BadPage(f"an event has no {key}: {raw!r:.80}")
    if not isinstance(raw.get("new"), str):
        raise BadPage(f"an event has no new state: {raw!r:.80}")
    return {"seq": raw["seq"], **{k: raw.get(k) for k in EVENT_FIELDS}}


def parse_page(body: Any, after: int) -> Page:
    """Check an answer to ``after=<after>``; ``BadPage`` when it is not an events page whose
    ``seq`` increase past ``after`` up to ``next``."""
    if not isinstance(body, Mapping) or not isinstance(body.get("events"), list):
        raise BadPage("not an events page")
    boot = body.get("boot")
    if not isinstance(boot, str) or not 0 < len(boot) <= 64:
        raise BadPage(f"no boot: {boot!r:.40}")
    events = tuple(_event(e) for e in body["events"])
    nxt, dropped = _count(body, "next"), _count(body, "dropped")
    seqs = [e["seq"] for e in events]
    if any(b <= a for a, b in zip([after, *seqs], seqs, strict=False)):
        raise BadPage(f"seq do not increase past {after}: {seqs[:5]}")
    if nxt < (seqs[-1] if seqs else after):
        raise BadPage(f"next {nxt} is behind the page")
    return Page(events, nxt, dropped, boot)


@dataclass(slots=True)
class BootRead:
    """What was read of one node process: ``caught_up`` is the ``time.monotonic()`` at which
    the last poll that read everything began (None: never caught up)."""

    boot: str
    events: int = 0
    last_seq: int = 0
    dropped: int = 0
    caught_up: float | None = None


@dataclass(slots=True)
class Feed:
    """One node's events as read so far, across its boots (rule 1)."""

    node_id: int
    url: str
    boots: list[BootRead] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""  # why the last poll did not catch up; "" when it did
    resting: bool = False  # not polled in the background (paused, stopped, killed)
    lock: trio.Lock = field(default_factory=trio.Lock)

    @property
    def cursor(self) -> int:
        return self.boots[-1].last_seq if self.boots else 0

    def take(self, page: Page, started: float, limit: int) -> bool:
        """Keep a page read from the cursor (no checkpoint: all or nothing); caught up?"""
        boot = self.boots[-1]
        self.events.extend({k: v for k, v in e.items() if k != "seq"} for e in page.events)
        boot.events += len(page.events)
        boot.last_seq = page.next
        boot.dropped += page.dropped
        if len(page.events) < limit:
            boot.caught_up = started
            self.error = ""
            return True
        return False

    def summary(self, t0: float) -> dict[str, Any]:
        """The feed in ``results.json``: times in seconds after ``t0``."""
        return {
            "node_id": self.node_id,
            "url": self.url,
            "events": len(self.events),
            "restarts": max(0, len(self.boots) - 1),
            "dropped": sum(b.dropped for b in self.boots),
            "complete": not self.error and bool(self.boots),
            "error": self.error,
            "boots": [
                {
                    "boot": b.boot,
                    "events": b.events,
                    "last_seq": b.last_seq,
                    "dropped": b.dropped,
                    "read_until": None if b.caught_up is None else round(b.caught_up - t0, 3),
                }
                for b in self.boots
            ],
        }


class EventCollector:
    """The feeds of a run's nodes; with a nursery, each is polled in the background."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        nursery: trio.Nursery | None = None,
        *,
        interval: float = POLL_INTERVAL,
        timeout: float = REQUEST_TIMEOUT,
        limit: int = PAGE_LIMIT,
    ) -> None:
        self.client = client
        self.nursery = nursery
        self.interval = interval
        self.timeout = timeout
        self.limit = limit
        self.feeds: dict[int, Feed] = {}

    # ---- which nodes -------------------------------------------------------------------------

    def follow(self, node_id: int, url: str) -> None:
        """Read ``node_id`` at ``url`` from now on (a new node, or one back from a pause or a
        restart, perhaps on another port)."""
        feed = self.feeds.get(node_id)
        if feed is None:
            feed = self.feeds[node_id] = Feed(node_id, url)
            if self.nursery is not None:
                self.nursery.start_soon(self._serve, feed)
        feed.url, feed.resting = url, False

    def background(self, nursery: trio.Nursery | None) -> None:
        """Poll every feed in the background in ``nursery`` from now on (None: no more; the
        caller cancels the nursery)."""
        self.nursery = nursery
        if nursery is not None:
            for feed in self.feeds.values():
                nursery.start_soon(self._serve, feed)

    def rest(self, node_id: int) -> None:
        """Stop polling the node in the background (about to be paused, stopped or killed:
        call it right after ``catch_up``); what was read is kept."""
        if node_id in self.feeds:
            self.feeds[node_id].resting = True

    async def _serve(self, feed: Feed) -> None:
        while True:
            await self.poll(feed.node_id, resting_too=False)
            await trio.sleep(self.interval)

    # ---- reading -----------------------------------------------------------------------------

    async def poll(self, node_id: int, *, resting_too: bool = True) -> bool:
        """Read the node until caught up (rules 1-3); whether it caught up (else the feed's
        ``error`` says why). Without ``resting_too`` a resting node is left alone, also when
        it came to rest while this poll waited for the one before."""
        feed = self.feeds[node_id]
        async with feed.lock:
            if feed.resting and not resting_too:
                return False
            started = time.monotonic()
            for _ in range(MAX_PAGES):
                after = feed.cursor
                try:
                    page = await self._fetch(feed.url, after)
                except (BadPage, ValueError) as exc:
                    feed.error = f"malformed answer: {exc}"
                    return False
                except trio.TooSlowError:
                    feed.error = f"no answer within {self.timeout:g}s"
                    return False
                except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
                    feed.error = f"cannot read {feed.url}: {exc or type(exc).__name__}"
                    return False
                if not feed.boots or page.boot != feed.boots[-1].boot:
                    feed.boots.append(BootRead(page.boot))  # rule 3
                    if after:
                        continue  # that page answered the old cursor: read from 0
                if feed.take(page, started, self.limit):
                    return True
            feed.error = f"not caught up after {MAX_PAGES} pages"
            return False

    async def _fetch(self, url: str, after: int) -> Page:
        params = {"after": str(after), "limit": str(self.limit)}
        body = bytearray()
        with trio.fail_after(self.timeout):
            async with self.client.stream(
                "GET", f"{url.rstrip('/')}/api/events", params=params
            ) as r:
                async for chunk in r.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_BYTES:
                        raise BadPage(f"answer larger than {MAX_BYTES} bytes")
        if r.status_code != 200:
            raise httpx.HTTPStatusError(
                f"HTTP {r.status_code}: {bytes(body[:200]).decode(errors='replace')}",
                request=r.request,
                response=r,
            )
        return parse_page(json.loads(body), after)

    async def catch_up(self, node_id: int, bound: float = CATCH_UP_BOUND) -> bool:
        """Read the node now (before a step ends or stops it), for at most ``bound`` seconds."""
        if node_id not in self.feeds:
            return False
        with trio.move_on_after(bound):
            return await self.poll(node_id)
        self.feeds[node_id].error = f"not read within {bound:g}s before a step"
        return False

    async def finish(self, bound: float = FINISH_BOUND) -> None:
        """The last read of every node not resting, all at once, within ``bound`` seconds."""
        with trio.move_on_after(bound):
            async with trio.open_nursery() as nursery:
                for feed in self.feeds.values():
                    if not feed.resting:
                        nursery.start_soon(self.poll, feed.node_id)

    # ---- what was read -----------------------------------------------------------------------

    def events(self) -> list[dict[str, Any]]:
        """Every event read, all nodes and boots, in the event-log shape (rule 5)."""
        return [e for feed in self.feeds.values() for e in feed.events]

    def summary(self, t0: float) -> dict[str, Any]:
        """How the events were read, per node, for ``results.json``."""
        nodes = [self.feeds[i].summary(t0) for i in sorted(self.feeds)]
        return {
            "via": "GET /api/events",
            "nodes": nodes,
            "dropped": sum(n["dropped"] for n in nodes),
            "incomplete": [n["node_id"] for n in nodes if not n["complete"]],
            "restarted": [n["node_id"] for n in nodes if n["restarts"]],
        }


@asynccontextmanager
async def open_collector(
    *, interval: float = POLL_INTERVAL, transport: httpx.AsyncBaseTransport | None = None
) -> AsyncIterator[EventCollector]:
    """An ``EventCollector`` polling in the background until the block ends."""
    timeout = httpx.Timeout(REQUEST_TIMEOUT)
    async with (
        httpx.AsyncClient(timeout=timeout, trust_env=False, transport=transport) as client,
        trio.open_nursery() as nursery,
    ):
        yield EventCollector(client, nursery, interval=interval)
        nursery.cancel_scope.cancel()
