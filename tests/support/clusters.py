"""What the rt_cluster tests share: running the command (to its end, or in the foreground),
its usual ``up`` line, and finding every process that still holds a file of a cluster's
directory (a node, or a node's watcher), however it was started.

A process of a cluster always holds its log open (stdout), so "nothing holds a file under the
directory" is proof that nothing of the cluster runs, independent of any record the code under
test keeps.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import IO

import trio

from cluster.local import ClusterError, Member, Processes, child_env, live_members, read_record
from cluster.local.netns import network_key, privileged, remove_network
from scenarios.command import main
from tests.support import wait_for

__all__ = [
    "NO_WORKLOAD",
    "ZYGOTE",
    "end_everything",
    "holders_of",
    "interrupt",
    "open_rt_cluster",
    "quiet_config",
    "read_until",
    "rt_cluster",
    "run_main",
    "up_argv",
    "wait_nothing_holds",
    "zygote_env",
]

NO_WORKLOAD = "workload: {enabled: false}\n"
ZYGOTE = [sys.executable, "-m", "cluster.node.zygote"]


def zygote_env(tmp_path: Path) -> dict[str, str]:
    """A zygote's environment: no RT_ settings of the caller's, HOME under ``tmp_path``."""
    ours = {k: v for k, v in os.environ.items() if not k.startswith("RT_")}
    return child_env({**ours, "HOME": str(tmp_path)})


def rt_cluster(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scenarios.command", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=os.environ.copy(),
        check=False,
    )


def quiet_config(directory: Path) -> Path:
    """``<directory>/node.yaml`` with the workload off (nodes at rest); its path."""
    config = directory / "node.yaml"
    config.write_text(NO_WORKLOAD)
    return config


def up_argv(name: str, n: int, config: Path, *more: str) -> list[str]:
    """``up`` of ``n`` nodes named ``name``, every port picked free, each node on ``config``."""
    ports = ["--base-port", "0", "--runtime-base-port", "0"]
    return ["up", "-n", str(n), "--name", name, *ports, "--config", str(config), *more]


@contextlib.contextmanager
def open_rt_cluster(argv: Sequence[str], errors: Path) -> Iterator[subprocess.Popen[str]]:
    """``rt_cluster ARGV`` running as this test's child (an ``up``, maybe ``--foreground``):
    its standard output a pipe to read (``read_until``, ``interrupt``), its standard error to
    the file ``errors``; killed and reaped if it still runs when the block ends, however the
    block ends."""
    with open(errors, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "scenarios.command", *argv],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=os.environ.copy(),
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        if proc.stdout is not None:
            proc.stdout.close()  # not read to its end: a node it left running may hold it
        proc.wait()


def interrupt(proc: subprocess.Popen[str], timeout: float = 60) -> str:
    """Ctrl-C ``proc`` (SIGINT) and wait until it has ended; the rest of its standard output."""
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=timeout)
    return out


def holders_of(directory: Path) -> list[int]:
    """The pids (other than ours) with a file under ``directory`` open."""
    prefix = str(directory.resolve()) + os.sep
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            links = [os.readlink(fd) for fd in (entry / "fd").iterdir()]
        except OSError:
            continue
        if any(link.startswith(prefix) for link in links):
            found.append(int(entry.name))
    return found


def wait_nothing_holds(directory: Path, timeout: float = 30.0) -> None:
    """Wait until no process holds a file under ``directory`` (a watcher exits just after its
    node); fail naming the holders."""

    def describe() -> list[str]:
        out = []
        for pid in holders_of(directory):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            out.append(f"{pid}: {cmd.strip()}")
        return out

    wait_for(f"nothing to hold files under {directory}", describe, until=lambda h: not h,
             timeout=timeout, interval=0.1)  # fmt: skip


def run_main(*argv: str) -> tuple[int, str, str]:
    """``rt_cluster ARGV`` in this process: its exit code, standard output and error."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def read_until(stream: IO[str], marker: str) -> list[str]:
    """Lines of ``stream`` up to the one containing ``marker`` (the process's own pace)."""
    lines = []
    for line in stream:
        lines.append(line)
        if marker in line:
            return lines
    raise AssertionError(f"{marker!r} never came; output: {''.join(lines)}")


def sigint_as_in_a_terminal() -> None:
    """A child's ``preexec_fn``: Ctrl-C (SIGINT) reaches it as it reaches a foreground job,
    however this pytest was started. A background job of a shell without job control (``cmd
    &``) ignores SIGINT, and its children inherit that: a test of Ctrl-C must not."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def end_an_inner_run(out: Path) -> None:
    """After a test had to SIGKILL the pytest it ran: end every process of the cluster whose
    directory that pytest wrote to ``out`` (if it got that far) and remove its network, so a
    failing test leaves nothing behind either."""
    if not out.exists():
        return
    directory = Path(out.read_text())
    end_everything(directory.parent)
    if privileged():
        remove_network(network_key(directory))


def end_everything(home: Path) -> None:
    """Last resort: SIGKILL every live process any cluster under ``home`` knows of (recorded in
    cluster.json or by a watcher; a pid that now names another process is left alone), prove
    each gone, then SIGKILL whatever still holds a file under ``home``."""
    running: list[Member] = []
    for directory in home.iterdir() if home.is_dir() else ():
        try:
            record = read_record(directory)
        except ClusterError:
            record = None
        running += live_members(directory, record)
    try:
        trio.run(partial(Processes().terminate, running, hard=True, name=Member.label))
    finally:
        for pid in holders_of(home):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
