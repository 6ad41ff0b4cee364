"""A last resort for the clusters a chaos test launched and no ``aclose`` ended (Ctrl-C at the
wrong moment, a crashed test process).

Rules:
1. Every cluster directory is registered (``register``) before its first process starts and
   forgotten (``forget``) once proved empty.
2. At interpreter exit (``atexit``) ``end_leftovers`` SIGKILLs the live processes of every
   directory still registered, each checked by pid and start marker, never by name, then
   removes their namespaces; ``kill_leftovers_now`` does the SIGKILL without waiting (safe in
   a signal handler).
"""

from __future__ import annotations

import atexit
import signal
import sys
from pathlib import Path

import trio

from cluster.local import ClusterError, Member, Processes, live_members, netns, read_record

__all__ = ["end_leftovers", "forget", "kill_leftovers_now", "register", "registered"]

_REGISTERED: set[Path] = set()  # cluster directories not yet proved empty


def register(directory: Path) -> None:
    """Rule 1: ``directory``'s processes are to be proved gone."""
    _REGISTERED.add(directory)


def forget(directory: Path) -> None:
    """Rule 1: ``directory`` holds no live process any more."""
    _REGISTERED.discard(directory)


def registered() -> list[Path]:
    """The cluster directories whose processes are not yet proved gone (rule 1)."""
    return sorted(_REGISTERED)


def _leftovers() -> list[Member]:
    running: list[Member] = []
    for directory in sorted(_REGISTERED):
        try:
            record = read_record(directory)
        except ClusterError:
            record = None
        running += live_members(directory, record)
    return running


def kill_leftovers_now() -> list[int]:
    """Rule 2 without waiting (safe in a signal handler, inside trio or not): SIGKILL to the
    process group of every live process of every registered cluster; their pids. The
    namespaces stay: ``end_leftovers`` (at exit) removes them, or else the next
    ``rt_cluster down`` of that directory does."""
    running = _leftovers()
    procs = Processes()
    for m in running:
        procs.signal(m, signal.SIGKILL)
    return [m.pid for m in running]


def _remove_networks() -> None:
    """Rule 2: the namespaces, veth pairs and bridge of every registered cluster."""
    for directory in sorted(_REGISTERED):
        key = netns.network_key(directory)
        if netns.leftovers(key):
            try:
                netns.remove_network(key)
            except ClusterError as exc:
                print(f"rtsim: the network of {directory} stays: {exc}", file=sys.stderr)


def end_leftovers() -> list[int]:
    """Rule 2: SIGKILL every live process of every registered cluster directory and wait
    until each is gone; their pids. Safe to call at any time outside trio."""
    running = _leftovers()
    if running:
        trio.run(_kill_all, running)
    _remove_networks()
    _REGISTERED.clear()
    return [m.pid for m in running]


async def _kill_all(running: list[Member]) -> None:
    await Processes().terminate(running, hard=True, name=Member.label)


atexit.register(end_leftovers)
