"""Local clusters: the cluster directory and record, free ports, and the launcher that starts,
signals, watches and stops node processes on this host. ``rt_cluster`` and the scenario
runner stand on top of it; it reaches nodes only through their RPC.
"""

from .launcher import LocalCluster, NodeFailed, launch, plan_cluster
from .ports import check_port_free, free_port, pick_free_ports
from .record import (
    BadInput,
    ClusterError,
    ClusterRecord,
    NodeRecord,
    cluster_dir,
    clusters_home,
    create_time,
    load_record,
    process_state,
    save_record,
    valid_name,
)

__all__ = [
    "BadInput",
    "ClusterError",
    "ClusterRecord",
    "LocalCluster",
    "NodeFailed",
    "NodeRecord",
    "check_port_free",
    "cluster_dir",
    "clusters_home",
    "create_time",
    "free_port",
    "launch",
    "load_record",
    "pick_free_ports",
    "plan_cluster",
    "process_state",
    "save_record",
    "valid_name",
]
