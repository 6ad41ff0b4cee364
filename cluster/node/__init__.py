"""The node process: the composition root that wires runtime, node RPC, SWIM and dashboard,
and ``rt_run``, the command that starts and drives one node.

    open_node, serve_node, run_node    the embedded API, the daemon, and its exit status
    Monitor, Identity, ... (frames)    the typed RPC requests; encode / decode_untrusted
    rpc_call                           the one client (errors: PeerUnreachable, PeerTimeout,
                                       the remote ApiError)
    serve_rpc, Control, RpcPeers       the server, what a node answers, how it asks peers
    parse_hostfile, resolve_identity   who a node is and whom it joins
    cluster.node.cli                   ``rt_run``;  cluster.node.zygote: the pre-imported forker
"""

from .control import Control
from .frames import (
    Adopt,
    BadFrame,
    Call,
    Compose,
    Faults,
    Identity,
    Migrate,
    Monitor,
    PoolMonitor,
    Pools,
    Request,
    Stop,
    Swim,
    decode_untrusted,
    encode,
)
from .hostfile import parse_hostfile, resolve_identity
from .peers import RpcPeers
from .process import Node, open_node, preload, run_node, serve_node
from .ranks import interface_addresses
from .rpc import (
    MAX_FRAME,
    PeerTimeout,
    RpcError,
    RpcLimits,
    RpcServerStats,
    bound_port,
    open_rpc_listeners,
    rpc_call,
    serve_rpc,
)

__all__ = [
    "MAX_FRAME",
    "Adopt",
    "BadFrame",
    "Call",
    "Compose",
    "Control",
    "Faults",
    "Identity",
    "Migrate",
    "Monitor",
    "Node",
    "PeerTimeout",
    "PoolMonitor",
    "Pools",
    "Request",
    "RpcError",
    "RpcLimits",
    "RpcPeers",
    "RpcServerStats",
    "Stop",
    "Swim",
    "bound_port",
    "decode_untrusted",
    "encode",
    "interface_addresses",
    "open_node",
    "open_rpc_listeners",
    "parse_hostfile",
    "preload",
    "resolve_identity",
    "rpc_call",
    "run_node",
    "serve_node",
    "serve_rpc",
]
