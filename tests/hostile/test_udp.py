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

import pytest

from cluster.local import free_port
from tests.support import WaitTimeout, wait_for

from .attack import finish, record_intact, verdict
from .cluster import Cluster, counters, delta
from .tally import Tally
from .udp_door import STRANGERS_SHARE, drain, events, malformed, send
from .wire_inputs import flood, lies, out_of_range, ping, random_datagrams, truncated

pytestmark = pytest.mark.slow

FLOOD = 20_000  # probes in the flood
FLOOD_SECONDS = 2.0  # ... sent over about this long
BATCH = 50  # forged datagrams sent back to back before a pause
COUNT_WAIT = 10.0  # seconds for the ack barrier


def test_random_datagrams(cluster: Cluster, udp: socket.socket, tally: Tally) -> None:
    ct = tally["udp.random"]
    items = list(random_datagrams(1000))
    malformed(cluster.urls[0], cluster.ports[0], ct, udp, items, paced=2 * STRANGERS_SHARE)
    finish(cluster, ct, "udp.random")


def test_truncated_packets(cluster: Cluster, udp: socket.socket, tally: Tally) -> None:
    ct = tally["udp.truncated"]
    items = list(truncated(500, udp.getsockname()[1]))
    malformed(cluster.urls[0], cluster.ports[0], ct, udp, items, paced=STRANGERS_SHARE)
    finish(cluster, ct, "udp.truncated")


def test_out_of_range_fields(cluster: Cluster, udp: socket.socket, tally: Tally) -> None:
    ct = tally["udp.out_of_range"]
    items = list(out_of_range(udp.getsockname()[1]))
    malformed(cluster.urls[0], cluster.ports[0], ct, udp, items, paced=len(items))
    finish(cluster, ct, "udp.out_of_range")


def test_probe_flood(cluster: Cluster, udp: socket.socket, tally: Tally) -> None:
    """20,000 pings and ping-reqs in about 3 s: the peers must not suspect each other."""
    ct = tally["udp.flood"]
    url, start = cluster.urls[0], time.monotonic()
    before = counters(url)
    items = list(flood(FLOOD, udp.getsockname()[1], cluster.ports[1]))
    acks = send(udp, cluster.ports[0], [data for _, data in items], FLOOD / FLOOD_SECONDS)
    sent_s = time.monotonic() - start
    acks += drain(udp)
    for k, (what, _) in enumerate(items):
        ct.record("acked" if k < acks else "no ack", what)
    ct.notes.update(
        seconds=round(sent_s, 2),
        acks=acks,
        dropped_by_reason=delta(before, counters(url), "swim_dropped_"),
    )
    record_intact(cluster, ct, "udp.flood")  # includes the membership wait after the flood
    for ev in events(cluster, start):
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
    seen = events(cluster, start)
    ct.notes.update(suspicions=sum(ev["new"] == "suspected" for ev in seen))
    for ev in seen:
        if ev["new"] != "suspected":
            ct.fail("a member was declared dead during or after the flood", json.dumps(ev))
    verdict(ct, "udp.forged_flood")


def _barrier(sock: socket.socket, node: int, port: int) -> bool:
    """A ping to the node and its ack: the node has processed what we sent before it (False:
    no ack within ``COUNT_WAIT``, noted in the tally; the membership check still judges)."""
    sock.sendto(ping(4242, node, sock.getsockname()[1]), ("127.0.0.1", port))
    try:
        wait_for(f"node {node}'s ack", lambda: drain(sock), timeout=COUNT_WAIT, interval=0.01)
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
    ct.notes["events"] = events(cluster, start)
