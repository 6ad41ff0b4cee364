"""The runtime of one node, without its network: pools, workers, cost model, stats ring, the
module contract and registry, the answers built from them, and the view the dashboard and
the node RPC serve.

    Runtime                   one node's runtime: the core and its answers, composed
    RuntimeCore               identity, the pool table and the pools' life cycle, the one
                              bounded forward to a peer
    the answers               every answer a node gives, each a function of a Protocol
                              (``NodeState``, ``Forwarder`` in nodestate.py): shapes.py
                              (health, topology, pools, chimods, config), admin.py (the
                              admin pool's queries), monitors.py (answered here or
                              forwarded), views.py (the matrix), configview.py
    Membership, SingleNode    what the runtime reads of the cluster (the SWIM handle, or itself):
                              its table, history and faults (``faults_json``, ``view_name``)
    build_views               the observer x subject matrix of the cluster's views
    Peers, is_local           how it reaches peers, and the one "answer here?" decision
    UnknownNode               a node id neither local nor in the host table
    parse_routing, name_error the strict readings of a routing and of a pool name
    RuntimeView               the narrow view the dashboard is given
    Module, Container, ...    the contract every module implements (``cluster.modules``)
    DiskFault                 a fault injected into one block device (latency, errors, full)
    load_modules, BUILTIN     the registry: modules by dotted path, never imported by name here
    serve_workload            the synthetic workload

The runtime imports nothing of the node process, the dashboard, the modules or the HTTP
description of its modules (``cluster.api``); no module here names the ``Runtime`` class but
the one that defines it.
"""

from .assets import find_assets, viz_roots
from .compose import MAX_NAME, name_error
from .core import RuntimeCore
from .costmodel import CostModel
from .diskfault import MAX_LATENCY_MS, NO_DISK_FAULT, DiskFault
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
from .module import Container, Module, ModuleContext, PoolInfo, PoolTable
from .nodestate import Forwarder, NodeState
from .peers import (
    BLOCK_IO,
    BLOCK_OPS,
    FORWARD_TIMEOUT,
    MAX_WRITER,
    BlockCall,
    Peers,
    Routing,
    UnknownNode,
    is_local,
    parse_routing,
    routing_forwards,
    timed_out,
    unreachable,
)
from .pools import PoolManager
from .probe import ProcessProbe
from .registry import BUILTIN, available_modules, load_modules, preload_modules
from .runtime import Runtime
from .sysstats import StatsRing
from .view import RuntimeView
from .views import build_views
from .workers import PeriodicTask, WorkerPool, parse_period
from .workload import serve_workload, startup_compose

__all__ = [
    "BLOCK_IO",
    "BLOCK_OPS",
    "BUILTIN",
    "FORWARD_TIMEOUT",
    "MAX_LATENCY_MS",
    "MAX_NAME",
    "MAX_WRITER",
    "NO_DISK_FAULT",
    "BlockCall",
    "Container",
    "CostModel",
    "DiskFault",
    "EventLike",
    "FaultsLike",
    "Forwarder",
    "MemberLike",
    "Membership",
    "Module",
    "ModuleContext",
    "NoFaults",
    "NodeState",
    "Peers",
    "PeriodicTask",
    "PoolInfo",
    "PoolManager",
    "PoolTable",
    "ProcessProbe",
    "Routing",
    "Runtime",
    "RuntimeCore",
    "RuntimeView",
    "SingleNode",
    "StatsRing",
    "UnknownNode",
    "WorkerPool",
    "available_modules",
    "build_views",
    "faults_json",
    "find_assets",
    "is_local",
    "load_modules",
    "name_error",
    "parse_period",
    "parse_routing",
    "preload_modules",
    "routing_forwards",
    "serve_workload",
    "startup_compose",
    "state_name",
    "timed_out",
    "unreachable",
    "view_name",
    "viz_roots",
]
