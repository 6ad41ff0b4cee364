"""What a module is: a create form, a container per pool, monitor queries and action routes.

Rules:
1. A ``Module`` is loaded once per node; it makes one ``Container`` per pool composed with it.
2. Every pool is created through the runtime's ``compose`` (the API's compose, a module's typed
   create form, ``rt_run compose`` and the settings' compose section all end there), so
   validation is in one place: generic fields by the runtime, module parameters by
   ``config_errors``: a key outside the module's ``config_keys`` is refused (400, naming the
   key and the known ones), then ``validate_config`` checks the values.
3. Route handlers receive a ``RouteCall`` and return a JSON-able dict or raise an ``ApiError``;
   the dashboard mounts them under ``/api/mod/<mod_name>/`` without knowing what they do.
   Parameters are read as written (never stripped): booleans through ``RouteCall.flag``, pool
   ids through ``PoolId.parse``, numbers and sizes through ``cluster.ground.parse``.
   Every module has the conventional ``GET pools``; one with a create form also ``GET create``
   (the form spec) and ``POST create`` (validate or create); its own ``action_routes`` follow.
   Each route carries its ``ApiSpec`` for ``/openapi.json`` (``ModuleRoute.api``): the
   conventional ones from ``Module`` (``POST create``'s fields are the create form's), the
   action routes their module's; a route without one is flagged in the document.
4. A container's periodic tasks keep retrying after the pool is destroyed (the spec's
   behaviour) for a bounded time (``cluster.runtime.workers``, rule 3): ``ensure_open``
   raises ``PoolGone`` for them.
5. A destroyed container gives back what it took: ``close`` marks it closed, waits for its
   ``operation``s in flight (``wait_idle``), then frees its extents on other pools and destroys
   the pools it created itself. A container whose ``start`` fails is closed the same way, so a
   refused compose leaves nothing behind.
6. A route handler's ``PoolGone`` (its pool was destroyed under it) is answered 409.
7. Modules and containers see the node through a ``ModuleContext``, never the ``Runtime``
   class: the few members named there are all a module may use.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

import trio

from cluster.ground.errors import BadRequest, Conflict, NotFound, PoolGone
from cluster.ground.ids import PoolId
from cluster.ground.parse import ParseError, parse_bool

from . import answers
from .apidoc import ACTION_PARAM, ApiParam, ApiSpec, Link, form_params
from .costmodel import CostModel

if TYPE_CHECKING:
    from cluster.ground.settings import Settings

    from .pools import PoolManager
    from .workers import WorkerPool

__all__ = [
    "Container",
    "FormField",
    "FormSpec",
    "Module",
    "ModuleContext",
    "ModuleRoute",
    "PoolInfo",
    "RouteCall",
    "pool_id_field",
    "pool_name_field",
]

JSON = dict[str, Any]
C = TypeVar("C", bound="Container")


class ModuleContext(Protocol):
    """What modules and containers may use of their node (the ``Runtime`` satisfies it)."""

    @property
    def node_id(self) -> int:
        """This node's id (read when needed: it is settled once the node joined)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def pools(self) -> PoolManager:
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

    runtime: ModuleContext
    params: Mapping[str, str]
    path_args: Mapping[str, str]

    def require(self, name: str) -> str:
        value = self.params.get(name, "")
        if value == "":
            raise BadRequest(f"missing {name}")
        return value

    def flag(self, name: str, default: bool = False) -> bool:
        """A boolean parameter: ``default`` when left out or empty, else exactly one of
        ``cluster.ground.parse.BOOL_WORDS`` (any case); anything else (``maybe``, ``2``, `` 1``) is
        a BadRequest, before the handler changes anything."""
        value = self.params.get(name, "")
        if value == "":
            return default
        try:
            return parse_bool(value, what=name)
        except ParseError as exc:
            raise BadRequest(str(exc)) from None


Handler = Callable[[RouteCall], Awaitable[JSON]]


