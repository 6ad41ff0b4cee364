"""Launching N members as OS processes on loopback: rtsim swim nodes or Serf agents.

Both launchers expose the same small interface: ``start()``, ``wait_converged()``, ``kill(i)``,
``detections(victim, t_kill)`` (first suspect / first dead / full dead, seconds after the kill,
plus how many survivors marked it dead), ``pids()``, ``packets_sent()`` and ``stop()``.

Clocks: every timestamp is ``time.monotonic()`` of this host. rtsim nodes write it into their
event logs; Serf agents are watched by one ``serf monitor`` per agent whose log lines are
stamped by a reader thread on arrival (Serf has no event for "suspect": the prober's memberlist
log line "Suspect <node> has failed" is used, and "EventMemberFailed" for dead).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def free_ports(n: int) -> list[int]:
    """n distinct ports free for both TCP and UDP right now."""
    ports: list[int] = []
    socks = []
    while len(ports) < n:
        t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        t.bind(("127.0.0.1", 0))
        port = t.getsockname()[1]
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            u.bind(("127.0.0.1", port))
        except OSError:
            t.close()
            u.close()
            continue
        socks += [t, u]
        ports.append(port)
    for s in socks:
        s.close()
    return ports


class _Cluster:
    def __init__(self, n: int) -> None:
        self.n = n
        self.procs: list[subprocess.Popen[bytes]] = []
        self.dir = Path(tempfile.mkdtemp(prefix="bench-membership-"))

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def kill(self, i: int) -> float:
        t = time.monotonic()
        os.kill(self.procs[i].pid, signal.SIGKILL)
        return t

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            for f in (p.stdout, p.stderr):
                if f is not None:
                    f.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class RtsimCluster(_Cluster):
    """N ``python -m swim.testing`` processes; member 0 is the seed."""

    def __init__(self, n: int, config: dict[str, Any]) -> None:
        super().__init__(n)
        self.config = config
        self.ports: list[int] = []

    def _launch(self, i: int) -> subprocess.Popen[bytes]:
        # Port 0: each node binds a free UDP port and its TCP twin itself (retrying on a
        # clash), then reports it; pre-picked ports raced with other programs on this host.
        cmd = [
            sys.executable,
            "-m",
            "swim.testing",
            "--id",
            str(i),
            "--port",
            "0",
            "--event-log",
            str(self.dir / f"events-{i}.jsonl"),
            "--config",
            json.dumps(self.config),
        ]
        if i:
            cmd += ["--seed", f"127.0.0.1:{self.ports[0]}"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        err = open(self.dir / f"stderr-{i}.txt", "wb")  # noqa: SIM115
        p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err)
        err.close()
        self.procs.append(p)
        return p

    def _ready_port(self, i: int, p: subprocess.Popen[bytes]) -> int:
        assert p.stdout is not None
        line = p.stdout.readline()
        if not line.startswith(b"READY"):
            tail = (self.dir / f"stderr-{i}.txt").read_text(errors="replace")[-500:]
            raise RuntimeError(f"rtsim node {i} failed to start: {line!r} {tail}")
        return int(line.split()[-1])

    def start(self) -> None:
        """Node 0 (the seed) first; then the other N - 1 all at once."""
        self.ports = [self._ready_port(0, self._launch(0))]
        rest = [self._launch(i) for i in range(1, self.n)]
        self.ports += [self._ready_port(i, p) for i, p in enumerate(rest, start=1)]

    def _stats(self, i: int) -> dict[str, Any] | None:
        import trio

        from swim.testing import query

        async def ask() -> Any:
            return await query("127.0.0.1", self.ports[i], {"k": "stats"}, timeout=5)

        reply = trio.run(ask)
        return reply if isinstance(reply, dict) and reply.get("ok") else None

    def wait_converged(self, timeout: float = 120.0) -> float:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            views = [self._stats(i) for i in range(self.n)]
            if all(
                v and len(v["members"]) == self.n and all(r[3] == "alive" for r in v["members"])
                for v in views
            ):
                return time.monotonic() - t0
            time.sleep(0.25)
        raise RuntimeError("rtsim cluster did not converge")

    def packets_sent(self) -> list[int]:
        out = []
        for i in range(self.n):
            v = self._stats(i)
            out.append(sum(v["statistics"]["sent_packets"].values()) if v else -1)
        return out

    def events(self, i: int) -> list[dict[str, Any]]:
        path = self.dir / f"events-{i}.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def detections(self, victim: int, t_kill: float) -> dict[str, Any]:
        suspect, dead, false_dead = [], {}, 0
        for i in range(self.n):
            if i == victim:
                continue
            for e in self.events(i):
                if e["mono"] < t_kill:
                    continue
                if e["subject"] == victim and e["new"] == "suspected":
                    suspect.append(e["mono"] - t_kill)
                if e["subject"] == victim and e["new"] == "dead" and i not in dead:
                    dead[i] = e["mono"] - t_kill
                if e["subject"] != victim and e["new"] in ("dead", "left"):
                    false_dead += 1
        return _summary(suspect, dead, self.n - 1, false_dead)

    def all_dead_seen(self, victim: int) -> bool:
        return all(
            any(e["subject"] == victim and e["new"] == "dead" for e in self.events(i))
            for i in range(self.n)
            if i != victim
        )


class SerfCluster(_Cluster):
    """N ``serf agent`` processes (profile lan unless told), each watched by a ``serf monitor``
    and reporting to a statsd reader unless ``watch`` is False (the idle benchmark: nothing
    but the agents runs); ``encrypt`` is a base64 key for keyed gossip ("" for none)."""

    def __init__(
        self,
        n: int,
        serf: str = "/usr/bin/serf",
        *,
        profile: str = "lan",
        watch: bool = True,
        encrypt: str = "",
    ) -> None:
        super().__init__(n)
        self.serf = serf
        self.profile, self.watch, self.encrypt = profile, watch, encrypt
        ports = free_ports(3 * n)
        self.bind, self.rpc, self.statsd = ports[:n], ports[n : 2 * n], ports[2 * n :]
        self.monitors: list[subprocess.Popen[bytes]] = []
        self.lines: list[list[tuple[float, str]]] = [[] for _ in range(n)]
        self._stat_socks: list[socket.socket] = []
        self._sent = [0] * n
        self._stop = threading.Event()

    def start(self, *, wait_each: bool = True) -> None:
        """Start the agents, each once the one before answers on its RPC port; with
        ``wait_each`` False only agent 0 is waited for, as ``rt_cluster up`` starts its nodes
        (the monitors need it, so ``watch`` must be False then)."""
        for i in range(self.n):
            cmd = [
                self.serf,
                "agent",
                f"-node=node{i}",
                f"-bind=127.0.0.1:{self.bind[i]}",
                f"-rpc-addr=127.0.0.1:{self.rpc[i]}",
                f"-profile={self.profile}",
                "-log-level=warn",
            ]
            if self.watch:
                cmd.append(f"-config-file={self._statsd(i)}")
            if self.encrypt:
                cmd.append(f"-encrypt={self.encrypt}")
            if i:
                cmd.append(f"-join=127.0.0.1:{self.bind[0]}")
            self.procs.append(
                subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )
            if wait_each or i == 0:
                self._wait_rpc(i)
            if not self.watch:
                continue
            mon = subprocess.Popen(
                [self.serf, "monitor", "-log-level=info", f"-rpc-addr=127.0.0.1:{self.rpc[i]}"],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            self.monitors.append(mon)
            threading.Thread(target=self._reader, args=(i, mon), daemon=True).start()

    def _statsd(self, i: int) -> Path:
        """A statsd reader for agent ``i`` and the agent's config file that names it."""
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", self.statsd[i]))
        s.settimeout(0.2)
        self._stat_socks.append(s)
        threading.Thread(target=self._statsd_reader, args=(i,), daemon=True).start()
        cfg = self.dir / f"agent-{i}.json"
        cfg.write_text(json.dumps({"statsd_addr": f"127.0.0.1:{self.statsd[i]}"}))
        return cfg

    def _wait_rpc(self, i: int, timeout: float = 60.0) -> None:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            try:
                with socket.create_connection(("127.0.0.1", self.rpc[i]), timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"serf agent {i} did not open its RPC port")

    def _reader(self, i: int, mon: subprocess.Popen[bytes]) -> None:
        assert mon.stdout is not None
        for raw in mon.stdout:
            self.lines[i].append((time.monotonic(), raw.decode(errors="replace")))

    def _statsd_reader(self, i: int) -> None:
        s = self._stat_socks[i]
        while not self._stop.is_set():
            try:
                data = s.recv(65536)
            except OSError:
                continue
            for line in data.decode(errors="replace").splitlines():
                if "memberlist.udp.sent" in line:
                    self._sent[i] += 1

    def members(self, i: int) -> dict[str, str]:
        out = subprocess.run(
            [self.serf, "members", "-format=json", f"-rpc-addr=127.0.0.1:{self.rpc[i]}"],
            capture_output=True,
            timeout=30,
            check=False,
        )
        try:
            return {m["name"]: m["status"] for m in json.loads(out.stdout)["members"]}
        except (ValueError, KeyError, TypeError):
            return {}

    def wait_converged(self, timeout: float = 120.0) -> float:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            views = [self.members(i) for i in range(self.n)]
            if all(len(v) == self.n and set(v.values()) == {"alive"} for v in views):
                return time.monotonic() - t0
            time.sleep(0.25)
        raise RuntimeError("serf cluster did not converge")

    def packets_sent(self) -> list[int]:
        return list(self._sent)

    def detections(self, victim: int, t_kill: float) -> dict[str, Any]:
        name = f"node{victim}"
        suspect, dead, false_dead = [], {}, 0
        for i in range(self.n):
            if i == victim:
                continue
            for t, line in self.lines[i]:
                if t < t_kill:
                    continue
                if f"Suspect {name} has failed" in line:
                    suspect.append(t - t_kill)
                if "EventMemberFailed" in line:
                    if f"{name} " in line or line.rstrip().endswith(name):
                        dead.setdefault(i, t - t_kill)
                    else:
                        false_dead += 1
        return _summary(suspect, dead, self.n - 1, false_dead)

    def all_dead_seen(self, victim: int) -> bool:
        name = f"node{victim}"
        return all(
            any("EventMemberFailed" in ln and name in ln for _, ln in self.lines[i])
            for i in range(self.n)
            if i != victim
        )

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def stop(self) -> None:
        self._stop.set()
        for m in self.monitors:
            if m.poll() is None:
                m.kill()
        for m in self.monitors:
            m.wait(timeout=10)
            if m.stdout is not None:
                m.stdout.close()
        super().stop()
        for s in self._stat_socks:
            s.close()


def _summary(
    suspect: list[float], dead: dict[int, float], survivors: int, false_dead: int
) -> dict[str, Any]:
    return {
        "first_suspect": min(suspect) if suspect else None,
        "first_dead": min(dead.values()) if dead else None,
        "full_dead": max(dead.values()) if len(dead) == survivors else None,
        "completeness": len(dead) / survivors,
        "false_dead": false_dead,
    }
