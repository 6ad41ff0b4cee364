"""A child's exit status is kept even when it ends between the two looks ``Processes.state``
takes (``waitpid`` says running, then ``/proc`` shows a zombie).

Found in CI: the schemathesis run's exit status came back None once, so a clean run failed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from cluster.local import processes
from cluster.local.processes import Processes
from tests.support import wait_for


def test_a_child_that_ends_between_the_two_looks_keeps_its_exit_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    procs = Processes()
    child = procs.spawn([sys.executable, "-c", "raise SystemExit(7)"], tmp_path / "log", {})
    real_waitpid = os.waitpid
    first = [True]

    def racing_waitpid(pid: int, flags: int) -> tuple[int, int]:
        if first[0] and flags == os.WNOHANG:
            first[0] = False
            wait_for("the child to end", lambda: processes.process_state(pid, child.started)
                     == "gone", timeout=30)  # fmt: skip
            return 0, 0  # as if it had still been running a moment before
        return real_waitpid(pid, flags)

    monkeypatch.setattr(processes.os, "waitpid", racing_waitpid)
    assert procs.state(child) == "gone"
    assert procs.exit_status(child) == 7
