"""The load generator of ``bench.load``: every client of the load test in one trio process.

``python -m bench.loadgen --port VIZ --rpc-port RPC --peer ID --seconds S --ready F --out F``

Rules:
1. Four kinds of client run at once against one node (``--host``, loopback only):
   - ``gets``: ``--clients`` keep-alive connections, each sending node-local GETs (``PATHS``,
     in turn) one after another, ``--think`` seconds apart (0: closed loop, the hardest case);
   - ``slow_posts``: ``--slow-posts`` connections, each sending the head of a POST that
     declares ``SLOW_LENGTH`` bytes, then half of them a byte every ``DRIBBLE_EVERY`` seconds
     (never reaching the length) and half nothing at all; once answered or closed, again on a
     new connection;
   - ``forwards``: ``--forwards`` keep-alive connections asking ``/api/nodes/<peer>/workers``
     of a peer that the caller has paused;
   - ``idle``: ``--idle`` TCP connections to the runtime port that send nothing; one the node
     closes is opened again ``REOPEN_DELAY`` seconds later, so the pressure holds (a node
     holds at most 512 and closes the one idle the longest for each new one, so about half
     of 1,000 cycle every second).
2. The run's clock starts once every client has started and every idle connection was tried
   once; then ``--ready`` is written and the clients run ``--seconds`` more. Before they
   stop, one ``control identity`` RPC is asked while the idle connections are still held.
   Only requests started and finished inside the run are counted.
3. Nothing waits without a bound: a request has ``REQUEST_TIMEOUT`` seconds, a slow POST
   ``HOLD_LIMIT`` seconds for its answer (after which it counts as ``held``), a connect
   ``CONNECT_TIMEOUT``.
4. The result (figures only: counts, statuses, latency summaries) is one JSON document written
   to ``--out``; ``bench.load`` judges it. The soft open-file limit is raised to the hard one
   first (and the hard one too, where that is allowed, if it is too low); a limit still too
   low for the sockets asked for is a one-line error and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from bench.api.load import Conn
from cluster.ground.errors import ApiError
from cluster.node.fds import nofile_limit, raise_nofile_limit
from cluster.rpc import Identity, rpc_call

__all__ = ["PATHS", "Kind", "main", "summary"]

PATHS = (  # node-local GETs, in the proportions a dashboard's pages ask them
    "/api/topology",
    "/api/pools",
    "/api/nodes/local/workers",
    "/api/config",
    "/api/events?limit=50",
    "/api/routes",
    "/api/chimods",
    "/api/faults",
    "/api/nodes/local/system_stats",
    "/metrics",
)
SLOW_PATH = "/api/pools/compose"
SLOW_LENGTH = 4096  # bytes a slow POST declares (it never sends them all)
DRIBBLE_EVERY = 0.5  # seconds between the bytes of a dribbling POST
HOLD_LIMIT = 30.0  # seconds a slow POST waits for its answer before it counts as held
REQUEST_TIMEOUT = 30.0  # seconds for one GET or forward
CONNECT_TIMEOUT = 10.0  # seconds for one TCP connect
REOPEN_DELAY = 1.0  # seconds before an idle connection the node closed is opened again
OPENING_AT_ONCE = 200  # idle connections being opened at once (a SYN burst has its limit)
WARM_LIMIT = 30.0  # seconds the GET clients have to connect before the run starts regardless
SPARE_FDS = 64  # descriptors beyond the sockets asked for


def summary(latencies: Sequence[float]) -> dict[str, Any]:
    """Count and p50/p90/p99/max of ``latencies`` (seconds, rounded to ms; nearest rank)."""
    ordered = sorted(latencies)

    def rank(p: float) -> float | None:
        if not ordered:
            return None
        return round(ordered[max(0, math.ceil(p * len(ordered)) - 1)], 3)

    return {
        "count": len(ordered),
        "p50_s": rank(0.5),
        "p90_s": rank(0.9),
        "p99_s": rank(0.99),
        "max_s": rank(1.0),
    }


@dataclass
class Kind:
    """What one kind of client saw during the run: latencies of answered requests (seconds),
    statuses, and outcomes without a status (``timeout``, ``reset``, ...)."""

    latencies: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)

    def as_dict(self, seconds: float) -> dict[str, Any]:
        answered = sum(self.statuses.values())
        return {
            **summary(self.latencies),
            "per_s": round(answered / seconds, 1) if seconds > 0 else None,
            "statuses": dict(sorted(self.statuses.items())),
            "outcomes": dict(sorted(self.outcomes.items())),
        }


@dataclass(frozen=True, slots=True)
class Options:
    host: str
    port: int  # the dashboard's
    rpc_port: int
    peer: int
    seconds: float
    clients: int
    slow_posts: int
    forwards: int
    idle: int
    think: float
    ready: Path
    out: Path


class Run:
    """The clients of one run, their figures, and the window inside which they count."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.gets, self.slow, self.forwards = Kind(), Kind(), Kind()
        self.idle: Counter[str] = Counter()
        self.held = 0  # idle connections open now
        self.held_low = math.inf  # fewest held at once inside the window
        self.window = (math.inf, math.inf)  # (start, end) on trio's clock
        self.tried = 0  # idle connections tried once at least
        self.all_tried = trio.Event()
        self.warm = 0  # GET clients that have had their first answer (or failure)
        self.all_warm = trio.Event()

    def counts(self, t0: float, t1: float) -> bool:
        start, end = self.window
        return start <= t0 and t1 <= end

    def request_bytes(self, path: str) -> bytes:
        o = self.opts
        return f"GET {path} HTTP/1.1\r\nHost: {o.host}:{o.port}\r\n\r\n".encode()

    async def keep_asking(
        self, kind: Kind, raws: Sequence[bytes], think: float, warming: bool = False
    ) -> None:
        """One keep-alive connection asking ``raws`` in turn until cancelled (``warming``:
        counted in ``warm`` after its first request)."""
        conn, i = Conn(self.opts.host, self.opts.port), 0
        try:
            while True:
                t0 = trio.current_time()
                status = await _ask(conn, raws[i % len(raws)])
                t1, i = trio.current_time(), i + 1
                if warming and i == 1:
                    self.warm += 1
                    if self.warm == self.opts.clients:
                        self.all_warm.set()
                if self.counts(t0, t1):
                    if status.isdigit():
                        kind.latencies.append(t1 - t0)
                        kind.statuses[status] += 1
                    else:
                        kind.outcomes[status] += 1
                await trio.sleep(think if status.isdigit() else REOPEN_DELAY)
        finally:
            _drop(conn)

    async def slow_post(self, dribble: bool) -> None:
        """Rule 1's slow POSTs, one after another on fresh connections, until cancelled."""
        o = self.opts
        head = (
            f"POST {SLOW_PATH} HTTP/1.1\r\nHost: {o.host}:{o.port}\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\n"
            f"Content-Length: {SLOW_LENGTH}\r\n\r\n"
        ).encode()
        while True:
            t0 = trio.current_time()
            outcome = await _slow_exchange(o.host, o.port, head, dribble)
            t1 = trio.current_time()
            if self.counts(t0, t1):
                if outcome.isdigit():
                    self.slow.latencies.append(t1 - t0)
                    self.slow.statuses[outcome] += 1
                else:
                    self.slow.outcomes[outcome] += 1
            if not outcome.isdigit():
                await trio.sleep(REOPEN_DELAY)  # refused or reset: no tight loop

    async def hold_idle(self, opening: trio.CapacityLimiter) -> None:
        """One idle connection to the runtime port, opened again when the node closes it."""
        first = True
        while True:
            async with opening:
                stream = await _connect(self.opts.host, self.opts.rpc_port)
            if first:
                first = False
                self.tried += 1
                if self.tried == self.opts.idle:
                    self.all_tried.set()
            if isinstance(stream, str):
                self.idle[stream] += 1
                await trio.sleep(REOPEN_DELAY)
                continue
            self.idle["opened"] += 1
            self.held += 1
            try:
                closed = await _wait_closed(stream)
            finally:
                self.held -= 1
                stream.socket.close()
            if trio.current_time() < self.window[1]:
                self.held_low = min(self.held_low, self.held)
            self.idle[closed] += 1
            await trio.sleep(REOPEN_DELAY)

    async def rpc_while_held(self) -> dict[str, Any]:
        """``control identity`` of the node under load, asked while the idle are held."""
        t0 = trio.current_time()
        try:
            body = await rpc_call(self.opts.host, self.opts.rpc_port, Identity(), 5.0)
        except ApiError as exc:
            return {
                "ok": False,
                "error": f"{type(exc).__name__}: {exc}",
                "seconds": round(trio.current_time() - t0, 3),
            }
        rpc = body.get("rpc", {}) if isinstance(body, dict) else {}
        return {
            "ok": True,
            "seconds": round(trio.current_time() - t0, 3),
            "rpc": rpc,
            "held": self.held,
        }


