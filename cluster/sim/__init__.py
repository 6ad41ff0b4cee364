"""The whole-node simulator: N whole nodes (runtime, modules, node RPC, SWIM) in one process, on
a simulated network for UDP and TCP, in virtual time, from a seed (docs/testing.md)."""

from .net import SimNet, on_host
from .virtualtime import WALL_BASE, VirtualClock, repeatable
from .wholecluster import BASE_PORT, NodeSlot, WholeCluster, open_whole_cluster

__all__ = [
    "BASE_PORT",
    "WALL_BASE",
    "NodeSlot",
    "SimNet",
    "VirtualClock",
    "WholeCluster",
    "on_host",
    "open_whole_cluster",
    "repeatable",
]
