"""The runtime of one node, without its network: the view the dashboard and the RPC serve.

Rules:
1. Every answer is built from this node's own state. A query addressed to a peer goes out as
   one monitor task to that node's admin pool through ``peers`` (the node's RPC), bounded by
   ``forward_timeout`` seconds; a silent peer is a ``PeerUnavailable``. Where a query is
   answered is decided by ``cluster.runtime.peers.is_local`` alone.
2. Every pool is composed through ``compose`` and destroyed through ``destroy``; a pool enters
   the table only once started (``PoolManager.reserve``). A container whose start fails is
   closed (it gives back what it took) and the compose is refused with an ``ApiError``.
3. Membership comes from a ``Membership`` (the SWIM handle, or ``SingleNode`` when embedded
   without a cluster); the runtime only reads it: its table, its history, its faults.
4. The whole cluster's picture (``cluster_views``) is built by forwarding one query to every
   member (``cluster.runtime.views``), each under the same forward bound, all at once.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import trio

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

from .admin import ProcessProbe, admin_query, check_params
from .assets import find_assets
from .compose import check_compose
from .configview import config_answer
from .costmodel import CostModel
from .membership import MemberLike, Membership, SingleNode, state_name, view_name
from .module import Container, Module, PoolInfo
from .peers import FORWARD_TIMEOUT, Peers, is_local, routing_targets
from .pools import PoolManager
from .registry import load_modules
from .sysstats import StatsRing
from .views import cluster_views
from .workers import WorkerPool

__all__ = ["FORWARD_TIMEOUT", "Runtime"]

log = logging.getLogger(__name__)
JSON = dict[str, Any]
T = TypeVar("T")


class Runtime:
    """One node's runtime: pools, workers, modules, stats, and the answers built from them."""

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
        self.forward_timeout = FORWARD_TIMEOUT
        self.viz_address: tuple[str, int] | None = None  # set by the node once bound
        self.process = ProcessProbe()  # this process's figures; uptime counts from here
        self.pools = PoolManager()
        self.workers = WorkerPool(settings.runtime.workers, self._cost_model)
        self.stats = StatsRing(self._identity)
        self.modules: dict[str, Module] = load_modules(self, settings.runtime.modules)
        self.assets: dict[str, str] = {}
        self.refresh_assets()

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
        """``local``, ``self``, this node's id or an id in the host table -> the node id."""
        if is_local(node, self.node_id):
            return self.node_id
        nid = parse_node_id(node)
        known = {m.node_id for m in self.membership.members()}
        if nid is None or nid not in known:
            raise BadRequest(
                f"unknown or malformed node id: {node} "
                "(use a node id from /api/topology, or 'local')"
            )
        return nid

    def member(self, node_id: int) -> MemberLike:
        for m in self.membership.members():
            if m.node_id == node_id:
                return m  # type: ignore[no-any-return]
        raise BadRequest(f"unknown node id: {node_id}")

    # -- node-local answers -----------------------------------------------------------------

    def health(self) -> JSON:
        return {
            "ok": True,
            "node_id": self.node_id,
            "hostname": self.hostname,
            "ip_address": self.ip_address,
            "is_leader": self.is_leader,
        }

    def topology(self) -> JSON:
        """The host table as this node holds it; per member its ``incarnation``, ``since``
        (wall epoch s of the last change seen here, or None) and ``view``."""
        ms = self.membership
        leader = ms.leader_id()
        nodes = []
        for m in sorted(ms.members(), key=lambda m: m.node_id):
            state = state_name(m.state)
            nodes.append(
                {
                    "node_id": m.node_id,
                    "ip_address": m.host,
                    "state": state,
                    "alive": state == "alive",
                    "is_leader": m.node_id == leader,
                    "is_self": m.node_id == self.node_id,
                    "incarnation": m.incarnation,
                    "since": ms.since(m.node_id),
                    "view": view_name(m.state),
                }
            )
        return {
            "self_node_id": self.node_id,
            "leader_node_id": leader,
            "hostname": self.hostname,
            "nodes": nodes,
        }

    def pools_json(self) -> JSON:
        return {"pools": [c.info.to_json() for c in self.pools.all()]}

    def config_json(self) -> JSON:
        """The settings the node came up with, and where each came from (``config_answer``)."""
        return config_answer(
            self.settings,
            self.viz_address,
            swim_enabled=not isinstance(self.membership, SingleNode),
            modules=list(self.modules),
        )

    def chimods(self) -> JSON:
        return {
            "chimods": [
                {"name": name, "has_create": mod.has_create_form, "has_pages": name in self.assets}
                for name, mod in self.modules.items()
            ]
        }

    def admin_monitor(self, query: str, params: Mapping[str, str]) -> JSON:
        """The admin pool's monitor: what a per-node endpoint answers for this node."""
        return admin_query(self, query, params)

    async def run_admin_monitor(self, query: str, params: Mapping[str, str]) -> JSON:
        """``admin_monitor`` as one monitor task of the admin pool on this node's workers (how
        every per-node query is answered, asked here or by a peer)."""
        return await self.workers.run(
            ADMIN_POOL_ID, "monitor", 0, lambda: self.admin_monitor(query, params)
        )

    # -- forwarding -------------------------------------------------------------------------

    async def forward(
        self, node_id: int, what: str, ask: Callable[[Peers, MemberLike], Awaitable[T]]
    ) -> T:
        """``ask`` a peer through ``peers``, bounded by ``forward_timeout`` seconds."""
        if self.peers is None:
            raise PeerUnavailable(f"node {node_id} is not reachable: this runtime has no RPC")
        member = self.member(node_id)
        with trio.move_on_after(self.forward_timeout):
            try:
                return await ask(self.peers, member)
            except PeerUnreachable as exc:
                raise PeerUnreachable(f"node {node_id} did not answer {what}: {exc}") from None
        raise PeerUnavailable(f"{what} timed out after {self.forward_timeout:g}s")

    async def node_monitor(self, node: str, query: str, params: Mapping[str, str]) -> JSON:
        """A per-node endpoint: answered here, or forwarded as one monitor task to the peer."""
        nid = self.resolve_node(node)
        check_params(query, params)  # a bad query or parameter is a 400 before any forward
        if nid == self.node_id:
            return await self.run_admin_monitor(query, params)
        return await self.forward(
            nid, f"monitor '{query}'", lambda peers, m: peers.monitor(m, query, params)
        )

    async def cluster_views(self) -> JSON:
        """Every member's view of every member, asked of each in parallel within the forward
        bound (``cluster.runtime.views``)."""
        return await cluster_views(self)

    async def local_pool_monitor(
        self, pool_id: PoolId, query: str, params: Mapping[str, str]
    ) -> Any:
        """The monitor answer of this node's container of ``pool_id``."""
        try:
            return await self.pools.get(pool_id).monitor(query, params)
        except PoolGone:
            raise Conflict(f"pool {pool_id} was destroyed while the query ran") from None

    async def pool_monitor(
        self,
        pool: str,
        query: str,
        routing: str = "local",
        params: Mapping[str, str] | None = None,
    ) -> JSON:
        """A pool's monitor answer from each container the routing names: ``results`` holds
        each answer (``null`` for a node that failed) and, when one failed, ``errors`` why. A
        query every asked node refused (400: no such query) is a 400 itself.

        ``params`` (the request's other parameters) reach the module's monitor handler.
        """
        params = dict(params or {})
        pool_id = PoolId.parse(pool)
        if not query:
            raise BadRequest("missing ?query")
        alive = [m.node_id for m in self.membership.members() if state_name(m.state) == "alive"]
        targets = routing_targets(routing or "local", self.node_id, alive, self.resolve_node)
        results: dict[str, Any] = {}
        failed: dict[str, ApiError] = {}

        async def ask(nid: int) -> None:
            try:
                if nid == self.node_id:
                    results[str(nid)] = await self.local_pool_monitor(pool_id, query, params)
                else:
                    results[str(nid)] = await self.forward(
                        nid,
                        f"monitor '{query}'",
                        lambda peers, m: peers.pool_monitor(m, str(pool_id), query, params),
                    )
            except NotFound:
                pass
            except ApiError as exc:
                results[str(nid)], failed[str(nid)] = None, exc

        if targets == [self.node_id]:  # answered here: its errors are the request's
            results[str(self.node_id)] = await self.local_pool_monitor(pool_id, query, params)
        else:
            async with trio.open_nursery() as nursery:
                for nid in targets:
                    nursery.start_soon(ask, nid)
            if not results:
                raise NotFound(f"no pool with id {pool_id}")
            if len(failed) == len(results) and all(e.status == 400 for e in failed.values()):
                raise BadRequest(next(iter(failed.values())).message)  # no node knows the query
        body = {"pool_id": str(pool_id), "query": query, "results": dict(sorted(results.items()))}
        if failed:
            body["errors"] = {nid: failed[nid].message for nid in sorted(failed)}
        return body

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
        identity = ("mod_name", "pool_name", "pool_id", "pool_query")
        params = {k: v for k, v in entry.items() if k not in identity}
        text = {k: entry.get(k, "") for k in identity}
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