def _drop(conn: Conn) -> None:
    """Close ``conn``'s socket, if any; its next request connects again."""
    if conn.stream is not None:
        conn.stream.socket.close()
    conn.stream, conn.buf = None, b""


async def _ask(conn: Conn, raw: bytes) -> str:
    """One request on the keep-alive ``conn``: the status answered, or what happened instead
    (``timeout``, or the error's name); a connection without an answer is dropped."""
    status = "timeout"
    with trio.move_on_after(REQUEST_TIMEOUT):
        try:
            status = str(await conn.request(raw))
        except (OSError, ValueError, trio.BrokenResourceError) as exc:
            status = type(exc).__name__
    if not status.isdigit():
        _drop(conn)
    return status


async def _wait_closed(stream: trio.SocketStream) -> str:
    """Wait until the node closes ``stream``: ``closed by node`` or ``reset by node``."""
    try:
        while await stream.receive_some(4096):
            pass  # the runtime port never sends to a silent client; read and ignore
    except trio.BrokenResourceError:
        return "reset by node"
    return "closed by node"


async def _connect(host: str, port: int) -> trio.SocketStream | str:
    """A TCP connection, or why there is none (``connect failed (errno)``, ``... timed out``)."""
    with trio.move_on_after(CONNECT_TIMEOUT):
        try:
            return await trio.open_tcp_stream(host, port)
        except OSError as exc:
            return f"connect failed ({exc.errno})"
    return "connect timed out"


