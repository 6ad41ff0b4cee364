"""This process's own figures: what the admin ``process`` query reports of the node itself.

Rules:
1. Read with psutil on ``os.getpid()``, looked up again after a fork (a forked child is
   another process); a figure psutil cannot read (out of file descriptors, say) is None,
   never an error.
2. ``boot`` is drawn once per process start: a cursor into the node's history is good only
   with the boot that gave it.
"""

from __future__ import annotations

import os
import secrets
import time
from typing import Any

import psutil

__all__ = ["ProcessProbe"]

JSON = dict[str, Any]


class ProcessProbe:
    """This process's own figures (psutil on ``os.getpid()``) since the probe was made."""

    def __init__(self) -> None:
        self.started = time.monotonic()  # seconds, host-monotonic
        self.boot = secrets.token_hex(8)  # this process start; a restart draws another
        self._pid = -1
        self._proc: psutil.Process | None = None
        try:
            self._process()  # primes cpu_percent: its first reading is always 0.0
        except (OSError, psutil.Error):
            pass  # tried again at the first reading

    def _process(self) -> psutil.Process:
        if self._proc is None or self._pid != os.getpid():  # a forked child is another process
            self._pid = os.getpid()
            self._proc = psutil.Process(self._pid)
            self._proc.cpu_percent(None)
        return self._proc

    def figures(self) -> JSON:
        """``pid``, ``uptime_s``, ``cpu_percent`` (since the last reading; over 100 when more
        than one core is busy) and ``rss_bytes``; None for what psutil could not read."""
        cpu: float | None = None
        rss: int | None = None
        try:
            proc = self._process()
            cpu = proc.cpu_percent(None)
            rss = proc.memory_info().rss
        except (OSError, psutil.Error):
            pass  # out of file descriptors, say: the figures are unknown, not an error
        return {
            "pid": os.getpid(),
            "uptime_s": round(time.monotonic() - self.started, 3),
            "cpu_percent": cpu,
            "rss_bytes": rss,
        }
