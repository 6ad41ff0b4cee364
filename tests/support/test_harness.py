"""The harness and ``wait_for`` themselves: waits end with the value or a clear error, and every
process a harness started is gone once it closes, also when the test body raised."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio
import trio.lowlevel

from cluster.local import process_state
from tests.support import Harness, WaitTimeout, open_harness, wait_for, wait_for_async

ROOT = Path(__file__).resolve().parents[2]
SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]
STUBBORN = [
    sys.executable,
    "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True)"
    "; time.sleep(600)",
]


# ---- wait_for ------------------------------------------------------------------------------


def test_wait_for_returns_the_first_truthy_value() -> None:
    answers = iter([None, 0, OSError("not listening"), "yes"])

    def check() -> object:
        value = next(answers)
        if isinstance(value, Exception):
            raise value
        return value

    assert wait_for("an answer", check, interval=0.001) == "yes"


def test_wait_for_names_what_it_waited_for_and_the_last_value() -> None:
    with pytest.raises(WaitTimeout, match=r"after 0.05s waiting for the moon \(last: 0\)"):
        wait_for("the moon", lambda: 0, timeout=0.05)
    with pytest.raises(WaitTimeout, match=r"the port \(last: ConnectionRefusedError"):
        wait_for("the port", _refused, timeout=0.05)


def _refused() -> None:
    raise ConnectionRefusedError("refused")


def test_wait_for_stops_at_once_on_an_error_it_does_not_retry() -> None:
    looks = []

    def check() -> None:
        looks.append(1)
        raise AssertionError("the process died")

    with pytest.raises(AssertionError, match="the process died"):
        wait_for("anything", check, timeout=10)
    assert looks == [1]


async def test_wait_for_async_awaits_an_async_check_on_trios_clock() -> None:
    seen = []

    async def check() -> int | None:
        await trio.lowlevel.checkpoint()
        seen.append(1)
        return len(seen) if len(seen) == 3 else None

    assert await wait_for_async("three looks", check, interval=0.001) == 3
    with pytest.raises(WaitTimeout, match=r"waiting for nothing \(last: False\)"):
        await wait_for_async("nothing", lambda: False, timeout=0.05)


# ---- the harness ---------------------------------------------------------------------------


def _a_failing_test(tmp_path: Path, seen: list[Harness]) -> None:
    with open_harness(tmp_path, grace=0.5) as h:
        seen.append(h)
        sleeper, paused, stubborn = (h.start(a, n) for a, n in PROCS)
        h.wait_log(stubborn, "ready")
        h.pause(paused)
        assert h.state(paused) == "paused"
        assert h.alive(sleeper)
        raise RuntimeError("the test failed")


PROCS = ((SLEEPER, "sleeper"), (SLEEPER, "paused"), (STUBBORN, "stubborn"))


@pytest.mark.slow
def test_close_ends_every_process_even_when_the_body_raised(tmp_path: Path) -> None:
    seen: list[Harness] = []
    with pytest.raises(RuntimeError, match="the test failed"):
        _a_failing_test(tmp_path, seen)
    (h,) = seen
    sleeper, paused, stubborn = h.children
    for child in h.children:
        assert process_state(child.pid, child.started) == "gone", child
    assert h.exit_status(stubborn) == -9  # it ignored SIGTERM: SIGKILL after the grace
    assert h.exit_status(sleeper) == h.exit_status(paused) == -15


@pytest.mark.slow
def test_a_wait_on_a_process_that_exited_fails_at_once_with_its_log(tmp_path: Path) -> None:
    with open_harness(tmp_path) as h:
        child = h.start([sys.executable, "-c", "print('bye')"], "short")
        t0 = time.monotonic()
        with pytest.raises(AssertionError, match=r"(?s)short \(pid \d+\) exited with 0.*bye"):
            h.wait_log(child, "never printed", timeout=30)
        assert time.monotonic() - t0 < 30  # it did not wait out its timeout


INNER = """
import sys
from tests.conftest import harness

SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]

def test_fails(harness):
    children = [harness.start(SLEEPER, "sleeper"), harness.start(SLEEPER, "paused")]
    harness.pause(children[1])
    for child in children:
        print("CHILD", child.pid, child.started, flush=True)
    raise RuntimeError("the test body failed")
"""


@pytest.mark.slow
def test_the_fixture_ends_its_processes_after_a_failed_test(tmp_path: Path) -> None:
    (tmp_path / "test_inner.py").write_text(INNER)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), str(tmp_path / "test_inner.py")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    assert "the test body failed" in run.stdout
    children = re.findall(r"CHILD (\d+) ([\d.]+)", run.stdout)
    assert len(children) == 2, run.stdout
    for pid, started in children:
        assert process_state(int(pid), float(started)) == "gone"
