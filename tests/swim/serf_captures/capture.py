"""Capture real Serf agents' packets and streams (plain and sealed) for seeds and tests."""

import socket
import subprocess
import sys
import threading
import time

import trio

sys.path.insert(0, ".")
from swim import SwimConfig, open_swim
from swim.driver import MemberlistOptions

KEY = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVowMTIzNDU="  # base64 of 32 known bytes
OUT = sys.argv[1] if len(sys.argv) > 1 else "tests/swim/serf_captures"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def grab_stream(rpc, label):
    """A listener that serf joins: record what the agent sends in 1.5 s."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    port = ls.getsockname()[1]
    got = []

    def acc():
        c, _ = ls.accept()
        c.settimeout(1.5)
        buf = b""
        try:
            while True:
                d = c.recv(65536)
                if not d:
                    break
                buf += d
        except TimeoutError:
            pass
        got.append(buf)
        c.close()

    t = threading.Thread(target=acc)
    t.start()
    subprocess.run(
        ["serf", "join", "-rpc-addr", f"127.0.0.1:{rpc}", f"127.0.0.1:{port}"],
        capture_output=True,
        timeout=10,
    )
    t.join(5)
    ls.close()
    if got:
        open(f"{OUT}/stream-{label}", "wb").write(got[0])


async def run(key):
    label = "sealed" if key else "plain"
    p0, p1, r0, r1, pm = (free_port() for _ in range(5))
    kf = None
    if key:
        kf = f"/tmp/ml/key-{label}"
        open(kf, "w").write(key + "\n")

    def agent(name, port, rpc, join):
        cmd = [
            "serf",
            "agent",
            "-node",
            name,
            "-bind",
            f"127.0.0.1:{port}",
            "-rpc-addr",
            f"127.0.0.1:{rpc}",
            "-tag",
            "role=web",
        ]
        if join:
            cmd += ["-join", join]
        if key:
            cmd += ["-encrypt", key]
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    procs = [agent("serf-a", p0, r0, None)]
    time.sleep(0.5)
    procs.append(agent("serf-b", p1, r1, f"127.0.0.1:{p0}"))
    seen = {}
    try:
        cfg = SwimConfig.lan(keyring_file=kf)
        async with open_swim(
            cfg,
            node_id=0,
            host="127.0.0.1",
            port=pm,
            seeds=[f"127.0.0.1:{p0}"],
            memberlist=MemberlistOptions("rt-0"),
        ) as h:
            orig = h.door.receive

            def rec(data, src, now):
                kind = data[0] if not key else "x"
                n = seen.setdefault((len(data) // 64, data[:1]), 0)
                if len(seen) < 40 and n == 0:
                    open(f"{OUT}/udp-{label}-{len(seen):02d}", "wb").write(data)
                seen[(len(data) // 64, data[:1])] = n + 1
                return orig(data, src, now)

            h.door.receive = rec

            async def tcp_server():
                async def handler(conn):
                    first = await conn.receive_some(4)
                    await h.handle_stream(conn, first)

                await trio.serve_tcp(handler, pm, host="127.0.0.1")

            async with trio.open_nursery() as n:
                n.start_soon(tcp_server)
                await trio.sleep(8)
                subprocess.run(
                    ["serf", "event", "-rpc-addr", f"127.0.0.1:{r0}", "deploy", "v1"],
                    capture_output=True,
                )
                await trio.sleep(2)
                await trio.to_thread.run_sync(grab_stream, r1, label)
                n.cancel_scope.cancel()
    finally:
        for p in procs:
            p.kill()
            p.wait()
    print(label, len(seen), dict(h.machine.counters.dropped))


trio.run(run, None)
trio.run(run, KEY)