async def _slow_exchange(host: str, port: int, head: bytes, dribble: bool) -> str:
    """One slow POST: the status the node answered, or ``closed``, ``reset``, ``held`` (no
    answer within ``HOLD_LIMIT``), or why it could not connect."""
    stream = await _connect(host, port)
    if isinstance(stream, str):
        return stream
    async with stream:
        outcome = "held"
        with trio.move_on_after(HOLD_LIMIT):
            async with trio.open_nursery() as nursery:

                async def trickle() -> None:
                    try:
                        await stream.send_all(head)
                        for _ in range(SLOW_LENGTH - 1 if dribble else 0):
                            await trio.sleep(DRIBBLE_EVERY)
                            await stream.send_all(b"a")
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        pass  # the node answered and closed: the reader sees it

                nursery.start_soon(trickle)
                outcome = await _status(stream)
                nursery.cancel_scope.cancel()
    return outcome


async def _status(stream: trio.SocketStream) -> str:
    """The status of the answer on ``stream`` once its head has arrived, or ``closed`` /
    ``reset`` / ``not http``."""
    buf = b""
    try:
        while b"\r\n\r\n" not in buf and len(buf) < 65536:
            chunk = await stream.receive_some(65536)
            if not chunk:
                break
            buf += chunk
    except trio.BrokenResourceError:
        if not buf:
            return "reset"
    parts = buf.split(b" ", 2)
    if len(parts) >= 2 and parts[0].startswith(b"HTTP/") and parts[1].isdigit():
        return parts[1].decode()
    return "closed" if not buf else "not http"


