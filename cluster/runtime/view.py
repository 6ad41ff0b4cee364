"""The runtime as the dashboard sees it: a narrow, read-mostly view (``Runtime`` satisfies it;
mypy checks that where the node hands its runtime to the dashboard).

The dashboard depends on this Protocol, not on the ``Runtime`` class, so an HTTP handler
can reach only what is named here: the node's own answers, the per-node and per-pool
monitors and the cluster's views (which forward under the runtime's 5 s bound), compose and
destroy, and what the dashboard's metrics and asset lookup read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from .membership import Membership
from .module import Container, Module, ModuleContext

__all__ = ["RuntimeView"]

JSON = dict[str, Any]


class RuntimeView(ModuleContext, Protocol):
    @property
    def modules(self) -> Mapping[str, Module]: ...
    @property
    def assets(self) -> Mapping[str, str]:
        """Page folders of the loaded modules, by module name."""

    @property
    def membership(self) -> Membership: ...
    @property
    def is_leader(self) -> bool: ...

    def health(self) -> JSON: ...
    def topology(self) -> JSON: ...
    def pools_json(self) -> JSON: ...
    def config_json(self) -> JSON: ...
    def chimods(self) -> JSON: ...
    def containers(self) -> list[Container]: ...
    def suggest_pool_id(self, mod_name: str) -> str: ...

    def resolve_node(self, node: str) -> int:
        """``local``, ``self`` or a known id -> the node id; ``UnknownNode`` otherwise."""

    async def node_monitor(self, node: str, query: str, params: Mapping[str, str]) -> JSON:
        """A per-node query, answered here or forwarded."""

    async def cluster_views(self) -> JSON:
        """Every member's view of every member (``cluster.runtime.views``)."""

    async def pool_monitor(
        self,
        pool: str,
        query: str,
        routing: str = "local",
        params: Mapping[str, str] | None = None,
    ) -> JSON:
        """A pool's monitor answer from each container the routing names."""
