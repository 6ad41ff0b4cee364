"""Sending hostile datagrams to a node's UDP door and counting what it dropped: paced within the
intake's budget (so the decoder judges each one) or at full speed (so the rate limits shed
them), the node's drop counters (``rt_swim_dropped_total``) and the kernel's, and the
membership events the nodes logged. ``test_udp`` (our protocol) and ``test_memberlist``
(memberlist's) share it.

Rules:
1. Sending rates are ``time.sleep`` between batches (a rate, not a wait for a condition);
   waits for the counters go through ``wait_for``.
2. A malformed datagram is accounted for when the node counted it as dropped (by the decoder
   or a rate limit) or the kernel dropped it (the node's receive buffer was full); the rest
   are recorded ``not counted``, a failure.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from tests.support import WaitTimeout, wait_for

from .cluster import Cluster, counters, delta
from .tally import ClassTally

__all__ = [
    "PERIOD",
    "STRANGERS_SHARE",
    "drain",
    "dropped",
    "events",
    "malformed",
    "send",
    "send_paced",
]

BATCH = 50  # datagrams sent back to back before a pause (no loss in loopback buffers)
PAUSE = 0.005  # seconds between batches: a sending rate, not a wait for a condition
COUNT_WAIT = 10.0  # seconds for the drop counters to account for every malformed datagram
STRANGER_SHARE = 7  # datagrams per fresh source socket per period (the intake allows 8)
STRANGERS_SHARE = 84  # datagrams from all strangers per period (the intake allows 100)
PERIOD = 1.05  # seconds: a little over the protocol period (1 s) the intake counts in


def drain(sock: socket.socket) -> int:
    """Datagrams waiting on ``sock`` (read and dropped); how many."""
    n = 0
    while True:
        try:
            sock.recv(65536)
        except BlockingIOError:
            return n
        n += 1


def send(sock: socket.socket, port: int, datagrams: list[bytes], per_second: float = 0) -> int:
    """Send every datagram to ``127.0.0.1:port`` in paced batches; acks received meanwhile."""
    acks = 0
    pause = BATCH / per_second if per_second else PAUSE
    for start in range(0, len(datagrams), BATCH):
        for data in datagrams[start : start + BATCH]:
            sock.sendto(data, ("127.0.0.1", port))
        acks += drain(sock)
        time.sleep(pause)  # a sending rate (PAUSE), not a wait for a condition
    return acks


def dropped(url: str) -> float:
    """Every datagram the node at ``url`` counted as dropped, whatever the reason."""
    return sum(v for k, v in counters(url).items() if k.startswith("swim_dropped_"))


def _is_rate(reason: str) -> bool:
    """A drop by the intake's rate limits (``swim.intake``), not by the decoder."""
    return reason.startswith(("swim_dropped_rate_", "swim_dropped_relay_"))


def send_paced(port: int, datagrams: list[bytes]) -> None:
    """Send as strangers within the intake's budget (``STRANGER_SHARE`` datagrams per fresh
    source, ``STRANGERS_SHARE`` per protocol period), so each reaches the decoder."""
    for start in range(0, len(datagrams), STRANGERS_SHARE):
        t0 = time.monotonic()
        chunk = datagrams[start : start + STRANGERS_SHARE]
        for k in range(0, len(chunk), STRANGER_SHARE):
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                for data in chunk[k : k + STRANGER_SHARE]:
                    sock.sendto(data, ("127.0.0.1", port))
        time.sleep(max(0.0, PERIOD - (time.monotonic() - t0)))  # a sending rate


def _kernel_drops(port: int) -> int:
    """Datagrams the kernel dropped for the node's socket on ``127.0.0.1:port`` (its receive
    buffer was full): the ``drops`` column of ``/proc/net/udp``; 0 where there is none."""
    want = f"0100007F:{port:04X}"
    try:
        lines = Path("/proc/net/udp").read_text().splitlines()[1:]
    except OSError:
        return 0
    return sum(int(f[-1]) for f in (ln.split() for ln in lines) if f[1] == want)


def _wait_counted(url: str, port: int, before: tuple[float, int], n: int) -> tuple[int, int]:
    """Wait until the node has counted ``n`` more drops, the kernel's own included (or
    ``COUNT_WAIT`` passes); (drops the node counted, drops the kernel counted)."""

    def now() -> tuple[int, int]:
        return int(dropped(url) - before[0]), _kernel_drops(port) - before[1]

    try:
        wait_for(
            f"the node at {url} to count {n} malformed datagrams as dropped",
            now,
            until=lambda d: sum(d) >= n,
            timeout=COUNT_WAIT,
        )
    except WaitTimeout:
        pass  # the shortfall is recorded by the caller
    return now()


def malformed(
    url: str,
    port: int,
    ct: ClassTally,
    sock: socket.socket,
    items: list[tuple[str, bytes]],
    paced: int,
) -> None:
    """Send ``items`` to the node at ``url`` (UDP ``port``): the first ``paced`` within the
    intake's budget (so the decoder judges them), the rest at full speed (the rate limits
    shed them); every one must be counted as dropped (rule 2)."""
    start = counters(url)
    base = (sum(v for k, v in start.items() if k.startswith("swim_dropped_")), _kernel_drops(port))
    send_paced(port, [data for _, data in items[:paced]])
    _wait_counted(url, port, base, paced)
    middle = counters(url)
    by_decoder = delta(start, middle, "swim_dropped_")
    send(sock, port, [data for _, data in items[paced:]])
    counted, by_kernel = _wait_counted(url, port, base, len(items))
    decoded = int(sum(v for k, v in by_decoder.items() if not _is_rate(k)))
    ct.notes["paced_dropped_by_reason"] = by_decoder
    ct.notes["fast_dropped_by_reason"] = delta(middle, counters(url), "swim_dropped_")
    ct.notes["dropped_by_the_kernel"] = by_kernel
    labels = [
        ("dropped by the decoder (counted)", decoded),
        ("dropped by a rate limit (counted)", counted - decoded),
        ("dropped by the kernel (buffer full)", by_kernel),
    ]
    k = 0
    for label, n in labels:
        for what, _ in items[k : k + max(0, n)]:
            ct.record(label, what)
        k += max(0, n)
    for what, _ in items[k:]:
        ct.record("not counted", what, "not counted as dropped (rt_swim_dropped_total)")


def events(cluster: Cluster, since: float) -> list[dict[str, object]]:
    """Membership events of both nodes (their ``--events`` logs) at or after ``since``
    (``time.monotonic()`` of this host) in which a member went suspect, dead or left."""
    found = []
    for i in range(len(cluster.nodes)):
        path = cluster.harness.workdir / f"events{i}.jsonl"
        lines = path.read_text().splitlines() if path.exists() else []
        for line in lines:
            ev = json.loads(line)
            if ev["mono"] >= since and ev["new"] not in ("alive", "probe_failed"):
                found.append(ev)
    return found
