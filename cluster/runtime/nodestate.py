"""What the answers read of a node, as Protocols: the runtime's core satisfies them, and no
answer names the ``Runtime`` class.

    NodeState   identity, membership, settings and the node's own tables (read only)
    Forwarder   a NodeState that can also reach its peers: ``reach`` (the peers, which bound
                every call, and the member to ask), the host table's ``resolve_node`` and
                this node's own pool monitor
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from cluster.ground.ids import PoolId
from cluster.ground.settings import Settings

from .membership import MemberLike, Membership
from .module import Module
from .peers import Peers
from .pools import PoolManager
from .probe import ProcessProbe
from .sysstats import StatsRing
from .workers import WorkerPool

__all__ = ["Forwarder", "NodeState"]


class NodeState(Protocol):
    """A node's identity and own state, as the answers read them (never change them)."""

    @property
    def node_id(self) -> int: ...
    @property
    def hostname(self) -> str: ...
    @property
    def ip_address(self) -> str: ...
    @property
    def is_leader(self) -> bool: ...
    @property
    def dashboard_url(self) -> str | None: ...
    @property
    def viz_address(self) -> tuple[str, int] | None: ...
    @property
    def settings(self) -> Settings: ...
    @property
    def membership(self) -> Membership: ...
    @property
    def process(self) -> ProcessProbe: ...
    @property
    def pools(self) -> PoolManager: ...
    @property
    def workers(self) -> WorkerPool: ...
    @property
    def stats(self) -> StatsRing: ...
    @property
    def modules(self) -> Mapping[str, Module]: ...
    @property
    def assets(self) -> Mapping[str, str]: ...


class Forwarder(NodeState, Protocol):
    """A node that asks its peers: every forward goes to the ``Peers`` that ``reach`` hands
    out, which bound each call by ``forward_timeout`` seconds."""

    @property
    def forward_timeout(self) -> float: ...

    def resolve_node(self, node: str) -> int:
        """``local``, ``self`` or a known id -> the node id; ``UnknownNode`` otherwise."""

    def reach(self, node_id: int) -> tuple[Peers, MemberLike]:
        """The peers and the member to ask node ``node_id`` through; ``PeerUnavailable``
        without an RPC."""

    async def local_pool_monitor(
        self, pool_id: PoolId, query: str, params: Mapping[str, str]
    ) -> Any:
        """The monitor answer of this node's container of ``pool_id``."""
