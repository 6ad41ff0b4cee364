"""The node process: the composition root that wires runtime, node RPC, SWIM and dashboard,
and ``rt_run``, the command that starts and drives one node.

    open_node, serve_node, run_node    the embedded API, the daemon, and its exit status
    rpc_call, serve_rpc                node-to-node RPC on the runtime port
    cluster.node.cli                   ``rt_run``;  cluster.node.zygote: the pre-imported forker
"""

from .process import Node, open_node, parse_hostfile, preload, run_node, serve_node
from .rpc import MAX_FRAME, RpcError, RpcServerStats, rpc_call, serve_rpc

__all__ = [
    "MAX_FRAME",
    "Node",
    "RpcError",
    "RpcServerStats",
    "open_node",
    "parse_hostfile",
    "preload",
    "rpc_call",
    "run_node",
    "serve_node",
    "serve_rpc",
]
