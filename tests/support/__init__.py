"""What the tests share: the one process harness and the one ``wait_for``.

Harness, open_harness, Child    processes of a test, started on ``cluster.local``, always ended
wait_for, wait_for_async        poll a condition (sync / trio), WaitTimeout when it never holds
"""

from .harness import HOST, NODE, Child, Harness, open_harness
from .waiting import RETRY_ON, WaitTimeout, wait_for, wait_for_async

__all__ = [
    "HOST",
    "NODE",
    "RETRY_ON",
    "Child",
    "Harness",
    "WaitTimeout",
    "open_harness",
    "wait_for",
    "wait_for_async",
]
