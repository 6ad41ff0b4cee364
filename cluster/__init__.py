"""The runtime node: settings, pools, modules, workers, stats, node RPC and the node process.

Embedded use (a runtime inside another process, e.g. a test)::

    import trio
    from cluster import load_settings, open_node

    async def main():
        settings = load_settings("embedded")          # no dashboard unless RT_VIZ_ENABLE=1
        async with open_node(settings) as node:
            print(node.runtime.topology())

    trio.run(main)
"""

from typing import TYPE_CHECKING, Any

from .errors import (
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
    PeerUnavailable,
    SettingsError,
    ValidationFailed,
)
from .ids import ADMIN_POOL_ID, PoolId
from .runtime import FORWARD_TIMEOUT, Runtime, SingleNode
from .settings import Settings, load_settings

if TYPE_CHECKING:
    from .node import Node, open_node, run_node, serve_node

_NODE_NAMES = ("Node", "open_node", "run_node", "serve_node")


def __getattr__(name: str) -> Any:
    # The node process pulls in the membership driver; import it only when asked for.
    if name in _NODE_NAMES:
        from . import node

        return getattr(node, name)
    raise AttributeError(name)


__all__ = [
    "ADMIN_POOL_ID",
    "FORWARD_TIMEOUT",
    "ApiError",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Node",
    "NotFound",
    "PeerUnavailable",
    "PoolId",
    "Runtime",
    "Settings",
    "SettingsError",
    "SingleNode",
    "ValidationFailed",
    "load_settings",
    "open_node",
    "run_node",
    "serve_node",
]
