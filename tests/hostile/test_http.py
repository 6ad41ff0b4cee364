"""Hostile HTTP against a real 2-node cluster: every route of ``/api/routes`` with malformed
path parameters and query strings, hostile headers and framing, hostile bodies, forwards to the
peer with hostile parameters, slow bodies and idle connections.

After each class the cluster must be intact (``cluster.check_intact``): both nodes running,
health within 1 s, membership whole, the known data identical, no 500 anywhere. What each input
was answered goes to the session's tally (``tests/artifacts/hostile-tally.json``).
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import httpx
import pytest
import trio

from tests.support import wait_for_async

from .attack import finish, fire, sample_health
from .cluster import Cluster
from .http_framing import body_probes, header_probes
from .http_inputs import FORM, forward_probes, path_probes, query_probes
from .rawhttp import HOST, Answer, exchange, request_bytes
from .tally import Tally

pytestmark = pytest.mark.slow

FORWARD_BOUND = 5.0  # seconds: the spec's forward timeout
SLOW_CLIENTS = 20
SLOW_WINDOW = 8.0  # seconds a slow client keeps trickling before it gives up
IDLE_CONNECTIONS = 200
IDLE_WAIT = 12.0  # seconds an idle connection may stay open before the server must close it


@pytest.fixture(scope="module")
def routes(cluster: Cluster) -> tuple[list[dict[str, str]], list[str]]:
    """The route table node 0 serves (``GET /api/routes``) and its asset mounts."""
    body = httpx.get(cluster.urls[0] + "/api/routes", timeout=10).json()
    return body["routes"], [m["url_prefix"] for m in body.get("mounts", [])]


def test_hostile_path_parameters(cluster: Cluster, routes: Any, tally: Tally) -> None:
    ct = tally["http.path"]
    trio.run(fire, cluster, path_probes(*routes), ct)
    finish(cluster, ct, "http.path")


def test_hostile_query_strings(cluster: Cluster, routes: Any, tally: Tally) -> None:
    ct = tally["http.query"]
    trio.run(fire, cluster, query_probes(routes[0]), ct)
    finish(cluster, ct, "http.query")


def test_hostile_headers_and_framing(cluster: Cluster, tally: Tally) -> None:
    ct = tally["http.headers"]
    trio.run(fire, cluster, header_probes(), ct)
    finish(cluster, ct, "http.headers")


def test_forwards_to_the_peer_with_hostile_parameters(cluster: Cluster, tally: Tally) -> None:
    ct = tally["http.forward"]
    answers = trio.run(fire, cluster, forward_probes(), ct)
    for probe, answer in answers:
        if answer.seconds > FORWARD_BOUND + 1.5:
            ct.fail(f"forward answered after {answer.seconds:.1f} s (bound 5 s)", probe.what)
    ct.notes["slowest_forward_s"] = round(max(a.seconds for _, a in answers), 3)
    finish(cluster, ct, "http.forward")


async def _slow_bodies(cluster: Cluster, ct: Any) -> list[Answer]:
    """``SLOW_CLIENTS`` compose POSTs declaring 1000 body bytes and sending one every 0.5 s,
    while health is sampled; what each slow client got."""
    head = request_bytes(
        "POST",
        "/api/pools/compose",
        headers=[FORM, ("Content-Length", "1000")],
        content_length=False,
    )
    pieces: list[bytes | float] = [head]
    for _ in range(int(SLOW_WINDOW / 0.5)):
        pieces += [b"a", 0.5]
    answers: list[Answer] = []
    all_answered = trio.Event()
    heads_sent = 0  # clients that sent their request head (or ended without: refused)

    def head_sent() -> None:
        nonlocal heads_sent
        heads_sent += 1

    async def client() -> None:
        answer = await exchange(
            cluster.viz_ports[0], pieces, timeout=SLOW_WINDOW + 4, under_way=head_sent
        )
        answers.append(answer)
        if len(answers) == SLOW_CLIENTS:
            all_answered.set()

    async with trio.open_nursery() as nursery:
        for _ in range(SLOW_CLIENTS):
            nursery.start_soon(client)
        await wait_for_async(
            "every slow client to send its request head",
            lambda: heads_sent,
            until=lambda n: n == SLOW_CLIENTS,
            timeout=SLOW_WINDOW + 5,  # beyond each exchange's own limit, which tells at its end
        )
        await sample_health(cluster, ct, SLOW_WINDOW - 1.0, until=all_answered)
    return answers


def test_slow_bodies_hold_no_request_slot(cluster: Cluster, tally: Tally) -> None:
    ct = tally["http.slow_body"]
    for answer in trio.run(_slow_bodies, cluster, ct):
        what = f"slow body (1 byte / 0.5 s), answered after {answer.seconds:.1f} s"
        failure = None
        if answer.status is None and answer.outcome == "timeout":
            failure = f"held open for the whole {SLOW_WINDOW:g} s trickle and more"
        elif answer.status is not None and not (
            400 <= answer.status < 500 and answer.has_error_body
        ):
            failure = f"answered {answer.status} {answer.body[:80]!r}"
        ct.record(answer.label, what, failure)
    finish(cluster, ct, "http.slow_body")


async def _vanish(cluster: Cluster) -> None:
    """``SLOW_CLIENTS`` compose POSTs that declare 1000 body bytes, send 3 and hang up."""
    head = request_bytes(
        "POST",
        "/api/pools/compose",
        headers=[FORM, ("Content-Length", "1000")],
        content_length=False,
    )
    # The client's own behaviour, on purpose: 3 body bytes, 0.3 s of silence, and its 0.5 s
    # limit ends the exchange (the connection closes) long before the 1000 bytes come.
    async with trio.open_nursery() as nursery:
        for _ in range(SLOW_CLIENTS):
            nursery.start_soon(
                partial(exchange, cluster.viz_ports[0], [head, b"a=1", 0.3], timeout=0.5)
            )


def test_clients_that_vanish_mid_body(cluster: Cluster, tally: Tally) -> None:
    """Nothing is answered to a client that hung up, and nothing counts as a 500."""
    ct = tally["http.vanish"]
    trio.run(_vanish, cluster)
    for _ in range(SLOW_CLIENTS):
        ct.record("hung up mid-body", "POST with 3 of 1000 body bytes, then close")
    finish(cluster, ct, "http.vanish")


async def _idle(cluster: Cluster, ct: Any) -> list[float | None]:
    """Open ``IDLE_CONNECTIONS`` to node 0's dashboard (half silent, half stopping inside the
    request line) and hold them; sample health; when each was closed by the server (seconds,
    None: still open after ``IDLE_WAIT``)."""
    port = cluster.viz_ports[0]
    closed_after: list[float | None] = []
    settled = 0  # connections open (the half request line sent, for odd ones) or refused

    async def hold(i: int) -> None:
        nonlocal settled
        t0 = time.monotonic()
        with trio.move_on_after(IDLE_WAIT):
            try:
                stream = await trio.open_tcp_stream(HOST, port)
            except OSError as exc:
                settled += 1
                ct.record(f"refused ({exc.errno})", "idle connection")
                return
            async with stream:
                if i % 2:
                    await stream.send_all(b"GET /api/health HTTP/1.1\r\nHost: 127")
                settled += 1
                try:
                    while await stream.receive_some(4096):
                        pass
                except trio.BrokenResourceError:
                    pass
                closed_after.append(time.monotonic() - t0)
                return
        closed_after.append(None)

    async with trio.open_nursery() as nursery:
        for i in range(IDLE_CONNECTIONS):
            nursery.start_soon(hold, i)
        await wait_for_async(
            "every idle connection to open",
            lambda: settled,
            until=lambda n: n == IDLE_CONNECTIONS,
            timeout=IDLE_WAIT + 1,  # a connection not open by then has failed (``hold``'s bound)
        )
        await sample_health(cluster, ct, 3.0)
    return closed_after


def test_idle_connections(cluster: Cluster, tally: Tally) -> None:
    ct = tally["http.idle"]
    closed_after = trio.run(_idle, cluster, ct)
    for t in closed_after:
        if t is None:
            ct.record("held", "idle connection", f"still open after {IDLE_WAIT:g} s")
        else:
            ct.record("closed by server", "idle connection")
    done = [t for t in closed_after if t is not None]
    ct.notes["closed_after_s"] = {"min": min(done, default=None), "max": max(done, default=None)}
    finish(cluster, ct, "http.idle")


def test_hostile_bodies(cluster: Cluster, tally: Tally) -> None:
    """Last of the module: before the YAML loader had limits, a deep config crashed the node."""
    ct = tally["http.body"]
    trio.run(fire, cluster, body_probes(), ct)
    finish(cluster, ct, "http.body")
