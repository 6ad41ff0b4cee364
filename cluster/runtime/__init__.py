"""The runtime of one node, without its network: pools, workers, cost model, stats ring, the
module contract and registry, and the view the dashboard and the node RPC serve.

    Runtime                   one node's runtime; answers from its own state
    Membership, SingleNode    what the runtime reads of the cluster (the SWIM handle, or itself):
                              its table, history and faults (``faults_json``, ``view_name``)
    build_views               the observer x subject matrix of /api/cluster/views
    Peers, is_local           how it reaches peers, and the one "answer here?" decision
    parse_routing, name_error the strict readings of a routing and of a pool name
    RuntimeView               the narrow view the dashboard is given
    Module, Container, ...    the contract every module implements (``cluster.modules``)
    load_modules, BUILTIN     the registry: modules by dotted path, never imported by name here
    serve_workload            the synthetic workload
    ApiSpec, apidoc, answers  how routes describe themselves for /openapi.json

The runtime imports nothing of the node process, the dashboard or the modules.
"""

from . import answers, apidoc
from .apidoc import ApiParam, ApiSpec, Link
from .assets import find_assets, viz_roots
from .compose import MAX_NAME, name_error
from .costmodel import CostModel
from .membership import (
    EventLike,
    FaultsLike,
    MemberLike,
    Membership,
    NoFaults,
    SingleNode,
    faults_json,
    state_name,
    view_name,
)
from .module import (
    Container,
    FormField,
    FormSpec,
    Module,
    ModuleContext,
    ModuleRoute,
    PoolInfo,
    RouteCall,
    pool_id_field,
    pool_name_field,
)
from .peers import FORWARD_TIMEOUT, Peers, Routing, is_local, parse_routing, routing_forwards
from .pools import PoolManager
from .registry import BUILTIN, available_modules, load_modules, preload_modules
from .runtime import Runtime
from .sysstats import StatsRing
from .view import RuntimeView
from .views import build_views
from .workers import PeriodicTask, WorkerPool, parse_period
from .workload import serve_workload, startup_compose

__all__ = [
    "BUILTIN",
    "FORWARD_TIMEOUT",
    "MAX_NAME",
    "ApiParam",
    "ApiSpec",
    "Container",
    "CostModel",
    "EventLike",
    "FaultsLike",
    "FormField",
    "FormSpec",
    "Link",
    "MemberLike",
    "Membership",
    "Module",
    "ModuleContext",
    "ModuleRoute",
    "NoFaults",
    "Peers",
    "PeriodicTask",
    "PoolInfo",
    "PoolManager",
    "RouteCall",
    "Routing",
    "Runtime",
    "RuntimeView",
    "SingleNode",
    "StatsRing",
    "WorkerPool",
    "answers",
    "apidoc",
    "available_modules",
    "build_views",
    "faults_json",
    "find_assets",
    "is_local",
    "load_modules",
    "name_error",
    "parse_period",
    "parse_routing",
    "pool_id_field",
    "pool_name_field",
    "preload_modules",
    "routing_forwards",
    "serve_workload",
    "startup_compose",
    "state_name",
    "view_name",
    "viz_roots",
]
