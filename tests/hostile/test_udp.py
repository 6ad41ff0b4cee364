"""Hostile UDP against the SWIM port (the runtime port) of a real 2-node cluster: random bytes,
truncated packets, out-of-range fields, a flood of probes, and lies about a live member.

Every malformed datagram must be dropped and counted (``rt_swim_dropped_total`` on
``/metrics``); the flood must not make the nodes declare each other suspect or dead; no lie may
leave a live member unrefuted. After each class the cluster must be intact
(``cluster.check_intact``).
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from cluster.local import free_port
from tests.support import WaitTimeout, wait_for

from .attack import finish, record_intact, verdict
from .cluster import Cluster, counters, delta
from .tally import ClassTally, Tally
from .wire_inputs import flood, lies, out_of_range, ping, random_datagrams, truncated

pytestmark = pytest.mark.slow

BATCH = 50  # datagrams sent back to back before a pause (no loss in loopback buffers)
PAUSE = 0.005  # seconds between batches: a sending rate, not a wait for a condition
COUNT_WAIT = 10.0  # seconds for the drop counters to account for every malformed datagram
STRANGER_SHARE = 7  # datagrams per fresh source socket per period (the intake allows 8)
STRANGERS_SHARE = 84  # datagrams from all strangers per period (the intake allows 100)
PERIOD = 1.05  # seconds: a little over the protocol period (1 s) the intake counts in
FLOOD = 20_000  # probes in the flood
FLOOD_SECONDS = 2.0  # ... sent over about this long


@pytest.fixture
def udp() -> Iterable[socket.socket]:
    """Our UDP socket on loopback (acks to our probes come back to it)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.bind(("127.0.0.1", 0))
    sock.setblocking(False)
    with sock:
        yield sock


def _drain(sock: socket.socket) -> int:
    """Datagrams waiting on ``sock`` (read and dropped); how many."""
    n = 0
    while True:
        try:
            sock.recv(65536)
        except BlockingIOError:
            return n
        n += 1


def _send(sock: socket.socket, port: int, datagrams: list[bytes], per_second: float = 0) -> int:
    """Send every datagram to ``127.0.0.1:port`` in paced batches; acks received meanwhile."""
    acks = 0
    pause = BATCH / per_second if per_second else PAUSE
    for start in range(0, len(datagrams), BATCH):
        for data in datagrams[start : start + BATCH]:
            sock.sendto(data, ("127.0.0.1", port))
        acks += _drain(sock)
        time.sleep(pause)  # a sending rate (PAUSE), not a wait for a condition
    return acks


def _dropped(url: str) -> float:
    return sum(v for k, v in counters(url).items() if k.startswith("swim_dropped_"))


def _is_rate(reason: str) -> bool:
    """A drop by the intake's rate limits (``swim.intake``), not by the decoder."""
    return reason.startswith(("swim_dropped_rate_", "swim_dropped_relay_"))


def _send_paced(port: int, datagrams: list[bytes]) -> None:
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


def _wait_counted(cluster: Cluster, before: tuple[float, int], n: int) -> tuple[int, int]:
    """Wait until node 0 has counted ``n`` more drops, the kernel's own included (or
    ``COUNT_WAIT`` passes); (drops the node counted, drops the kernel counted)."""
    url, port = cluster.urls[0], cluster.ports[0]

    def now() -> tuple[int, int]:
        return int(_dropped(url) - before[0]), _kernel_drops(port) - before[1]

    try:
        wait_for(
            f"node 0 to count {n} malformed datagrams as dropped",
            now,
            until=lambda d: sum(d) >= n,
            timeout=COUNT_WAIT,
        )
    except WaitTimeout:
        pass  # the shortfall is recorded by the caller
    return now()


def _malformed(
    cluster: Cluster,
    ct: ClassTally,
    sock: socket.socket,
    items: list[tuple[str, bytes]],
    paced: int,
) -> None:
    """Send ``items`` to node 0: the first ``paced`` within the intake's budget (so the
    decoder judges them), the rest at full speed (the rate limits shed them); every one must
    be counted as dropped (by the node, or by the kernel when its buffer overflowed)."""
    url, port = cluster.urls[0], cluster.ports[0]
    start = counters(url)
    base = (_dropped_of(start), _kernel_drops(port))
    _send_paced(port, [data for _, data in items[:paced]])
    _wait_counted(cluster, base, paced)
    middle = counters(url)
    by_decoder = delta(start, middle, "swim_dropped_")
    _send(sock, port, [data for _, data in items[paced:]])
    counted, by_kernel = _wait_counted(cluster, base, len(items))
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


def _dropped_of(snapshot: dict[str, float]) -> float:
    return sum(v for k, v in snapshot.items() if k.startswith("swim_dropped_"))


def test_random_datagrams(cluster: Cluster, udp: socket.socket, tally: Tally) -> None:
    ct = tally["udp.random"]
    _malformed(cluster, ct, udp, list(random_datagrams(1000)), paced=2 * STRANGERS_SHARE)
    finish(cluster, ct, "udp.random")


def test_truncated_packets(cluster: Cluster, udp: socket.socket, tally: Tally) -> None:
    ct = tally["udp.truncated"]
    _malformed(cluster, ct, udp, list(truncated(500, udp.getsockname()[1])), STRANGERS_SHARE)
    finish(cluster, ct, "udp.truncated")


