"""Running fuzz targets: one engine process per target, bounded, and what each run found.

Rules:
1. Each target runs as ``python -m fuzz.engine NAME`` with libFuzzer's limits: the run's time
   (``-max_total_time``), one input's time (``-timeout``), the process's memory
   (``-rss_limit_mb``) and the input's size (``Target.max_len``). New inputs go to the work
   corpus (``<work>/<name>/``); the seed corpus (``fuzz/corpus/<name>/``) is only read.
2. The input of a crash, timeout or out-of-memory is kept under ``<crashes>/<name>/`` (libFuzzer
   writes it there: ``crash-``, ``timeout-``, ``oom-`` and its SHA-1) and named in the outcome.
3. Every engine process is ended by its pid, also when this process is interrupted: the run
   gets its time plus ``GRACE`` seconds (start-up, the seed corpus, the last input), then it is
   killed and the outcome is ``overrun``. Engines stay in this process's group, so whoever
   signals the group (a terminal's Ctrl-C, the tests' harness) reaches them too.
4. An outcome is a frozen record; ``ok`` is the only status that is not a failure.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from . import CORPUS, CRASHES, HERE, WORK, Target

__all__ = ["GRACE", "Limits", "Outcome", "engine_argv", "run_many", "run_target"]

GRACE = 60.0  # seconds an engine gets past its run time before it is killed
_STATUS = {0: "ok", 70: "timeout", 71: "oom", 77: "crash"}  # libFuzzer's exit codes
_RUNS = re.compile(r"Done (\d+) runs in")
_ARTIFACT = re.compile(r"Test unit written to (\S+)")


@dataclass(frozen=True, slots=True)
class Limits:
    """What one run may take: its time, one input's time (seconds), memory (MiB)."""

    seconds: int = 10
    input_timeout: int = 10
    rss_mb: int = 1536


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one target's run ended: ``ok``, ``crash``, ``timeout``, ``oom``, ``overrun`` (killed
    past its time) or ``error`` (the engine did not run: its log says why)."""

    name: str
    status: str
    exit_code: int | None
    seconds: float
    runs: int | None  # inputs executed, as libFuzzer counted them
    corpus: int  # inputs in the work corpus afterwards
    saved: tuple[Path, ...]  # inputs kept under the crashes directory
    log: Path

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def line(self) -> str:
        """One line for a person: the target, the status and what to look at."""
        runs = "?" if self.runs is None else f"{self.runs}"
        head = f"{self.name:<11} {self.status:<8} {self.seconds:5.1f}s {runs:>9} runs"
        if self.ok:
            return f"{head}, work corpus {self.corpus}"
        kept = ", ".join(map(str, self.saved)) or "no input kept"
        return f"{head}: {kept} (log {self.log}; replay: python -m fuzz.replay {self.name} FILE)"


def engine_argv(target: Target, limits: Limits, work: Path, crashes: Path) -> list[str]:
    """The engine command of one run (``crashes`` is that target's own directory)."""
    argv = [
        sys.executable,
        "-m",
        "fuzz.engine",
        target.module,
        ",".join(target.instrument),
        f"-max_total_time={limits.seconds}",
        f"-timeout={limits.input_timeout}",
        f"-rss_limit_mb={limits.rss_mb}",
        f"-max_len={target.max_len}",
        f"-artifact_prefix={crashes}{os.sep}",
        "-print_final_stats=1",
    ]
    dictionary = HERE / "dicts" / f"{target.name}.dict"
    if dictionary.is_file():
        argv.append(f"-dict={dictionary}")
    seeds = CORPUS / target.name
    return [*argv, str(work), *([str(seeds)] if seeds.is_dir() else [])]


def run_target(
    target: Target, limits: Limits, *, work_root: Path = WORK, crash_root: Path = CRASHES
) -> Outcome:
    """Fuzz ``target`` for ``limits.seconds``; its log is ``<work_root>/<name>.log``."""
    work, crashes = work_root / target.name, crash_root / target.name
    work.mkdir(parents=True, exist_ok=True)
    crashes.mkdir(parents=True, exist_ok=True)
    log = work_root / f"{target.name}.log"
    before = set(crashes.iterdir())
    started = time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            engine_argv(target, limits, work, crashes),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=HERE.parent,
        )
        try:
            code: int | None = proc.wait(timeout=limits.seconds + GRACE)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            if proc.poll() is None:
                proc.kill()  # by its pid (rule 3)
                proc.wait()
    elapsed = time.monotonic() - started
    text = log.read_text(errors="replace")
    saved = tuple(sorted(set(crashes.iterdir()) - before))
    if not saved:  # an input written elsewhere (a prefix libFuzzer did not honour)
        saved = tuple(Path(p) for p in _ARTIFACT.findall(text))
    status = "overrun" if code is None else _STATUS.get(code, "error")
    if status == "ok" and saved:
        status = "crash"
    runs = _RUNS.search(text)
    return Outcome(
        name=target.name,
        status=status,
        exit_code=code,
        seconds=round(elapsed, 1),
        runs=int(runs.group(1)) if runs else None,
        corpus=sum(1 for _ in work.iterdir()),
        saved=saved,
        log=log,
    )


def run_many(
    targets: Sequence[Target],
    limits: Limits,
    *,
    jobs: int = 1,
    work_root: Path = WORK,
    crash_root: Path = CRASHES,
) -> list[Outcome]:
    """Every target, ``jobs`` at a time; the outcomes in the order of ``targets``."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [
            pool.submit(run_target, t, limits, work_root=work_root, crash_root=crash_root)
            for t in targets
        ]
        return [f.result() for f in futures]
