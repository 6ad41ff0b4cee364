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

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .ground.errors import (
        ApiError,
        BadRequest,
        Conflict,
        Forbidden,
        NotFound,
        PeerUnavailable,
        SettingsError,
        ValidationFailed,
    )
    from .ground.ids import ADMIN_POOL_ID, PoolId
    from .ground.settings import Settings, load_settings
    from .node import Node, open_node, run_node, serve_node
    from .runtime import FORWARD_TIMEOUT, Runtime, SingleNode

# The facade is a door, not a floor: it imports nothing until a name is asked for, so the
# rooms below (``cluster.ground``, ``cluster.runtime``, ...) never load it as a side effect,
# and the node process's membership driver stays unloaded for embedded use until it is used.
_WHERE = {
    **dict.fromkeys(
        (
            "ApiError",
            "BadRequest",
            "Conflict",
            "Forbidden",
            "NotFound",
            "PeerUnavailable",
            "SettingsError",
            "ValidationFailed",
        ),
        "cluster.ground.errors",
    ),
    "ADMIN_POOL_ID": "cluster.ground.ids",
    "PoolId": "cluster.ground.ids",
    "Settings": "cluster.ground.settings",
    "load_settings": "cluster.ground.settings",
    "FORWARD_TIMEOUT": "cluster.runtime",
    "Runtime": "cluster.runtime",
    "SingleNode": "cluster.runtime",
    **dict.fromkeys(("Node", "open_node", "run_node", "serve_node"), "cluster.node"),
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'cluster' has no attribute {name!r}")
    value = getattr(import_module(where), name)
    globals()[name] = value
    return value


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
