"""What a module is: a create form, a container per pool, monitor queries and action routes.

Rules:
1. A ``Module`` is loaded once per node; it makes one ``Container`` per pool composed with it.
2. Every pool is created through ``Runtime.compose`` (the API's compose, a module's typed create
   form, ``rt_run compose`` and the settings' compose section all end there), so validation is
   in one place: generic fields by the runtime, module parameters by ``validate_config``.
3. Route handlers receive a ``RouteCall`` and return a JSON-able dict or raise an ``ApiError``;
   the dashboard mounts them under ``/api/mod/<mod_name>/`` without knowing what they do.
4. A container's periodic tasks keep retrying after the pool is destroyed (the spec's
   behaviour): ``ensure_open`` raises ``PoolGone`` for them.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..costmodel import CostModel
from ..errors import BadRequest
from ..ids import PoolId
from ..workers import PoolGone

if TYPE_CHECKING:
    from ..runtime import Runtime

__all__ = [
    "Container",
    "FormField",
    "FormSpec",
    "Module",
    "ModuleRoute",
    "PoolInfo",
    "RouteCall",
]

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class FormField:
    name: str
    label: str
    type: str = "text"  # text | select | textarea
    required: bool = False
    default: str = ""
    options: tuple[str, ...] = ()
    placeholder: str = ""
    help: str = ""

    def to_json(self) -> JSON:
        return {
            "name": self.name,
            "label": self.label,
            "type": self.type,
            "required": self.required,
            "default": self.default,
            "options": list(self.options),
            "placeholder": self.placeholder,
            "help": self.help,
        }


@dataclass(frozen=True, slots=True)
class FormSpec:
    mod_name: str
    title: str
    fields: tuple[FormField, ...]
    note: str = ""

    def to_json(self) -> JSON:
        return {
            "mod_name": self.mod_name,
            "title": self.title,
            "fields": [f.to_json() for f in self.fields],
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class RouteCall:
    """One request to a module route: the merged parameters and the path's ``{name}`` parts."""

    runtime: Runtime
    params: Mapping[str, str]
    path_args: Mapping[str, str]

    def require(self, name: str) -> str:
        value = self.params.get(name, "")
        if value == "":
            raise BadRequest(f"missing {name}")
        return value


Handler = Callable[[RouteCall], Awaitable[JSON]]


@dataclass(frozen=True, slots=True)
class ModuleRoute:
    method: str  # "GET" or "POST"
    path: str  # below /api/mod/<mod_name>/, e.g. "{pool}/add_member"
    handler: Handler
    doc: str


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

    runtime: Runtime
    info: PoolInfo
    config: Mapping[str, Any]
    cost: CostModel = field(init=False)
    closed: bool = field(default=False, init=False)
    methods: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        self.cost = CostModel(self.methods, self.runtime.settings.runtime.learning_rate)

    async def start(self) -> None:
        """Called once after composition: allocate, add periodic tasks."""

    async def close(self) -> None:
        """Called on destroy. Periodic tasks are left to retry (see ``ensure_open``)."""
        self.closed = True

    def ensure_open(self) -> None:
        if self.closed:
            raise PoolGone(str(self.info.pool_id))

    async def monitor(self, query: str, params: Mapping[str, str]) -> Any:
        """Answer a monitor query; ``stats`` is the convention every module answers."""
        if query == "stats":
            return self.stats()
        raise BadRequest(f"pool {self.info.pool_id} ({self.info.mod_name}) has no query '{query}'")

    def stats(self) -> JSON:
        return {"pool_name": self.info.pool_name}

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

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    @property
    def methods(self) -> tuple[str, ...]:
        return self.container_class.methods

    def create_form(self) -> FormSpec | None:
        """The typed create form, or None when the module registers none."""
        return None

    def form_to_compose(self, params: Mapping[str, str]) -> tuple[JSON, dict[str, str]]:
        """Typed-form parameters -> (module config, errors by field); form modules override."""
        return {}, {}

    def validate_config(self, config: Mapping[str, Any]) -> dict[str, str]:
        """Errors by field for the module parameters of a compose entry (none by default)."""
        return {}

    def make_container(self, info: PoolInfo, config: Mapping[str, Any]) -> Container:
        return self.container_class(self.runtime, info, config)

    def routes(self) -> list[ModuleRoute]:
        """Action routes beyond the conventional ``pools`` and ``create`` ones."""
        return []

    def demo_entries(self) -> list[JSON]:
        """Compose entries for a demo node when the settings compose nothing."""
        return []

    def describe(self) -> JSON:
        return {"name": self.mod_name, "methods": list(self.methods)}
