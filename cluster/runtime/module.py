"""What a module is: a container per pool, its methods, its parameters, and the context it
sees of its node.

Rules:
1. A ``Module`` is loaded once per node; it makes one ``Container`` per pool composed with it.
2. Every pool is created through the runtime's ``compose`` (a compose request, a module's
   typed create form, ``rt_run compose`` and the settings' compose section all end there), so
   validation is in one place: generic fields by the runtime, module parameters by
   ``config_errors``: a key outside the module's ``config_keys`` is refused (a
   ``ValidationFailed`` naming the key and the known ones), then ``validate_config`` checks
   the values.
3. How a module is reached from outside (its create form, its routes) is not here: that half
   is ``cluster.api.HttpModule``, which the runtime never imports.
4. A container's periodic tasks keep retrying after the pool is destroyed (the spec's
   behaviour) for a bounded time (``cluster.runtime.workers``, rule 3): ``ensure_open``
   raises ``PoolGone`` for them.
5. A destroyed container gives back what it took: ``close`` marks it closed, waits for its
   ``operation``s in flight (``wait_idle``), then frees its extents on other pools and destroys
   the pools it created itself. A container whose ``start`` fails is closed the same way, so a
   refused compose leaves nothing behind.
6. Modules and containers see the node through a ``ModuleContext``, never the ``Runtime``
   class: the few members named there are all a module may use. Its pool table is a
   ``PoolTable`` (``PoolManager`` satisfies it), so this module imports no other of the
   runtime's but the cost model, the workers and the records it names (``BlockCall``,
   ``DiskFault``).
7. A disk fault (``DiskFault``) is set on a pool through ``set_disk_fault``: only block
   devices that apply one (``rt_bdev``) take it; every other pool refuses it (400).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import trio

from cluster.ground.errors import BadRequest, PoolGone
from cluster.ground.ids import PoolId
from cluster.ground.settings import Settings

from .costmodel import CostModel
from .diskfault import NO_DISK_FAULT, DiskFault
from .peers import BlockCall
from .workers import WorkerPool

__all__ = ["Container", "Module", "ModuleContext", "PoolInfo", "PoolTable"]

JSON = dict[str, Any]


class PoolTable(Protocol):
    """This node's pool table as modules see it (``cluster.runtime.PoolManager``)."""

    def __len__(self) -> int: ...
    def __contains__(self, pool_id: PoolId) -> bool: ...

    def all(self) -> list[Container]:
        """Every container, sorted by pool id."""

    def get(self, pool_id: PoolId) -> Container:
        """The container of ``pool_id``; NotFound when there is none."""

    def find(self, pool_id: PoolId) -> Container | None: ...
    def by_name(self, name: str, mod_name: str | None = None) -> Container | None: ...
    def of_module(self, mod_name: str) -> list[Container]: ...

    def suggest(self, base: int) -> PoolId:
        """The smallest free ``<major>.0`` at or above ``base`` (reserves nothing)."""


class ModuleContext(Protocol):
    """What modules and containers may use of their node (the ``Runtime`` satisfies it)."""

    @property
    def node_id(self) -> int:
        """This node's id (read when needed: it is settled once the node joined)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def pools(self) -> PoolTable:
        """This node's pool table: find, by_name, of_module, suggest."""

    @property
    def workers(self) -> WorkerPool:
        """The node's workers: module I/O runs as their tasks; periodic tasks are added here."""

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
        """Validate, then create a pool (every pool is created here)."""

    async def destroy(self, pool: str) -> JSON:
        """Destroy the pool with id ``pool``."""

    def admin_monitor(self, query: str, params: Mapping[str, str]) -> JSON:
        """The admin pool's monitor answer for this node."""

    def node_state(self, node_id: int) -> str | None:
        """How this node's membership holds ``node_id``: ``alive``, ``suspected``, ``dead``
        or ``left`` (None: not in the host table)."""

    def alive_nodes(self) -> list[int]:
        """The ids of the nodes the membership holds alive (this one included)."""

    async def peer_compose(self, node_id: int, entry: Mapping[str, Any]) -> JSON:
        """Compose one pool on node ``node_id`` (bounded by the forward timeout)."""

    async def peer_pool_ids(self, node_id: int) -> set[PoolId]:
        """The pool ids node ``node_id`` holds (bounded by the forward timeout)."""

    async def peer_block(self, node_id: int, call: BlockCall) -> Any:
        """One block operation on node ``node_id``'s device, bounded by the forward timeout;
        ``PeerUnavailable`` when the node does not answer."""


@dataclass(frozen=True, slots=True)
class PoolInfo:
    pool_id: PoolId
    pool_name: str
    mod_name: str
    pool_query: str
    container_id: int  # the node id of the node hosting the container

    def to_json(self) -> JSON:
        return {
            "pool_id": str(self.pool_id),
            "pool_name": self.pool_name,
            "mod_name": self.mod_name,
            "container_id": self.container_id,
        }


