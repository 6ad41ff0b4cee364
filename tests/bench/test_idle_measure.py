"""The idle benchmark's measures (``bench.idle.measure``) on real processes: memory from
smaps_rollup, CPU over a shared window, a process gone is None."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from bench.idle.measure import Memory, cpu_percent, memory, summed

pytestmark = pytest.mark.slow


@pytest.fixture
def processes() -> Iterator[tuple[int, int, int]]:
    """A spinning process, a sleeping one, and the pid of one that has ended."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    procs = [
        subprocess.Popen([sys.executable, "-c", code])
        for code in ("while True: pass", "import time; time.sleep(600)")
    ]
    try:
        yield procs[0].pid, procs[1].pid, gone.pid
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_memory_of_this_process() -> None:
    m = memory(os.getpid())
    assert m is not None
    assert 0 < m.pss <= m.rss
    assert 0 < m.uss <= m.rss
    assert m.private_dirty <= m.uss


def test_a_process_that_is_gone_has_no_figures() -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert memory(p.pid) is None


async def test_cpu_over_one_window(processes: tuple[int, int, int]) -> None:
    spinner, sleeper, gone = processes
    cpu = await cpu_percent([spinner, sleeper, gone], 1.0)
    assert cpu[gone] is None
    busy, idle = cpu[spinner], cpu[sleeper]
    assert busy is not None
    assert idle is not None
    assert 0 <= idle < 5
    assert busy > idle
    assert busy <= 101  # one thread: at most one core


def test_a_node_and_its_watcher_add_up() -> None:
    a, b = Memory(1, 2, 3, 1), Memory(10, 20, 30, 10)
    assert summed([(a, b), (a, None)]) == [Memory(11, 22, 33, 11)]
