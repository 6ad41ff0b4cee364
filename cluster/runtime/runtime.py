"""The runtime of one node, without its network: the view the dashboard and the RPC serve.

Rules:
1. Every answer is built from this node's own state; a query addressed to a peer goes out as
   one monitor task to that node's admin pool through ``peer_call`` (injected by the node),
   bounded by ``FORWARD_TIMEOUT`` seconds, and a silent peer is a ``PeerUnavailable``.
2. Every pool is composed through ``compose`` and destroyed through ``destroy``.
3. Membership comes from a ``Membership`` (the SWIM handle, or ``SingleNode`` when embedded
   without a cluster); the runtime only reads it.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import trio
import yaml

from cluster.errors import ApiError, BadRequest, NotFound, PeerUnavailable, ValidationFailed
from cluster.ids import ADMIN_POOL_ID, PoolId, parse_node_id
from cluster.settings import Settings

from .assets import find_assets
from .module import Container, Module, PoolInfo
from .pools import PoolManager
from .registry import load_modules
from .sysstats import StatsRing
from .workers import WorkerPool

__all__ = ["FORWARD_TIMEOUT", "Membership", "Runtime", "SingleNode"]

log = logging.getLogger(__name__)
JSON = dict[str, Any]
FORWARD_TIMEOUT = 5.0
ADMIN_QUERIES = ("workers", "system_stats", "containers", "bdevs", "health", "topology", "pools")
ROUTINGS = ("local", "broadcast", "dynamic", "direct_id", "direct_hash", "range", "physical")


class MemberLike(Protocol):
    @property
    def node_id(self) -> int: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def state(self) -> str: ...


class Membership(Protocol):
    def members(self) -> list[Any]: ...
    def leader_id(self) -> int | None: ...


class _Self:
    __slots__ = ("host", "incarnation", "node_id", "port", "state")

    def __init__(self, node_id: int, host: str, port: int) -> None:
        self.node_id, self.host, self.port = node_id, host, port
        self.state, self.incarnation = "alive", 0


class SingleNode:
    """Membership of a runtime that runs without a cluster: itself, alive, the leader."""

    def __init__(self, node_id: int, host: str, port: int) -> None:
        self._me = _Self(node_id, host, port)

    def members(self) -> list[Any]:
        return [self._me]

    def leader_id(self) -> int | None:
        return self._me.node_id


PeerCall = Callable[[Any, JSON, float], Awaitable[Any]]


def _state_name(state: Any) -> str:
    name = str(getattr(state, "value", state))
    return "dead" if name == "left" else name


class Runtime:
    def __init__(
        self,
        settings: Settings,
        node_id: int,
        membership: Membership | None = None,
        peer_call: PeerCall | None = None,
    ) -> None:
        self.settings = settings
        self.node_id = node_id
        self.hostname = socket.gethostname()
        self.ip_address = settings.networking.host
        self.membership: Membership = membership or SingleNode(
            node_id, self.ip_address, settings.networking.port
        )
        self.peer_call = peer_call
        self.viz_address: tuple[str, int] | None = None  # set by the node once bound
        self.pools = PoolManager()
        self.workers = WorkerPool(settings.runtime.workers, self._cost_model)
        self.stats = StatsRing(self._identity)
        self.modules: dict[str, Module] = load_modules(self, settings.runtime.modules)
        self.assets: dict[str, str] = {}
        self.refresh_assets()

    # -- identity and membership ------------------------------------------------------------

    def _cost_model(self, pool_id: PoolId) -> Any:
        c = self.pools.find(pool_id)
        return c.cost if c is not None else None

    def _identity(self) -> JSON:
        return {
            "node_id": self.node_id,
            "ip_address": self.ip_address,
            "is_leader": self.is_leader,
        }

    @property
    def is_leader(self) -> bool:
        return self.membership.leader_id() == self.node_id

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

    def health(self) -> JSON:
        return {
            "ok": True,
            "node_id": self.node_id,
            "hostname": self.hostname,
            "ip_address": self.ip_address,
            "is_leader": self.is_leader,
        }

    def topology(self) -> JSON:
        leader = self.membership.leader_id()
        nodes = []
        for m in sorted(self.membership.members(), key=lambda m: m.node_id):
            state = _state_name(m.state)
            nodes.append(
                {
                    "node_id": m.node_id,
                    "ip_address": m.host,
                    "state": state,
                    "alive": state == "alive",
                    "is_leader": m.node_id == leader,
                    "is_self": m.node_id == self.node_id,
                }
            )
        return {
            "self_node_id": self.node_id,
            "leader_node_id": leader,
            "hostname": self.hostname,
            "nodes": nodes,
        }

    def resolve_node(self, node: str) -> int:
        """``local``, ``self``, this node's id or an id in the host table -> the node id."""
        if node in ("local", "self"):
            return self.node_id
        nid = parse_node_id(node)
        known = {m.node_id for m in self.membership.members()}
        if nid is None or nid not in known:
            raise BadRequest(
                f"unknown or malformed node id: {node} "
                "(use a node id from /api/topology, or 'local')"
            )
        return nid

    def member(self, node_id: int) -> Any:
        for m in self.membership.members():
            if m.node_id == node_id:
                return m
        raise BadRequest(f"unknown node id: {node_id}")

    # -- node-local answers -----------------------------------------------------------------

    def pools_json(self) -> JSON:
        return {"pools": [c.info.to_json() for c in self.pools.all()]}

    def config_json(self) -> JSON:
        s = self.settings
        viz_bind, viz_port = self.viz_address or (s.viz.bind, s.viz.port)
        return {
            "port": s.networking.port,
            "server_addr": s.networking.host,
            "num_threads": s.runtime.num_threads,
            "worker_count": s.runtime.workers,
            "hostfile": s.networking.hostfile,
            "conf_dir": s.runtime.conf_dir,
            "learning_rate": s.runtime.learning_rate,
            "swim_enabled": not isinstance(self.membership, SingleNode),
            "viz_port": viz_port,
            "viz_bind": viz_bind,
            "modules": list(self.modules),
        }

    def chimods(self) -> JSON:
        return {
            "chimods": [
                {
                    "name": name,
                    "has_create": mod.has_create_form,
                    "has_pages": name in self.assets,
                }
                for name, mod in self.modules.items()
            ]
        }

    def admin_monitor(self, query: str, params: Mapping[str, str]) -> JSON:
        """The admin pool's monitor: what a per-node endpoint answers for this node."""
        body: JSON = {"node_id": self.node_id}
        if query == "workers":
            body["workers"] = self.workers.snapshot()
        elif query == "system_stats":
            raw = params.get("min_event_id", "0") or "0"
            try:
                min_id = int(raw)
            except ValueError:
                raise BadRequest(f"min_event_id must be an integer, got '{raw}'") from None
            body["entries"] = self.stats.since(min_id)
        elif query == "containers":
            body["containers"] = [
                {
                    **c.info.to_json(),
                    "methods": c.cost.to_json(),
                    "learning_rate": c.cost.learning_rate,
                }
                for c in self.pools.all()
            ]
        elif query == "bdevs":
            body["devices"] = [
                {"pool_id": str(c.info.pool_id), "stats": c.stats()}
                for c in self.pools.all()
                if getattr(c, "is_block_device", False)
            ]
        elif query == "health":
            body.update(self.health())
        elif query == "topology":
            body.update(self.topology())
        elif query == "pools":
            body.update(self.pools_json())
        else:
            raise BadRequest(f"unknown admin monitor query '{query}'")
        return body

    # -- forwarding -------------------------------------------------------------------------

    async def call_peer(self, node_id: int, frame: JSON, what: str) -> Any:
        """Send ``frame`` to a peer over the node RPC, bounded by the forward timeout."""
        if self.peer_call is None:
            raise PeerUnavailable(f"node {node_id} is not reachable: this runtime has no RPC")
        member = self.member(node_id)
        with trio.move_on_after(FORWARD_TIMEOUT) as scope:
            try:
                return await self.peer_call(member, frame, FORWARD_TIMEOUT)
            except ApiError:
                raise
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise PeerUnavailable(f"node {node_id} did not answer {what}: {exc}") from None
        assert scope.cancelled_caught
        raise PeerUnavailable(f"{what} timed out after {FORWARD_TIMEOUT:g}s")

    async def node_monitor(self, node: str, query: str, params: Mapping[str, str]) -> JSON:
        """A per-node endpoint: answered here, or forwarded as one monitor task to the peer."""
        nid = self.resolve_node(node)
        if query not in ADMIN_QUERIES:
            raise BadRequest(f"unknown admin monitor query '{query}'")
        if nid == self.node_id:
            # one monitor task to this node's admin pool, as a forwarded query is on the peer
            body: JSON = await self.workers.run(
                ADMIN_POOL_ID, "monitor", 0, lambda: self.admin_monitor(query, params)
            )
            return body
        frame = {"k": "monitor", "query": query, "params": dict(params)}
        remote: JSON = await self.call_peer(nid, frame, f"monitor '{query}'")
        return remote

    # -- pools ------------------------------------------------------------------------------

    def _routing_targets(self, routing: str) -> list[int]:
        alive = sorted(
            m.node_id for m in self.membership.members() if _state_name(m.state) == "alive"
        )
        kind, _, arg = routing.partition(":")
        try:
            if kind in ("local", "dynamic"):
                return [self.node_id]
            if kind == "broadcast":
                return alive
            if kind in ("direct_id", "physical"):
                return [self.resolve_node(arg)]
            if kind == "direct_hash":
                return [alive[int(arg) % len(alive)]]
            if kind == "range":
                off, cnt = arg.split(":")
                return alive[int(off) : int(off) + int(cnt)]
        except (ValueError, IndexError, ZeroDivisionError):
            pass
        raise BadRequest(
            f"bad routing '{routing}' (use local, broadcast, dynamic, direct_id:N, "
            "direct_hash:N, range:OFF:CNT or physical:N)"
        )

    async def local_pool_monitor(
        self, pool_id: PoolId, query: str, params: Mapping[str, str]
    ) -> Any:
        container = self.pools.get(pool_id)
        return await container.monitor(query, params)

    async def pool_monitor(
        self,
        pool: str,
        query: str,
        routing: str = "local",
        params: Mapping[str, str] | None = None,
    ) -> JSON:
        """A pool's monitor answer from each container the routing names (``null`` if silent).

        ``params`` (the request's other parameters) reach the module's monitor handler.
        """
        params = dict(params or {})
        pool_id = PoolId.parse(pool)
        if not query:
            raise BadRequest("missing ?query")
        targets = self._routing_targets(routing or "local")
        results: dict[str, Any] = {}
        if targets == [self.node_id]:
            results[str(self.node_id)] = await self.local_pool_monitor(pool_id, query, params)
        else:

            async def ask(nid: int) -> None:
                try:
                    if nid == self.node_id:
                        results[str(nid)] = await self.local_pool_monitor(pool_id, query, params)
                    else:
                        frame = {
                            "k": "pool_monitor",
                            "pool_id": str(pool_id),
                            "query": query,
                            "params": params,
                        }
                        results[str(nid)] = await self.call_peer(nid, frame, f"monitor '{query}'")
                except NotFound:
                    pass
                except ApiError:
                    results[str(nid)] = None

            async with trio.open_nursery() as nursery:
                for nid in targets:
                    nursery.start_soon(ask, nid)
            if not results:
                raise NotFound(f"no pool with id {pool_id}")
        return {"pool_id": str(pool_id), "query": query, "results": dict(sorted(results.items()))}

    async def destroy(self, pool: str) -> JSON:
        pool_id = PoolId.parse(pool)
        container = self.pools.remove(pool_id)
        await container.close()
        log.info("destroyed pool %s (%s)", container.info.pool_name, pool_id)
        return {"ok": True, "pool_id": str(pool_id), "pool_name": container.info.pool_name}

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
        errs: dict[str, str] = dict(errors or {})
        module = self.modules.get(mod_name)
        if not mod_name:
            errs["mod_name"] = "required"
        elif module is None:
            errs["mod_name"] = (
                f"module '{mod_name}' is not loaded (loaded: {', '.join(self.modules)})"
            )
        elif mod_name == "rt_admin":
            errs["mod_name"] = "rt_admin has one pool, the admin pool 1.0: the runtime itself"
        if not pool_name.strip():
            errs["pool_name"] = "required"
        elif (other := self.pools.by_name(pool_name)) is not None:
            errs["pool_name"] = f"a pool named '{pool_name}' exists already ({other.info.pool_id})"
        pid: PoolId | None = None
        if not pool_id.strip():
            errs["pool_id"] = "required (use the suggested id)"
        else:
            try:
                pid = PoolId.parse(pool_id)
            except BadRequest as exc:
                errs["pool_id"] = exc.message
            else:
                if pid.is_null:
                    errs["pool_id"] = "0.0 is the null pool id"
                elif pid == ADMIN_POOL_ID:
                    errs["pool_id"] = "1.0 is the admin pool's id"
                elif pid in self.pools:
                    errs["pool_id"] = (
                        f"pool id {pid} is taken by '{self.pools.get(pid).info.pool_name}'"
                    )
        if pool_query and pool_query.partition(":")[0] not in ROUTINGS:
            errs["pool_query"] = f"unknown routing '{pool_query}'"
        cfg: Mapping[str, Any] = {}
        if isinstance(config, str):
            try:
                parsed = yaml.safe_load(config) if config.strip() else {}
            except yaml.YAMLError as exc:
                parsed = None
                errs["config"] = f"not valid YAML: {str(exc).splitlines()[0]}"
            if parsed is not None and not isinstance(parsed, Mapping):
                errs["config"] = "must be a YAML mapping of module parameters"
            elif isinstance(parsed, Mapping):
                cfg = parsed
        elif config is not None:
            cfg = config
        if module is not None and "config" not in errs:
            errs.update(module.validate_config(cfg))
        if errs:
            raise ValidationFailed(errs)
        if validate_only:
            return {"ok": True}
        assert module is not None
        assert pid is not None
        info = PoolInfo(pid, pool_name, mod_name, pool_query or "local", self.node_id)
        container = module.make_container(info, cfg)
        self.pools.add(container)
        try:
            await container.start()
        except BaseException:
            self.pools.remove(pid)
            raise
        log.info("composed pool %s (%s) of %s", pool_name, pid, mod_name)
        return {"ok": True, "pool_name": pool_name, "pool_id": str(pid)}

    async def compose_entry(self, entry: Any) -> JSON:
        """Compose one entry of a compose section; module parameters are the other keys."""
        if not isinstance(entry, Mapping):
            raise BadRequest("each compose entry is a mapping")
        identity = ("mod_name", "pool_name", "pool_id", "pool_query")
        params = {k: v for k, v in entry.items() if k not in identity}
        mod_name = str(entry.get("mod_name", ""))
        pool_id = str(entry.get("pool_id", "") or self.suggest_pool_id(mod_name))
        return await self.compose(
            mod_name,
            str(entry.get("pool_name", "")),
            pool_id,
            params,
            pool_query=str(entry.get("pool_query", "local")),
        )

    def containers(self) -> list[Container]:
        return self.pools.all()