@dataclass(eq=False)
class Container:
    """The state of one pool on this node. Subclasses add data and override ``monitor``."""

    runtime: ModuleContext
    info: PoolInfo
    config: Mapping[str, Any]
    cost: CostModel = field(init=False)
    closed: bool = field(default=False, init=False)
    _in_flight: int = field(default=0, init=False, repr=False)
    _idle: trio.Event | None = field(default=None, init=False, repr=False)
    methods: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        self.cost = CostModel(self.methods, self.runtime.settings.runtime.learning_rate)

    async def start(self) -> None:
        """Called once after composition: allocate, add periodic tasks."""

    async def close(self) -> None:
        """Called on destroy (and after a failed ``start``). Periodic tasks are left to retry
        (see ``ensure_open``); subclasses then ``wait_idle`` and give back what they took."""
        self.closed = True

    def ensure_open(self) -> None:
        if self.closed:
            raise PoolGone(str(self.info.pool_id))

    @contextmanager
    def operation(self) -> Iterator[None]:
        """Mark an operation of this pool in flight (``PoolGone`` once closed): ``close``
        waits for every one before it frees what the operations could still be using."""
        self.ensure_open()
        self._in_flight += 1
        try:
            yield
        finally:
            self._in_flight -= 1
            if not self._in_flight and self._idle is not None:
                self._idle.set()

    async def wait_idle(self) -> None:
        """Return once no ``operation`` of this container is in flight."""
        while self._in_flight:
            self._idle = trio.Event()
            await self._idle.wait()

    async def monitor(self, query: str, params: Mapping[str, str]) -> Any:
        """Answer a monitor query; ``stats`` is the convention every module answers."""
        if query == "stats":
            return self.stats()
        raise BadRequest(f"pool {self.info.pool_id} ({self.info.mod_name}) has no query '{query}'")

    def stats(self) -> JSON:
        return {"pool_name": self.info.pool_name}

    async def serve_block(self, call: BlockCall) -> Any:
        """One block operation a peer asks of this pool: block devices that lend themselves
        to arrays on other nodes override it."""
        raise BadRequest(
            f"pool {self.info.pool_id} ({self.info.mod_name}) is not a block device other "
            "nodes can use"
        )

    @property
    def disk_fault(self) -> DiskFault:
        """The disk fault set on this pool (rule 7): none unless it is a device that takes one."""
        return NO_DISK_FAULT

    def set_disk_fault(self, fault: DiskFault) -> None:
        """Rule 7: a pool that is no ``rt_bdev`` device refuses a disk fault."""
        raise BadRequest(
            f"pool '{self.info.pool_name}' ({self.info.mod_name}) is not an rt_bdev device: "
            "disk faults apply to rt_bdev devices only"
        )

    def export_state(self) -> JSON:
        """What ``rt_run migrate`` sends to the new node; by default the config only."""
        return {"config": dict(self.config)}

    async def import_state(self, state: Mapping[str, Any]) -> None:
        """Counterpart of ``export_state`` on the receiving node."""

    async def workload_step(self, rng: random.Random, io_size: int) -> None:
        """One step of the synthetic workload on this pool (module I/O as worker tasks)."""


class Module:
    """A loadable module. Subclasses set the class variables and override what they need."""

    mod_name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    container_class: ClassVar[type[Container]] = Container
    suggest_base: ClassVar[int] = 800  # pool-id suggestions start at this major
    # The module parameters a compose entry may hold; None: not declared, nothing refused.
    config_keys: ClassVar[tuple[str, ...] | None] = None

    def __init__(self, runtime: ModuleContext) -> None:
        self.runtime = runtime

    @property
    def methods(self) -> tuple[str, ...]:
        return self.container_class.methods

    @property
    def has_create_form(self) -> bool:
        """Whether the module offers a typed create form (its HTTP half says; none here)."""
        return False

    def suggestion(self) -> str:
        """A free pool id for a form's default, from this module's base (reserves nothing)."""
        return str(self.runtime.pools.suggest(self.suggest_base))

    def validate_config(self, config: Mapping[str, Any]) -> dict[str, str]:
        """Errors by field for the module parameters of a compose entry (none by default)."""
        return {}

    def config_errors(self, config: Mapping[str, Any]) -> dict[str, str]:
        """Errors by key: every key outside ``config_keys``, then ``validate_config``'s."""
        errors: dict[str, str] = {}
        known = self.config_keys
        if known is not None:
            listed = ", ".join(known) if known else "none"
            for key in config:
                if key not in known:
                    name = str(key) if len(str(key)) <= 40 else f"{str(key)[:40]}..."
                    errors[name] = (
                        f"unknown parameter '{name}' of {self.mod_name} (known: {listed})"
                    )
        return {**errors, **self.validate_config(config)}

    def make_container(self, info: PoolInfo, config: Mapping[str, Any]) -> Container:
        return self.container_class(self.runtime, info, config)

    def demo_entries(self) -> list[JSON]:
        """Compose entries for a demo node when the settings compose nothing."""
        return []

    def describe(self) -> JSON:
        return {"name": self.mod_name, "methods": list(self.methods)}
