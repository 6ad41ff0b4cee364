"""Processes as a cluster's record knows them: by pid *and* start marker (``record`` rule 3),
the process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22), so a
reused pid is never taken for ours."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["legacy_marker", "process_state", "start_marker"]


def _stat(pid: int) -> tuple[str, int] | None:
    """(state letter, start ticks) of a process from ``/proc/<pid>/stat``; None when gone."""
    if pid <= 0:
        return None
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    rest = data[data.rindex(b")") + 2 :].split()  # the name may hold spaces and parentheses
    return rest[0].decode(), int(rest[19])


def start_marker(pid: int) -> int:
    """The process's start time in clock ticks since boot; 0 when there is no such process."""
    st = _stat(pid)
    return 0 if st is None else st[1]


def process_state(pid: int, started: float) -> str:
    """``running``, ``paused`` (stopped by a signal) or ``gone`` for a recorded process;
    ``started`` is its start marker (0: not checked)."""
    st = _stat(pid)
    if st is None or (started and int(started) != st[1]):
        return "gone"  # no such process, or the pid now names another one
    if st[0] in ("Z", "X", "x"):
        return "gone"
    if st[0] in ("T", "t"):
        return "paused"
    return "running"


def legacy_marker(pid: int, epoch: float) -> int:
    """The start marker of an older record's process, recorded as its start time in epoch
    seconds (to within a second, as that record was read): the live process's marker when it
    started then, else the converted time (which matches no process)."""
    try:
        with open("/proc/stat") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    except (OSError, StopIteration, ValueError):
        return 0
    hz = os.sysconf("SC_CLK_TCK")
    guess = max(1, round((epoch - boot) * hz))
    live = start_marker(pid)
    return live if live and abs(live - guess) <= hz else guess
