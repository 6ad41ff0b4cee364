"""What the tests share: the one process harness and the one ``wait_for``.

Harness, open_harness, Child    processes of a test, started on ``cluster.local``, always ended
running                         whether a pid still runs (a zombie has ended)
wait_for, wait_for_async        poll a condition (sync / trio), WaitTimeout when it never holds
hold_port, held_socket          a port held taken on purpose (TCP listening, or UDP)

Imported by module: ``clusters`` (the rt_cluster command, its usual ``up`` line, runs in the
foreground, proof that nothing of a cluster runs), ``runtime`` (a network-less runtime),
``linked`` (runtimes of several nodes in one loop, linked as the node RPC links them),
``memudp`` (an in-memory UDP network for trio, with a ``MockClock``), ``strategies``
(hypothesis: what a msgpack peer can send), ``traces`` (hand-written membership events),
``memberlist_packets`` (memberlist's packets made by hand), ``yamlbombs`` (YAML that attacks
its reader), ``pinned`` (values a move of code must leave unchanged), ``memstore`` (a block
device in memory whose writes can be held, and a small array over such devices).
"""

from .harness import HOST, NODE, Child, Harness, open_harness, running
from .ports import held_socket, hold_port
from .waiting import RETRY_ON, WaitTimeout, wait_for, wait_for_async

__all__ = [
    "HOST",
    "NODE",
    "RETRY_ON",
    "Child",
    "Harness",
    "WaitTimeout",
    "held_socket",
    "hold_port",
    "open_harness",
    "running",
    "wait_for",
    "wait_for_async",
]
