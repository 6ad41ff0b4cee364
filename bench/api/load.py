"""The load generator: keep-alive HTTP/1.1 GETs over raw trio sockets, one process.

``python -m bench.api.load --port P --path /api/health --connections C --seconds S --warmup W``
prints one JSON line: completed requests, statuses, requests/s, p50/p99/max latency (ms).
Requests started during the warm-up or unfinished at the end are not counted, except in
``completed`` (every answer of the run: the server's CPU time divided by it is its cost per
request). Loopback only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter

import trio

MAX_HEAD = 64 * 1024


class Conn:
    """One keep-alive connection; reconnects when the server closes it (hypercorn ends a
    connection after ``keep_alive_max_requests``)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.stream: trio.SocketStream | None = None
        self.buf = b""
        self.reconnects = 0

    async def _connect(self) -> trio.SocketStream:
        if self.stream is None:
            self.stream = await trio.open_tcp_stream(self.host, self.port)
            self.buf = b""
        return self.stream

    async def _close(self) -> None:
        if self.stream is not None:
            await self.stream.aclose()
        self.stream = None
        self.reconnects += 1

    async def request(self, raw: bytes) -> int:
        for _ in range(3):
            stream = await self._connect()
            try:
                await stream.send_all(raw)
                status, close = await self._read_response(stream)
            except (trio.BrokenResourceError, EOFError, ConnectionError):
                await self._close()
                continue
            if close:
                await self._close()
            return status
        raise ConnectionError("server kept closing the connection")

    async def _read_response(self, stream: trio.SocketStream) -> tuple[int, bool]:
        while b"\r\n\r\n" not in self.buf:
            data = await stream.receive_some(65536)
            if not data:
                raise EOFError
            self.buf += data
            if len(self.buf) > MAX_HEAD:
                raise ValueError("response head too long")
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        length, close = 0, False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                close = True
        while len(self.buf) < length:
            data = await stream.receive_some(65536)
            if not data:
                raise EOFError
            self.buf += data
        self.buf = self.buf[length:]
        return status, close


async def run(host: str, port: int, path: str, connections: int, seconds: float,
              warmup: float) -> dict[str, object]:  # fmt: skip
    raw = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: */*\r\n\r\n".encode()
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    errors = completed = 0  # completed: every answer, the warm-up's and the late ones too
    start = time.perf_counter()
    measure_from = start + warmup
    end = measure_from + seconds

    async def worker() -> None:
        nonlocal errors, completed
        conn = Conn(host, port)
        while True:
            t0 = time.perf_counter()
            if t0 >= end:
                break
            try:
                status = await conn.request(raw)
            except (OSError, ValueError):
                errors += 1
                await trio.sleep(0.01)
                continue
            t1 = time.perf_counter()
            completed += 1
            if t0 >= measure_from and t1 <= end:
                latencies.append(t1 - t0)
                statuses[status] += 1
        if conn.stream is not None:
            await conn.stream.aclose()

    with trio.move_on_after(warmup + seconds + 15):  # a hung server cannot hang the bench
        async with trio.open_nursery() as nursery:
            for _ in range(connections):
                nursery.start_soon(worker)
    latencies.sort()

    def pct(p: float) -> float | None:
        if not latencies:
            return None
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000, 3)

    return {
        "path": path,
        "connections": connections,
        "seconds": seconds,
        "requests": len(latencies),
        "errors": errors,
        "completed": completed,
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "rps": round(len(latencies) / seconds, 1),
        "p50_ms": pct(0.50),
        "p99_ms": pct(0.99),
        "max_ms": round(latencies[-1] * 1000, 3) if latencies else None,
        "mean_ms": round(statistics.fmean(latencies) * 1000, 3) if latencies else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--path", required=True)
    ap.add_argument("--connections", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--warmup", type=float, default=0.5)
    a = ap.parse_args()
    if a.host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit("loopback only")
    result = trio.run(run, a.host, a.port, a.path, a.connections, a.seconds, a.warmup)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
