"""``Runtime``: one node's runtime as the node, its modules and its dashboard see it.

Rules:
1. A composition, nothing more: the core (``RuntimeCore``: identity, pool table, life cycle,
   the forward bound) and the answers (``shapes``, ``admin``, ``monitors``, ``views``:
   functions of the ``NodeState`` and ``Forwarder`` Protocols the core satisfies). Each
   method here is one call of an answer; no answer is built here.
2. The modules are loaded here, once the composition is whole: they receive it as their
   ``ModuleContext`` (``admin_monitor`` included, which the admin pool's container answers).
3. ``Runtime`` satisfies ``RuntimeView`` (the dashboard's view) and ``ModuleContext``; mypy
   checks both where the node hands it over.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster.ground.settings import Settings

from . import admin, monitors, shapes, views
from .core import RuntimeCore
from .membership import Membership
from .peers import FORWARD_TIMEOUT, Peers
from .registry import load_modules

__all__ = ["FORWARD_TIMEOUT", "Runtime"]

JSON = dict[str, Any]


class Runtime(RuntimeCore):
    """One node's runtime: the core, with its modules loaded and its answers one call away."""

    def __init__(
        self,
        settings: Settings,
        node_id: int,
        membership: Membership | None = None,
        peers: Peers | None = None,
    ) -> None:
        super().__init__(settings, node_id, membership, peers)
        self.modules = load_modules(self, settings.runtime.modules)
        self.refresh_assets()

    # -- the node's own answers -------------------------------------------------------------

    def health(self) -> JSON:
        return shapes.health(self)

    def topology(self) -> JSON:
        """The host table as this node holds it (``shapes.topology``)."""
        return shapes.topology(self)

    def pools_json(self) -> JSON:
        return shapes.pools_json(self)

    def config_json(self) -> JSON:
        """The settings the node came up with, and where each came from."""
        return shapes.config_json(self)

    def chimods(self) -> JSON:
        return shapes.chimods(self)

    def admin_monitor(self, query: str, params: Mapping[str, str]) -> JSON:
        """The admin pool's monitor: what a per-node query answers for this node."""
        return admin.admin_query(self, query, params)

    async def run_admin_monitor(self, query: str, params: Mapping[str, str]) -> JSON:
        """``admin_monitor`` as one monitor task of the admin pool on this node's workers."""
        return await monitors.run_admin_monitor(self, query, params)

    # -- answered here or forwarded ---------------------------------------------------------

    async def node_monitor(self, node: str, query: str, params: Mapping[str, str]) -> JSON:
        """A per-node query: answered here, or forwarded as one monitor task to the peer."""
        return await monitors.node_monitor(self, node, query, params)

    async def cluster_views(self) -> JSON:
        """Every member's view of every member, asked of each in parallel within the forward
        bound (``views``)."""
        return await views.cluster_views(self)

    async def pool_monitor(
        self,
        pool: str,
        query: str,
        routing: str = "local",
        params: Mapping[str, str] | None = None,
    ) -> JSON:
        """A pool's monitor answer from each container the routing names
        (``monitors``)."""
        return await monitors.pool_monitor(self, pool, query, routing, dict(params or {}))
