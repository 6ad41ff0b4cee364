"""One HTTP request of a scenario's ``http`` step, timed to its status line.

Rules:
1. The request is HTTP/1.1 over a plain TCP stream (``Connection: close``): the status line is
   what is judged, and its time is measured from before the connection to that line.
2. It never raises for what the node does: a refused connection, silence past ``timeout`` or
   an answer that is not HTTP comes back as the error text, with no status.
"""

from __future__ import annotations

import time

import trio

__all__ = ["host_port", "http_request"]


async def http_request(
    host: str, port: int, method: str, path: str, timeout: float
) -> tuple[int | None, float, str]:
    """One HTTP/1.1 request; (status or None, seconds to the status line, error text)."""
    t = time.monotonic()
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: application/json\r\n"
        "Connection: close\r\nContent-Length: 0\r\n\r\n"
    )
    buf = b""
    try:
        with trio.fail_after(timeout):
            stream = await trio.open_tcp_stream(host, port)
            async with stream:
                await stream.send_all(head.encode())
                while b"\r\n" not in buf:
                    chunk = await stream.receive_some(4096)
                    if not chunk:
                        break
                    buf += chunk
    except trio.TooSlowError:
        return None, time.monotonic() - t, f"no answer within {timeout:g}s"
    except (OSError, trio.BrokenResourceError) as exc:
        return None, time.monotonic() - t, f"connection failed: {exc}"
    elapsed = time.monotonic() - t
    parts = buf.split(b"\r\n", 1)[0].split()
    if len(parts) < 2 or not parts[1].isdigit():
        return None, elapsed, f"not an HTTP answer: {buf[:60]!r}"
    return int(parts[1]), elapsed, ""


def host_port(url: str) -> tuple[str, int]:
    """``http://h:p/`` as ``(h, p)``."""
    hostport = url.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    return host, int(port)
