"""Capture what real Serf agents send an rtsim node speaking memberlist, plain and sealed.

    python tests/swim/serf_captures/capture.py [DIR]      (from the project's root; DIR
                                                           defaults to this folder)

Twice, first plain, then with the test key ``KEY`` (``-encrypt`` for the agents, a keyring
file for the node): two ``serf agent`` processes tagged ``role=web`` (``serf-b`` joined to
``serf-a``) and one rtsim member ``rt-0`` (``swim.open_swim(..., wire_format=Memberlist(...))``,
joined through ``serf-a``, with a TCP server handing its streams to ``handle_stream``). After
``SETTLE`` seconds and one ``serf event``, ``serf-b`` is asked to join a listener of ours
that never answers, so the push/pull it sends can be kept. Written to DIR:

- ``udp-<plain|sealed>-NN``: the first UDP packet of each shape (first byte, size in 64-byte
  steps) the node received, at most ``MAX_PACKETS`` of them;
- ``stream-<plain|sealed>``: the push/pull ``serf join`` sends.

Needs Debian's ``serf`` on the PATH. The files are test data (``README.md``): rerun only when
they must change, and check the codec tests against the new ones.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import trio

import swim
from cluster.local import free_port
from swim.memberlist import Memberlist

KEY = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVowMTIzNDU="  # base64 of 32 known bytes: a test key
HOST = "127.0.0.1"
SERF = shutil.which("serf") or "serf"
SETTLE = 8.0  # seconds for the agents and the node to gossip before the user event
AFTER_EVENT = 2.0  # seconds for the event's gossip to reach the node
QUIET = 1.5  # seconds of silence that end a captured stream
COMMAND_TIMEOUT = 10.0  # seconds for one serf command
MAX_PACKETS = 40  # packet files per run


class PacketLog:
    """The packets the node receives: how many of each shape (first byte, size in 64-byte
    steps), and the first of each, in the order the shapes first came."""

    def __init__(self) -> None:
        self.seen: Counter[tuple[bytes, int]] = Counter()
        self.first: list[bytes] = []

    def record(self, data: bytes) -> None:
        shape = (data[:1], len(data) // 64)
        self.seen[shape] += 1
        if self.seen[shape] == 1 and len(self.first) < MAX_PACKETS:
            self.first.append(data)

    def wrap(self, receive: Callable[..., Any]) -> Callable[..., Any]:
        """``receive`` (the door's), recording every packet before it is handled."""

        def recording(data: bytes, src: tuple[str, int], now: float) -> Any:
            self.record(data)
            return receive(data, src, now)

        return recording


@dataclass
class Capture:
    """What one run saw: the packets, the join's push/pull, the node's drops by reason."""

    packets: PacketLog = field(default_factory=PacketLog)
    stream: bytes = b""
    dropped: dict[str, int] = field(default_factory=dict)


async def serf(*args: str) -> None:
    """One ``serf`` command (its failure is expected by some callers: not checked)."""
    with trio.move_on_after(COMMAND_TIMEOUT):
        await trio.run_process([SERF, *args], capture_stdout=True, capture_stderr=True, check=False)


async def wait_for_agent(rpc: int) -> None:
    """Until the agent answers ``serf members`` on its RPC port."""
    with trio.fail_after(COMMAND_TIMEOUT):
        while True:
            done = await trio.run_process(
                [SERF, "members", f"-rpc-addr={HOST}:{rpc}"],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
            if done.returncode == 0:
                return
            await trio.sleep(0.1)  # the agent is still starting


@asynccontextmanager
async def serf_agents(key: str | None) -> AsyncIterator[list[tuple[int, int]]]:
    """``serf-a`` and ``serf-b`` (joined to ``serf-a``) running; their (bind, RPC) ports."""
    ports = [(free_port(), free_port()) for _ in range(2)]
    async with trio.open_nursery() as nursery:
        for i, (bind, rpc) in enumerate(ports):
            argv = [SERF, "agent", "-node", f"serf-{'ab'[i]}", "-bind", f"{HOST}:{bind}"]
            argv += ["-rpc-addr", f"{HOST}:{rpc}", "-tag", "role=web"]
            argv += ["-join", f"{HOST}:{ports[0][0]}"] if i else []
            argv += ["-encrypt", key] if key else []
            quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            nursery.start_soon(partial(trio.run_process, argv, check=False, **quiet))
            await wait_for_agent(rpc)
        yield ports
        nursery.cancel_scope.cancel()  # run_process stops its agent: SIGTERM, then SIGKILL


async def serve_streams(handle: swim.SwimHandle, port: int) -> None:
    """The node's TCP side: every connection to ``port`` handed to ``handle_stream``."""

    async def one(conn: trio.SocketStream) -> None:
        first = await conn.receive_some(4)  # as the node's RPC server hands them over
        await handle.handle_stream(conn, first)

    await trio.serve_tcp(one, port, host=HOST)


async def read_until_quiet(conn: trio.SocketStream) -> bytes:
    """Everything ``conn`` sends until it closes or stays silent for ``QUIET`` seconds."""
    got = bytearray()
    while True:
        chunk = b""
        with trio.move_on_after(QUIET):
            chunk = await conn.receive_some(65536)
        if not chunk:
            return bytes(got)
        got += chunk


async def join_stream(rpc: int) -> bytes:
    """What an agent sends when asked to join a member that never answers: its push/pull
    (the ``serf join`` then fails, as it should)."""
    (listener,) = await trio.open_tcp_listeners(0, host=HOST)
    port = listener.socket.getsockname()[1]
    async with listener, trio.open_nursery() as nursery:
        nursery.start_soon(serf, "join", f"-rpc-addr={HOST}:{rpc}", f"{HOST}:{port}")
        with trio.fail_after(COMMAND_TIMEOUT):
            conn = await listener.accept()
        async with conn:
            return await read_until_quiet(conn)


async def capture(key: str | None, keyring_file: str | None) -> Capture:
    """One run (see the module docstring): plain without ``key``, sealed with it."""
    seen = Capture()
    config = swim.SwimConfig.lan(keyring_file=keyring_file)
    async with serf_agents(key) as ((a_bind, a_rpc), (_, b_rpc)):
        port = free_port()
        member = swim.open_swim(
            config,
            node_id=0,
            host=HOST,
            port=port,
            seeds=[f"{HOST}:{a_bind}"],
            wire_format=Memberlist("rt-0"),
        )
        async with member as handle, trio.open_nursery() as nursery:
            assert handle.door is not None  # it speaks memberlist
            handle.door.receive = seen.packets.wrap(handle.door.receive)
            nursery.start_soon(serve_streams, handle, port)
            await trio.sleep(SETTLE)
            await serf("event", f"-rpc-addr={HOST}:{a_rpc}", "deploy", "v1")
            await trio.sleep(AFTER_EVENT)
            seen.stream = await join_stream(b_rpc)
            seen.dropped = dict(handle.machine.counters.dropped)
            nursery.cancel_scope.cancel()
    return seen


def write(folder: Path, label: str, seen: Capture) -> None:
    """The files of one run (``udp-<label>-NN``, ``stream-<label>``), and a line of figures."""
    for i, data in enumerate(seen.packets.first, start=1):
        (folder / f"udp-{label}-{i:02d}").write_bytes(data)
    (folder / f"stream-{label}").write_bytes(seen.stream)
    packets, shapes = sum(seen.packets.seen.values()), len(seen.packets.seen)
    print(f"{label}: {packets} packets of {shapes} shapes; the node dropped {seen.dropped}")


def main(argv: list[str]) -> None:
    folder = Path(argv[0]) if argv else Path(__file__).resolve().parent
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        key_file = Path(tmp) / "gossip.key"
        key_file.write_text(KEY + "\n")
        for label, key, keyring in (("plain", None, None), ("sealed", KEY, str(key_file))):
            write(folder, label, trio.run(capture, key, keyring))


if __name__ == "__main__":
    main(sys.argv[1:])
