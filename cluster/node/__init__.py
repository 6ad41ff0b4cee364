"""The node process: the composition root that wires runtime, node RPC, SWIM and dashboard,
and ``rt_run``, the command that starts and drives one node.

    open_node, serve_node, run_node    the embedded API, the daemon, and its exit status
    serve_rpc, Control, RpcPeers       the RPC server, what a node answers, how it asks peers
    cluster.node.cli                   ``rt_run``;  cluster.node.zygote: the pre-imported forker

The frames and the client are ``cluster.rpc``'s; the hostfile and this machine's addresses
are ``cluster.hosts``'s.
"""

from .control import Control
from .peers import RpcPeers
from .process import Node, open_node, preload, run_node, serve_node
from .rpc import (
    RpcLimits,
    RpcServerStats,
    bound_port,
    open_rpc_listeners,
    serve_rpc,
)

__all__ = [
    "Control",
    "Node",
    "RpcLimits",
    "RpcPeers",
    "RpcServerStats",
    "bound_port",
    "open_node",
    "open_rpc_listeners",
    "preload",
    "run_node",
    "serve_node",
    "serve_rpc",
]
