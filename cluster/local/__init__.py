"""Local clusters: the cluster directory and record, free ports, the processes of this host
(started detached, watched, signalled, ended with proof) and the launcher that runs node
processes on them. ``rt_cluster``, the scenario runner and the tests' process harness stand on
top of it; it reaches nodes only through their RPC.
"""

from .launcher import LocalCluster, NodeFailed, Progress
from .plan import plan_cluster
from .ports import check_port_free, free_port, pick_free_ports
from .processes import PROJECT_ROOT, Proc, Processes, Watched, Zygote, child_env, log_tail
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
from .startup import launch

__all__ = [
    "PROJECT_ROOT",
    "BadInput",
    "ClusterError",
    "ClusterRecord",
    "LocalCluster",
    "NodeFailed",
    "NodeRecord",
    "Proc",
    "Processes",
    "Progress",
    "Watched",
    "Zygote",
    "check_port_free",
    "child_env",
    "cluster_dir",
    "clusters_home",
    "create_time",
    "free_port",
    "launch",
    "load_record",
    "log_tail",
    "pick_free_ports",
    "plan_cluster",
    "process_state",
    "save_record",
    "valid_name",
]