@dataclass(frozen=True, slots=True)
class ModuleRoute:
    method: str  # "GET" or "POST"
    path: str  # below /api/mod/<mod_name>/, e.g. "{pool}/add_member"
    handler: Handler
    doc: str
    api: ApiSpec | None = None  # for /openapi.json; a route without one is flagged there


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
    # Create-form fields as /openapi.json describes them, where the form alone does not say
    # enough (others are text, selects enums; see ``apidoc.form_params``)
    api_fields: ClassVar[Mapping[str, ApiParam]] = {}

    def __init__(self, runtime: ModuleContext) -> None:
        self.runtime = runtime

    @property
    def methods(self) -> tuple[str, ...]:
        return self.container_class.methods

    def create_form(self) -> FormSpec | None:
        """The typed create form, or None when the module registers none (ask
        ``has_create_form`` to know if there is one). Building it reserves nothing."""
        return None

    @property
    def has_create_form(self) -> bool:
        return type(self).create_form is not Module.create_form

    def suggestion(self) -> str:
        """A free pool id for a form's default, from this module's base (reserves nothing)."""
        return str(self.runtime.pools.suggest(self.suggest_base))

    def form_to_compose(self, params: Mapping[str, str]) -> tuple[JSON, dict[str, str]]:
        """Typed-form parameters -> (module config, errors by field); form modules override."""
        return {}, {}

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

    def routes(self) -> list[ModuleRoute]:
        """Every route of the module: the conventional ones, then ``action_routes``."""
        mod = self.mod_name
        routes = [
            ModuleRoute(
                "GET", "pools", self._pools, f"this node's {mod} pools",
                ApiSpec(body=answers.MODULE_POOLS),
            )
        ]  # fmt: skip
        if self.has_create_form:
            routes += [
                ModuleRoute(
                    "GET", "create", self._create_spec, f"the {mod} form spec",
                    ApiSpec(body=answers.FORM_SPEC),
                ),
                ModuleRoute(
                    "POST", "create", self._create, f"validate or create a {mod} pool",
                    self.create_api(),
                ),
            ]  # fmt: skip
        return [_answering_pool_gone(r) for r in [*routes, *self.action_routes()]]

    def create_api(self) -> ApiSpec:
        """``POST create``'s parameters (the create form's fields, ``action``, ``pool_query``)
        and answers; a module whose ``form_to_compose`` reads more fields adds them here."""
        form = self.create_form()
        extra = (ApiParam("pool_query", doc="routing of the pool (default local)"), ACTION_PARAM)
        return ApiSpec(
            params=form_params(form.fields if form else (), extra, overrides=self.api_fields),
            body=answers.COMPOSED,
            errors={409: "the pool could not start (nothing is left behind)"},
            fields=True,
            links=self.create_links(),
        )

    def create_links(self) -> tuple[Link, ...]:
        """From a created pool to the operations on it: its monitor, its destroy, and the
        module's own ``{pool}`` routes."""
        pool = {"pool": "$response.body#/pool_id"}
        mod = self.mod_name
        links = [
            Link("monitor", "GET /api/pools/{pool}/monitor", {**pool, "query": "stats"}),
            Link("destroy", "POST /api/pools/{pool}/destroy", pool),
        ]
        for route in self.action_routes():
            if route.path.startswith("{pool}/"):
                name = route.path.removeprefix("{pool}/")
                links.append(Link(name, f"{route.method} /api/mod/{mod}/{route.path}", pool))
        return tuple(links)

    def action_routes(self) -> list[ModuleRoute]:
        """The module's own routes, e.g. ``{pool}/add_member``."""
        return []

    def create_result(self, body: JSON, config: Mapping[str, Any]) -> JSON:
        """The success body of ``POST create``; modules may add fields."""
        return body

    def pool_of(self, call: RouteCall, cls: type[C]) -> C:
        """The container named by the route's ``{pool}``: 400 unparseable, 404 not ours."""
        text = call.path_args.get("pool", "")
        container = self.runtime.pools.find(PoolId.parse(text))
        if not isinstance(container, cls) or container.info.mod_name != self.mod_name:
            raise NotFound(f"no {self.mod_name} pool with id {text}")
        return container

    async def _pools(self, call: RouteCall) -> JSON:
        return {
            "pools": [
                {"pool_id": str(c.info.pool_id), "pool_name": c.info.pool_name}
                for c in self.runtime.pools.of_module(self.mod_name)
            ]
        }

    async def _create_spec(self, call: RouteCall) -> JSON:
        form = self.create_form()
        if form is None:
            raise NotFound(
                f"module {self.mod_name} registers no create form; use /api/pools/compose"
            )
        return form.to_json()

    async def _create(self, call: RouteCall) -> JSON:
        params = call.params
        config, errors = self.form_to_compose(params)
        action = params.get("action", "")
        if action not in ("", "validate", "create"):
            errors = {
                **errors,
                "action": f"unknown action '{action}' (use validate, or leave it out)",
            }
        validate = action == "validate"
        body = await self.runtime.compose(
            self.mod_name,
            params.get("pool_name", ""),
            params.get("pool_id", ""),
            config,
            pool_query=params.get("pool_query", "") or "local",
            validate_only=validate,
            errors=errors,
        )
        return body if validate else self.create_result(body, config)

    def demo_entries(self) -> list[JSON]:
        """Compose entries for a demo node when the settings compose nothing."""
        return []

    def describe(self) -> JSON:
        return {"name": self.mod_name, "methods": list(self.methods)}


def _answering_pool_gone(route: ModuleRoute) -> ModuleRoute:
    """``route`` with a ``PoolGone`` from its handler answered as a 409 ``Conflict``."""
    handler = route.handler

    @functools.wraps(handler)
    async def handle(call: RouteCall) -> JSON:
        try:
            return await handler(call)
        except PoolGone as exc:
            raise Conflict(f"pool {exc.pool} was destroyed while the request ran") from None

    return ModuleRoute(route.method, route.path, handle, route.doc, route.api)


def pool_name_field() -> FormField:
    return FormField("pool_name", "Pool name", required=True)


def pool_id_field(suggestion: str) -> FormField:
    return FormField(
        "pool_id",
        "Pool ID",
        required=True,
        default=suggestion,
        placeholder="800.0",
        help="<major>.<minor>; a free id is suggested",
    )