async def run(opts: Options) -> dict[str, Any]:
    """Rules 1 and 2: start every client, run the window, ask the RPC, stop; the figures."""
    r = Run(opts)
    gets = [r.request_bytes(p) for p in PATHS]
    forward = [r.request_bytes(f"/api/nodes/{opts.peer}/workers")]
    started = trio.current_time()
    async with trio.open_nursery() as nursery:
        opening = trio.CapacityLimiter(OPENING_AT_ONCE)
        for _ in range(opts.idle):
            nursery.start_soon(r.hold_idle, opening)
        if opts.idle:
            await r.all_tried.wait()
        for i in range(opts.clients):
            turn = i % len(gets)  # each client starts at its own place in the mix
            nursery.start_soon(r.keep_asking, r.gets, gets[turn:] + gets[:turn], opts.think, True)
        for i in range(opts.slow_posts):
            nursery.start_soon(r.slow_post, i % 2 == 0)
        for _ in range(opts.forwards):
            nursery.start_soon(r.keep_asking, r.forwards, forward, 0.0)
        if opts.clients:  # the window opens on a steady state: every GET client connected
            with trio.move_on_after(WARM_LIMIT):
                await r.all_warm.wait()
        start = trio.current_time()
        r.window, r.held_low = (start, start + opts.seconds), r.held
        opts.ready.write_text(json.dumps({"ramp_s": round(start - started, 3)}))
        await trio.sleep(opts.seconds)
        rpc = await r.rpc_while_held()
        nursery.cancel_scope.cancel()
    return {
        "seconds": opts.seconds,
        "ramp_s": round(start - started, 3),
        "gets": r.gets.as_dict(opts.seconds),
        "slow_posts": r.slow.as_dict(opts.seconds),
        "forwards": r.forwards.as_dict(opts.seconds),
        "idle": {
            "asked": opts.idle,
            "held_fewest": r.held_low if r.held_low != math.inf else 0,
            **dict(sorted(r.idle.items())),
        },
        "rpc_while_held": rpc,
    }


def _options(argv: Sequence[str] | None) -> Options:
    ap = argparse.ArgumentParser(prog="python -m bench.loadgen", description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True, help="the node's dashboard port")
    ap.add_argument("--rpc-port", type=int, required=True, help="the node's runtime port")
    ap.add_argument("--peer", type=int, required=True, help="the paused peer's node id")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--clients", type=int, default=500)
    ap.add_argument("--slow-posts", type=int, default=50)
    ap.add_argument("--forwards", type=int, default=12)
    ap.add_argument("--idle", type=int, default=1000)
    ap.add_argument("--think", type=float, default=0.0, help="seconds between a client's GETs")
    ap.add_argument("--ready", type=Path, required=True, help="written when the run starts")
    ap.add_argument("--out", type=Path, required=True, help="the figures (JSON)")
    a = ap.parse_args(argv)
    if a.host not in ("127.0.0.1", "localhost", "::1"):
        ap.error("loopback only")
    counts = (a.clients, a.slow_posts, a.forwards, a.idle)
    if min(counts) < 0 or a.seconds <= 0 or a.think < 0:
        ap.error("counts are 0 or more; --seconds is more than 0; --think 0 or more")
    return Options(a.host, a.port, a.rpc_port, a.peer, a.seconds, *counts, a.think, a.ready, a.out)


def main(argv: Sequence[str] | None = None) -> None:
    opts = _options(argv)
    need = opts.clients + opts.slow_posts + opts.forwards + opts.idle + SPARE_FDS
    soft = raise_nofile_limit()
    if soft < need:  # root may raise the hard limit too
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (need, need))
        except (OSError, ValueError):
            pass
        soft = nofile_limit()
    if soft < need:
        print(
            f"bench.loadgen: the open-file limit is {soft}, below the {need} descriptors "
            "this load needs (raise the hard limit: ulimit -Hn)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    t0 = time.monotonic()
    result = trio.run(run, opts)
    result["wall_s"] = round(time.monotonic() - t0, 3)
    partial = opts.out.with_suffix(".partial")
    partial.write_text(json.dumps(result, indent=1))
    partial.replace(opts.out)  # the reader never sees half a document


if __name__ == "__main__":
    main()
