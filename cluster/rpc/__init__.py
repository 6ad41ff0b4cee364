"""The node RPC as its callers see it: the frames (one frozen record per request kind, the two
reply records) and the one client, ``rpc_call``. The node serves it (``cluster.node.rpc``);
the launcher, the node's peers, ``rt_run``'s control commands and the benchmarks call it.
Importing it loads no part of the node.

    Monitor, Identity, ... (frames)    the typed requests; encode / decode_untrusted, BadFrame
    rpc_call                           the one client (errors: PeerUnreachable, PeerTimeout,
                                       the remote ApiError, RpcError)
"""

from .client import PeerTimeout, RpcError, rpc_call
from .frames import (
    MAX_FRAME,
    Adopt,
    BadFrame,
    Block,
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

__all__ = [
    "MAX_FRAME",
    "Adopt",
    "BadFrame",
    "Block",
    "Call",
    "Compose",
    "Faults",
    "Identity",
    "Migrate",
    "Monitor",
    "PeerTimeout",
    "PoolMonitor",
    "Pools",
    "Request",
    "RpcError",
    "Stop",
    "Swim",
    "decode_untrusted",
    "encode",
    "rpc_call",
]
