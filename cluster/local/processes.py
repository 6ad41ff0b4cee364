"""Processes this host starts and ends: spawned detached or forked from a zygote, watched,
signalled, and ended with proof that they are gone.

Rules:
1. A process runs in its own session (its pid is its process group), stdin from /dev/null,
   stdout and stderr appended to its log: it outlives whoever started it, and a terminal's
   Ctrl-C never reaches it. Signals go to its process group.
2. A process is known by its pid *and* its start marker (clock ticks since boot), so a reused
   pid is never mistaken for it (``process_state``). Children spawned here are reaped here, so
   none is left a zombie; processes forked by a zygote are reaped by their watchers.
3. Ending never trusts a signal: SIGCONT+SIGTERM, wait, then SIGKILL, wait; whatever survives
   is an error (``ClusterError``).
4. Nothing here knows what a node is: argv, log and environment come from the caller.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import site
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import trio

from .record import ClusterError, process_state, start_marker

__all__ = ["PROJECT_ROOT", "Proc", "Processes", "Watched", "Zygote", "child_env", "log_tail"]

log = logging.getLogger(__name__)
PROJECT_ROOT = Path(__file__).resolve().parents[2]
POLL_INTERVAL = 0.05  # seconds between looks while waiting for processes to end
KILL_WAIT = 10.0  # seconds a SIGKILLed process gets to vanish before it counts as a survivor


class Watched(Protocol):
    """Anything naming a process: its pid and start marker (clock ticks since boot, 0 when
    unknown)."""

    @property
    def pid(self) -> int: ...

    @property
    def started(self) -> float: ...


W = TypeVar("W", bound=Watched)


@dataclass(frozen=True, slots=True)
class Proc:
    """A process started here: pid, start marker (clock ticks since boot) and its log."""

    pid: int
    started: int
    log: str


def _installed() -> bool:
    """Whether our packages sit in one of the interpreter's own site folders (an installed
    copy, found by a child without help) rather than in a source checkout."""
    sites = [*site.getsitepackages(), site.getusersitepackages()]
    return any(Path(s).resolve() == PROJECT_ROOT for s in sites)


def child_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: our environment) for a child that must import the code we run: a
    checkout first on PYTHONPATH (an installed copy is found as it is, and its site folder on
    PYTHONPATH would come before the standard library), the working directory never put first
    on the path (PYTHONSAFEPATH, so no ``cluster/`` folder where it was started shadows ours),
    output unbuffered."""
    env = dict(os.environ if base is None else base)
    if not _installed():
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH", "")) if p
        )
    env["PYTHONSAFEPATH"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def log_tail(path: str | Path, lines: int = 12) -> str:
    """The last ``lines`` lines of a log, indented, for an error message."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return "(no log written)"
    tail = text.splitlines()[-lines:]
    return "\n".join("    " + line for line in tail) if tail else "(log is empty)"


class Zygote:
    """A pre-imported parent that forks processes on request, each under a watcher that
    records it in a directory before it runs (the ``cluster.node.zygote`` protocol)."""

    def __init__(self, proc: subprocess.Popen[str], errors: Path | None = None) -> None:
        self._proc = proc
        self._errors = errors  # the zygote's stderr, quoted when it fails

    @property
    def pid(self) -> int:
        return self._proc.pid

    def fork(
        self, argv: Sequence[str], log_path: str, procs: str | Path, tag: Mapping[str, object]
    ) -> Proc:
        """Fork a process running ``argv`` (``rt_run`` arguments), recorded in ``procs`` with
        ``tag``; ClusterError when the zygote cannot."""
        self.send(argv, log_path, procs, tag)
        return self.receive(log_path)

    def send(
        self, argv: Sequence[str], log_path: str, procs: str | Path, tag: Mapping[str, object]
    ) -> None:
        """Ask for a fork without waiting for it: the zygote answers requests in the order
        sent, each with ``receive``. A zygote that is gone shows at that ``receive``."""
        assert self._proc.stdin is not None
        request = {"argv": list(argv), "log": log_path, "procs": str(procs), "tag": dict(tag)}
        with contextlib.suppress(OSError):
            self._proc.stdin.write(json.dumps(request) + "\n")
            self._proc.stdin.flush()

    def receive(self, log_path: str) -> Proc:
        """The process forked for the oldest request not yet received (``log_path`` is its
        log); ClusterError when the zygote could not fork it."""
        assert self._proc.stdout is not None
        try:
            reply = json.loads(self._proc.stdout.readline() or "{}")
        except (OSError, ValueError) as exc:
            reply = {"error": str(exc)}
        if not isinstance(reply, dict) or not isinstance(reply.get("pid"), int):
            why = reply.get("error") if isinstance(reply, dict) else None
            tail = (
                f"; its errors ({self._errors}):\n{log_tail(self._errors)}" if self._errors else ""
            )
            raise ClusterError(f"the zygote could not start a process: {why or 'it ended'}{tail}")
        pid = reply["pid"]
        started = reply.get("started")
        return Proc(pid, started if isinstance(started, int) else start_marker(pid), log_path)


class Processes:
    """The processes one caller starts and watches; it reaps the children it spawned."""

    def __init__(self) -> None:
        self._children: set[int] = set()  # pids spawned here, reaped in state()
        self._exits: dict[int, int] = {}  # pid -> exit status of a child reaped here

    def spawn(self, argv: Sequence[str], log_path: str | Path, env: Mapping[str, str]) -> Proc:
        """Start ``argv`` (``argv[0]`` a path) detached in its own session, output to the log."""
        # posix_spawn rather than Popen: the process must be able to outlive us, and a Popen
        # object of a running child complains when collected. We reap our own in state().
        pid = os.posix_spawn(
            argv[0],
            list(argv),
            dict(env),
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (
                    os.POSIX_SPAWN_OPEN,
                    1,
                    str(log_path),
                    os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                    0o644,
                ),
                (os.POSIX_SPAWN_DUP2, 1, 2),
            ],
            setsid=True,
        )
        self._children.add(pid)
        self._exits.pop(pid, None)
        return Proc(pid, start_marker(pid), str(log_path))

    @contextlib.contextmanager
    def open_zygote(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        errors: Path | None = None,
    ) -> Iterator[Zygote]:
        """A zygote running ``argv`` for the ``with`` block, its stderr appended to ``errors``
        (default: ours). At the end of the block it gets the end of its stdin and is waited
        for, so a fork in flight is recorded; the processes it forked live on."""
        err = open(errors, "ab") if errors is not None else None  # noqa: SIM115
        try:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=child_env() if env is None else dict(env),
                text=True,
            )
        finally:
            if err is not None:
                err.close()
        try:
            yield Zygote(proc, errors)
        finally:
            assert proc.stdin is not None
            assert proc.stdout is not None
            with contextlib.suppress(OSError):
                proc.stdin.close()
            proc.wait()
            proc.stdout.close()

    def state(self, proc: Watched) -> str:
        """The process's state now: ``running``, ``paused`` or ``gone``."""
        if proc.pid in self._children and self._reaped(proc.pid, os.WNOHANG):
            return "gone"
        state = process_state(proc.pid, proc.started)
        if state == "gone" and proc.pid in self._children:
            # it ended between the two looks (a zombie now): reap it, so its status is kept
            self._reaped(proc.pid, 0)
        return state

    def _reaped(self, pid: int, flags: int) -> bool:
        """Reap child ``pid`` if it has ended, keeping its exit status; whether it has."""
        try:
            got, status = os.waitpid(pid, flags)
        except ChildProcessError:  # reaped elsewhere: its status is lost
            got, status = pid, -1
        if got != pid:
            return False
        self._children.discard(pid)
        if status >= 0:
            self._exits[pid] = os.waitstatus_to_exitcode(status)
        return True

    def exit_status(self, proc: Watched) -> int | None:
        """How a child spawned here ended (negative: the signal that ended it); None while it
        runs, or when it is not ours."""
        return self._exits.get(proc.pid)

    def signal(self, proc: Watched, sig: signal.Signals) -> bool:
        """Send ``sig`` to the process group; False if the process is gone."""
        if self.state(proc) == "gone":
            return False
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return False
        except PermissionError:
            os.kill(proc.pid, sig)
        return True

    async def wait_gone(self, procs: Sequence[W], timeout: float) -> list[W]:
        """Wait until every process is gone or ``timeout`` seconds pass; the survivors."""
        deadline = trio.current_time() + timeout
        while True:
            alive = [p for p in procs if self.state(p) != "gone"]
            if not alive or trio.current_time() >= deadline:
                return alive
            await trio.sleep(POLL_INTERVAL)

    async def terminate(
        self,
        procs: Sequence[W],
        *,
        grace: float = 10.0,
        hard: bool = False,
        name: Callable[[W], str] = lambda p: f"pid {p.pid}",
    ) -> None:
        """End the processes (SIGTERM, then SIGKILL after ``grace`` seconds; SIGKILL at once
        when ``hard``); ClusterError naming (``name``) every one that survived SIGKILL."""
        procs = [p for p in procs if p.pid > 0]
        if not hard:
            for p in procs:
                self.signal(p, signal.SIGCONT)  # a stopped process cannot act on SIGTERM
                self.signal(p, signal.SIGTERM)
            procs = await self.wait_gone(procs, grace)
        for p in procs:
            self.signal(p, signal.SIGKILL)
            self.signal(p, signal.SIGCONT)
        left = await self.wait_gone(procs, KILL_WAIT)
        if left:
            raise ClusterError(f"processes survived SIGKILL: {', '.join(map(name, left))}")