def test_out_of_range_fields(cluster: Cluster, udp: socket.socket, tally: Tally) -> None:
    ct = tally["udp.out_of_range"]
    items = list(out_of_range(udp.getsockname()[1]))
    _malformed(cluster, ct, udp, items, paced=len(items))
    finish(cluster, ct, "udp.out_of_range")


def _events(cluster: Cluster, since: float) -> list[dict[str, object]]:
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


def test_probe_flood(cluster: Cluster, udp: socket.socket, tally: Tally) -> None:
    """20,000 pings and ping-reqs in about 3 s: the peers must not suspect each other."""
    ct = tally["udp.flood"]
    url, start = cluster.urls[0], time.monotonic()
    before = counters(url)
    items = list(flood(FLOOD, udp.getsockname()[1], cluster.ports[1]))
    acks = _send(udp, cluster.ports[0], [data for _, data in items], FLOOD / FLOOD_SECONDS)
    sent_s = time.monotonic() - start
    acks += _drain(udp)
    for k, (what, _) in enumerate(items):
        ct.record("acked" if k < acks else "no ack", what)
    ct.notes.update(
        seconds=round(sent_s, 2),
        acks=acks,
        dropped_by_reason=delta(before, counters(url), "swim_dropped_"),
    )
    record_intact(cluster, ct, "udp.flood")  # includes the membership wait after the flood
    for ev in _events(cluster, start):
        ct.fail("a member was declared suspect/dead during or after the flood", json.dumps(ev))
    verdict(ct, "udp.flood")


def _forged(src_port: int, dst_port: int, payload: bytes) -> bytes:
    """An IPv4/UDP datagram from ``127.0.0.1:src_port`` (forged) to ``127.0.0.1:dst_port``."""
    lo = socket.inet_aton("127.0.0.1")
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28 + len(payload), 0, 0, 64, 17, 0, lo, lo)
    return ip + struct.pack("!HHHH", src_port, dst_port, 8 + len(payload), 0) + payload


def test_flood_in_a_members_name(cluster: Cluster, tally: Tally) -> None:
    """20,000 pings to node 0 with node 1's address forged as their source (acks reflect onto
    node 1), with plain gossip (no keyring), as ``rt_run start`` runs by default: the peers
    must not declare each other dead. Without a key a forged packet cannot be told from the
    member's own, so node 0 sheds node 1's real packets with the forged ones and a transient
    suspicion (refuted) is the expected cost, recorded in the tally; with a keyring (the
    default of ``rt_cluster``) forgeries fail authentication before the member's rate
    bucket, which ``tests/swim`` checks."""
    try:
        raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    except PermissionError:
        pytest.skip("forging a source address needs a raw socket (CAP_NET_RAW)")
    ct = tally["udp.forged_flood"]
    n0, n1 = cluster.ports
    url, start, before = cluster.urls[0], time.monotonic(), counters(cluster.urls[0])
    with raw:
        for start_k in range(0, FLOOD, BATCH):
            for seq in range(start_k, min(FLOOD, start_k + BATCH)):
                raw.sendto(_forged(n1, n0, ping(seq, 0, n1)), ("127.0.0.1", 0))
                ct.record("sent in node 1's name", "ping (forged source: node 1)")
            time.sleep(BATCH * FLOOD_SECONDS / FLOOD)  # a sending rate
    ct.notes.update(
        seconds=round(time.monotonic() - start, 2),
        dropped_by_reason=delta(before, counters(url), "swim_dropped_"),
    )
    record_intact(cluster, ct, "udp.forged_flood")
    events = _events(cluster, start)
    ct.notes.update(suspicions=sum(ev["new"] == "suspected" for ev in events))
    for ev in events:
        if ev["new"] != "suspected":
            ct.fail("a member was declared dead during or after the flood", json.dumps(ev))
    verdict(ct, "udp.forged_flood")


def _barrier(sock: socket.socket, node: int, port: int) -> bool:
    """A ping to the node and its ack: the node has processed what we sent before it (False:
    no ack within ``COUNT_WAIT``, noted in the tally; the membership check still judges)."""
    sock.sendto(ping(4242, node, sock.getsockname()[1]), ("127.0.0.1", port))
    try:
        wait_for(f"node {node}'s ack", lambda: _drain(sock), timeout=COUNT_WAIT, interval=0.01)
    except WaitTimeout:
        return False
    return True


def test_lies_about_a_live_member(cluster: Cluster, udp: socket.socket, tally: Tally) -> None:
    """Spoofed Dead/Suspect at incarnation 2^63-1 and an Alive moving node 1 to a dead port:
    each live member must stay (or become again) alive in both tables."""
    ct = tally["udp.lies"]
    start, before = time.monotonic(), [counters(url) for url in cluster.urls]
    for node, what, data in lies(bogus_port=free_port(udp=True)):
        udp.sendto(data, ("127.0.0.1", cluster.ports[node]))
        ct.record("sent", what)
    ct.notes["processed (ack barrier)"] = [_barrier(udp, i, p) for i, p in enumerate(cluster.ports)]
    ct.notes["dropped_by_reason"] = [
        delta(b, counters(url), "swim_dropped_")
        for b, url in zip(before, cluster.urls, strict=True)
    ]
    finish(cluster, ct, "udp.lies")  # both alive in both tables within the membership wait
    ct.notes["events"] = _events(cluster, start)
