"""One node's runtime core: its identity, its pool table and the pools' life cycle, and the
one bounded way to reach a peer.

Rules:
1. Every pool is composed through ``compose`` and destroyed through ``destroy``; a pool enters
   the table only once started (``PoolManager.reserve``). A container whose start fails is
   closed (it gives back what it took) and the compose is refused with an ``ApiError``.
2. A peer is reached only through ``peers`` (the node's RPC), as ``reach`` hands it out with
   the member to ask; the peers bound every call by their ``timeout`` (``forward_timeout``),
   so a silent peer is a ``PeerUnavailable`` (``peers`` rule 2). Whether a node named in a
   request is this one is decided by ``cluster.runtime.peers.is_local`` alone.
3. Membership comes from a ``Membership`` (the SWIM handle, or ``SingleNode`` when embedded
   without a cluster); the core only reads it.
4. The core builds no answers: those are functions of the Protocols this class satisfies
   (``shapes``, ``admin``, ``monitors``, ``views``). The modules are loaded by ``Runtime``,
   the composition they receive as their ``ModuleContext``.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Mapping
from typing import Any

from cluster.ground.errors import (
    ApiError,
    BadRequest,
    Conflict,
    NotFound,
    PeerUnavailable,
    PeerUnreachable,
    PoolGone,
)
from cluster.ground.ids import ADMIN_POOL_ID, PoolId, parse_node_id
from cluster.ground.settings import Settings

from .assets import find_assets
from .compose import check_compose
from .costmodel import CostModel
from .membership import MemberLike, Membership, SingleNode
from .module import Container, Module, PoolInfo
from .peers import FORWARD_TIMEOUT, BlockCall, Peers, UnknownNode, is_local
from .pools import PoolManager
from .probe import ProcessProbe
from .sysstats import StatsRing
from .workers import WorkerPool

__all__ = ["RuntimeCore"]

log = logging.getLogger(__name__)
JSON = dict[str, Any]
IDENTITY_FIELDS = ("mod_name", "pool_name", "pool_id", "pool_query")


class RuntimeCore:
    """One node's identity, pool table, workers and stats; composes and destroys its pools."""

    def __init__(
        self,
        settings: Settings,
        node_id: int,
        membership: Membership | None = None,
        peers: Peers | None = None,
    ) -> None:
        self.settings = settings
        self.node_id = node_id
        self.hostname = socket.gethostname()
        self.ip_address = settings.networking.host
        self.membership: Membership = membership or SingleNode(
            node_id, self.ip_address, settings.networking.port
        )
        self.peers = peers
        self.viz_address: tuple[str, int] | None = None  # set by the node once bound
        self.process = ProcessProbe()  # this process's figures; uptime counts from here
        self.pools = PoolManager()
        self.workers = WorkerPool(settings.runtime.workers, self._cost_model)
        self.stats = StatsRing(self._identity)
        self.modules: dict[str, Module] = {}  # loaded by the composition (``Runtime``)
        self.assets: dict[str, str] = {}

    # -- identity and membership ------------------------------------------------------------

    def _cost_model(self, pool_id: PoolId) -> CostModel | None:
        c = self.pools.find(pool_id)
        return c.cost if c is not None else None

    def _identity(self) -> JSON:
        return {"node_id": self.node_id, "ip_address": self.ip_address, "is_leader": self.is_leader}

    @property
    def is_leader(self) -> bool:
        return self.membership.leader_id() == self.node_id

    @property
    def dashboard_url(self) -> str | None:
        """``http://host:port`` of this node's dashboard once bound, else None."""
        if self.viz_address is None:
            return None
        host, port = self.viz_address
        return f"http://{host}:{port}"

    def refresh_assets(self) -> dict[str, str]:
        """Look up every loaded module's page assets again (``RT_VIZ_PATH`` roots first)."""
        self.assets = {}
        for name in self.modules:
            found = find_assets(name, self.settings.viz.path)
            if found is None:
                log.info("Viz: no viz/ assets found for module %s", name)
            else:
                self.assets[name] = str(found)
        return self.assets

    def resolve_node(self, node: str) -> int:
        """``local``, ``self``, this node's id or an id in the host table -> the node id;
        ``UnknownNode`` otherwise."""
        if is_local(node, self.node_id):
            return self.node_id
        nid = parse_node_id(node)
        known = {m.node_id for m in self.membership.members()}
        if nid is None or nid not in known:
            raise UnknownNode(node)
        return nid

    def node_state(self, node_id: int) -> str | None:
        """How the membership holds ``node_id`` (``alive``, ``suspected``, ``dead``, ``left``);
        None when it is not in the host table."""
        for m in self.membership.members():
            if m.node_id == node_id:
                return str(m.state)
        return None

    def member(self, node_id: int) -> MemberLike:
        for m in self.membership.members():
            if m.node_id == node_id:
                return m  # type: ignore[no-any-return]
        raise BadRequest(f"unknown node id: {node_id}")

    # -- forwarding -------------------------------------------------------------------------

    @property
    def forward_timeout(self) -> float:
        """Seconds: the bound on every forward, the peers' own (rule 2)."""
        return FORWARD_TIMEOUT if self.peers is None else self.peers.timeout

    def reach(self, node_id: int) -> tuple[Peers, MemberLike]:
        """The peers and the member to ask node ``node_id`` through (rule 2);
        ``PeerUnavailable`` without an RPC, ``BadRequest`` for an id not in the host table."""
        if self.peers is None:
            raise PeerUnavailable(f"node {node_id} is not reachable: this runtime has no RPC")
        return self.peers, self.member(node_id)

    async def peer_block(self, node_id: int, call: BlockCall) -> Any:
        """One block operation on node ``node_id``'s device (an array member there)."""
        peers, member = self.reach(node_id)
        return await peers.block(member, call)

    async def peer_compose(self, node_id: int, entry: Mapping[str, Any]) -> JSON:
        """Compose one pool on node ``node_id``; its answer (``pool_id``, ``pool_name``)."""
        peers, member = self.reach(node_id)
        body = await peers.compose(member, [entry])
        try:
            result: JSON = body["results"][0]
        except (KeyError, IndexError, TypeError):
            raise PeerUnreachable(f"node {node_id} answered a compose badly") from None
        return result

    async def peer_pool_ids(self, node_id: int) -> set[PoolId]:
        """The pool ids in node ``node_id``'s pool table (its admin ``pools`` monitor)."""
        peers, member = self.reach(node_id)
        body = await peers.monitor(member, "pools", {})
        try:
            return {PoolId.parse(str(p["pool_id"])) for p in body["pools"]}
        except (KeyError, TypeError, BadRequest):
            raise PeerUnreachable(f"node {node_id} described its pools badly") from None

    def alive_nodes(self) -> list[int]:
        """The ids of the members the membership holds alive, this node's among them."""
        return sorted(m.node_id for m in self.membership.members() if str(m.state) == "alive")

    async def local_block(self, call: BlockCall) -> Any:
        """A peer's block operation on this node's device ``call.pool`` (an id, or a name)."""
        if call.pool[:1].isdigit():
            container = self.pools.get(PoolId.parse(call.pool))
        else:
            found = self.pools.by_name(call.pool)
            if found is None:
                raise NotFound(f"no pool named '{call.pool[:80]}' on node {self.node_id}")
            container = found
        try:
            return await container.serve_block(call)
        except PoolGone:
            raise Conflict(f"pool {call.pool[:80]} was destroyed while the operation ran") from None

    async def local_pool_monitor(
        self, pool_id: PoolId, query: str, params: Mapping[str, str]
    ) -> Any:
        """The monitor answer of this node's container of ``pool_id``."""
        try:
            return await self.pools.get(pool_id).monitor(query, params)
        except PoolGone:
            raise Conflict(f"pool {pool_id} was destroyed while the query ran") from None

    # -- pools ------------------------------------------------------------------------------

    def install_admin_pool(self) -> None:
        """Put the admin pool ``1.0`` (the runtime itself) in the pool table."""
        if ADMIN_POOL_ID not in self.pools:
            info = PoolInfo(ADMIN_POOL_ID, "rt_admin", "rt_admin", "local", self.node_id)
            self.pools.add(self.modules["rt_admin"].make_container(info, {}))

    def suggest_pool_id(self, mod_name: str) -> str:
        mod = self.modules.get(mod_name)
        return str(self.pools.suggest(mod.suggest_base if mod else 800))

    async def compose(
        self,
        mod_name: str,
        pool_name: str,
        pool_id: str,
        config: Mapping[str, Any] | str | None = None,
        *,
        pool_query: str = "local",
        validate_only: bool = False,
        errors: Mapping[str, str] | None = None,
    ) -> JSON:
        """Validate every field at once, then (unless ``validate_only``) create the pool."""
        request = {
            "mod_name": mod_name,
            "pool_name": pool_name,
            "pool_id": pool_id,
            "pool_query": pool_query,
            "config": config,
        }
        plan = check_compose(self.pools, self.modules, request, errors)
        if validate_only:
            return {"ok": True}
        info = PoolInfo(plan.pool_id, pool_name, mod_name, pool_query or "local", self.node_id)
        container = plan.module.make_container(info, plan.config)
        with self.pools.reserve(info):
            try:
                await container.start()
            except Exception as exc:
                await self._abandon(container)
                if isinstance(exc, ApiError):
                    raise
                log.exception("pool %s (%s) failed to start", pool_name, plan.pool_id)
                raise Conflict(f"pool {pool_name} could not start: {exc}") from None
        self.pools.add(container)
        log.info("composed pool %s (%s) of %s", pool_name, plan.pool_id, mod_name)
        return {"ok": True, "pool_name": pool_name, "pool_id": str(plan.pool_id)}

    async def compose_entry(self, entry: Any) -> JSON:
        """Compose one entry of a compose section; module parameters are the other keys. The
        identity fields are text as written (a YAML number such as ``800.10`` is refused, not
        read as ``800.1``); a missing pool id is suggested."""
        if not isinstance(entry, Mapping):
            raise BadRequest("each compose entry is a mapping")
        params = {k: v for k, v in entry.items() if k not in IDENTITY_FIELDS}
        text = {k: entry.get(k, "") for k in IDENTITY_FIELDS}
        errors = {
            k: f"must be text (quote it in YAML), not {type(v).__name__}"
            for k, v in text.items()
            if not isinstance(v, str)
        }
        text = {k: v if isinstance(v, str) else "" for k, v in text.items()}
        pool_id = text["pool_id"]
        if pool_id == "" and "pool_id" not in errors:
            pool_id = self.suggest_pool_id(text["mod_name"])
        return await self.compose(
            text["mod_name"],
            text["pool_name"],
            pool_id,
            params,
            pool_query=text["pool_query"] or "local",
            errors=errors,
        )

    async def _abandon(self, container: Container) -> None:
        """Close a container whose start failed: it gives back what it took, its periodic
        tasks (if any) go at once."""
        for task in self.workers.periodic_of(container.info.pool_id):
            task.cancel()
        try:
            await container.close()
        except Exception:
            log.exception("pool %s did not close cleanly", container.info.pool_id)

    async def destroy(self, pool: str) -> JSON:
        pool_id = PoolId.parse(pool)
        container = self.pools.remove(pool_id)
        await container.close()
        log.info("destroyed pool %s (%s)", container.info.pool_name, pool_id)
        return {"ok": True, "pool_id": str(pool_id), "pool_name": container.info.pool_name}

    def containers(self) -> list[Container]:
        return self.pools.all()
