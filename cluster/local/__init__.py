"""Local clusters: the cluster directory and record, free ports and who holds a taken one, the
processes of this host (started detached or forked under a watcher, recorded before they run,
signalled, ended with proof) and the launcher that runs node processes on them, on this
host's loopback or each in a network namespace of its own (``network``, ``netns``), and real
Serf agents beside them (``serf``, ``mixed``: ``rt_cluster up --serf M``).
``rt_cluster``, the scenario runner and the tests' process harness stand on top of it; it
reaches nodes only through their RPC.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .bookkeeping import TrackedCluster
    from .capacity import MAX_NODES
    from .clusterdir import write_keyring
    from .convergence import sees_all
    from .holders import describe_holders, port_holders, port_trouble
    from .launcher import LocalCluster, NodeFailed
    from .ledger import Member, live_members, members, procs_dir
    from .mixed import MixedCluster, alive_names, open_local
    from .netns import bridge_present, cut_addresses, cut_nodes, leftovers
    from .netplan import DEFAULT_SUBNET
    from .pids import process_state, start_marker
    from .plan import KEYRING_BY_DEFAULT, plan_cluster
    from .ports import check_port_free, free_port, pick_free_ports
    from .processes import PROJECT_ROOT, Proc, Processes, Watched, Zygote, child_env, log_tail
    from .record import (
        AgentRecord,
        BadInput,
        ClusterError,
        ClusterRecord,
        Ending,
        Network,
        NodeRecord,
        cluster_dir,
        clusters_home,
        load_record,
        read_record,
        save_record,
        update_record,
        valid_name,
    )
    from .serf import SerfUnavailable, member_name, member_names, serf_members
    from .startup import LaunchProgress, Progress, launch

# The package is a door, not a floor (as ``cluster`` and ``scenarios`` are): a name loads its
# own module when it is first asked for, so what asks only for the errors (``ClusterError``,
# ``BadInput``: every scenario on the simulated network) loads neither the launcher nor the
# node RPC it speaks.
_WHERE = {
    "TrackedCluster": "bookkeeping",
    "MAX_NODES": "capacity",
    "write_keyring": "clusterdir",
    "sees_all": "convergence",
    **dict.fromkeys(("describe_holders", "port_holders", "port_trouble"), "holders"),
    **dict.fromkeys(("LocalCluster", "NodeFailed"), "launcher"),
    **dict.fromkeys(("Member", "live_members", "members", "procs_dir"), "ledger"),
    **dict.fromkeys(("MixedCluster", "alive_names", "open_local"), "mixed"),
    **dict.fromkeys(("bridge_present", "cut_addresses", "cut_nodes", "leftovers"), "netns"),
    "DEFAULT_SUBNET": "netplan",
    **dict.fromkeys(("process_state", "start_marker"), "pids"),
    **dict.fromkeys(("KEYRING_BY_DEFAULT", "plan_cluster"), "plan"),
    **dict.fromkeys(("check_port_free", "free_port", "pick_free_ports"), "ports"),
    **dict.fromkeys(
        ("PROJECT_ROOT", "Proc", "Processes", "Watched", "Zygote", "child_env", "log_tail"),
        "processes",
    ),
    **dict.fromkeys(
        (
            "AgentRecord",
            "BadInput",
            "ClusterError",
            "ClusterRecord",
            "Ending",
            "Network",
            "NodeRecord",
            "cluster_dir",
            "clusters_home",
            "load_record",
            "read_record",
            "save_record",
            "update_record",
            "valid_name",
        ),
        "record",
    ),
    **dict.fromkeys(("SerfUnavailable", "member_name", "member_names", "serf_members"), "serf"),
    **dict.fromkeys(("LaunchProgress", "Progress", "launch"), "startup"),
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'cluster.local' has no attribute {name!r}")
    value = getattr(import_module(f"cluster.local.{where}"), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_SUBNET",
    "KEYRING_BY_DEFAULT",
    "MAX_NODES",
    "PROJECT_ROOT",
    "AgentRecord",
    "BadInput",
    "ClusterError",
    "ClusterRecord",
    "Ending",
    "LaunchProgress",
    "LocalCluster",
    "Member",
    "MixedCluster",
    "Network",
    "NodeFailed",
    "NodeRecord",
    "Proc",
    "Processes",
    "Progress",
    "SerfUnavailable",
    "TrackedCluster",
    "Watched",
    "Zygote",
    "alive_names",
    "bridge_present",
    "check_port_free",
    "child_env",
    "cluster_dir",
    "clusters_home",
    "cut_addresses",
    "cut_nodes",
    "describe_holders",
    "free_port",
    "launch",
    "leftovers",
    "live_members",
    "load_record",
    "log_tail",
    "member_name",
    "member_names",
    "members",
    "open_local",
    "pick_free_ports",
    "plan_cluster",
    "port_holders",
    "port_trouble",
    "process_state",
    "procs_dir",
    "read_record",
    "save_record",
    "sees_all",
    "serf_members",
    "start_marker",
    "update_record",
    "valid_name",
    "write_keyring",
]
