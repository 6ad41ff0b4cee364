"""Where a node started by mpirun or srun sits: its rank picks its hostfile entry.

Rules:
1. A process runs under a launcher when one of ``RANK_VARIABLES`` is set; the first present
   wins, in the order Open MPI, PMI (MPICH, Intel MPI), Slurm, so a launcher's own variable
   beats the ``SLURM_PROCID=0`` a batch script hands to every process it starts. The local rank
   (the rank among the launched processes on this host) is the same launcher's variable, 0
   when that one is unset. Both are parsed strictly (``cluster.ground.parse``); a malformed
   value is a ``SettingsError`` naming the variable. An empty variable is an unset one.
2. The rank places the node only when nothing else does: ``networking.node_id`` is -1, a
   hostfile is set, and the runtime port was not given on the command line. ``--port`` is a
   per-process choice (``rt_cluster`` makes it for each node), so a launcher's variables that
   such nodes inherit change nothing.
3. The rank's entry (offset ``rank`` among the hostfile's entries) must exist and must name
   this host: one of its names, or a host that resolves to one of its addresses (loopback
   included). The node takes the id ``rank`` and binds the entry's port; it binds the entry's
   host too when that is an address of this machine, else it keeps ``networking.host`` and
   advertises the entry's host. A wildcard ``networking.host`` (bind every address) and an
   explicit ``networking.advertise`` are kept.
4. The dashboard listens on ``viz.port`` + local rank, so the processes on one host do not
   collide; ``viz.port`` 0 stays 0 (each process picks a free port).
5. ``choose_placement`` decides, pure: environment, settings, the hostfile's entries and this
   machine (names, addresses, a resolver) in; a ``Placement``, None (no launcher, or placed
   otherwise) or a ``SettingsError`` out. ``place_node`` does the I/O around it and returns the
   settings the node runs with, each changed value's origin naming the rank.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cluster.ground.errors import SettingsError
from cluster.ground.parse import MAX_NODE_ID, PORT_MAX, ParseError, parse_int, shown
from cluster.ground.settings import Settings
from cluster.hosts import Machine, is_wildcard, parse_hostfile

__all__ = [
    "PORT_FLAG",
    "RANK_VARIABLES",
    "LaunchRank",
    "Placement",
    "choose_placement",
    "launch_rank",
    "place_node",
]

log = logging.getLogger(__name__)

# (rank variable, local rank variable) of each launcher, in the order they are looked for
RANK_VARIABLES: tuple[tuple[str, str], ...] = (
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"),  # Open MPI's mpirun
    ("PMI_RANK", "MPI_LOCALRANKID"),  # MPICH and Intel MPI (hydra)
    ("SLURM_PROCID", "SLURM_LOCALID"),  # srun
)
PORT_FLAG = "flag --port"  # the origin of a runtime port given on the command line


@dataclass(frozen=True, slots=True)
class LaunchRank:
    """This process's place in a launch: its rank and its rank on this host."""

    rank: int
    variable: str  # the variable the rank came from
    local_rank: int = 0
    local_variable: str = ""  # "" : unset, so local rank 0

    def __str__(self) -> str:
        return f"rank {self.rank} ({self.variable})"


@dataclass(frozen=True, slots=True)
class Placement:
    """What the rank chose: the entry, what to bind and advertise, the dashboard port."""

    rank: LaunchRank
    entry: tuple[str, int]
    host: str  # bind
    port: int
    advertise: str  # "" : the bound host
    viz_port: int

    def describe(self, hostfile: str) -> str:
        """The one log line saying which entry the rank took."""
        entry_host, entry_port = self.entry
        line = (
            f"{self.rank} takes hostfile {hostfile} entry {self.rank.rank} "
            f"({entry_host}:{entry_port}): node {self.rank.rank} binds {self.host}:{self.port}"
        )
        if self.advertise:
            line += f", advertised as {self.advertise}"
        if self.viz_port:
            local = self.rank.local_variable or "unset, so 0"
            line += f"; dashboard port {self.viz_port} (local rank {self.rank.local_rank}: {local})"
        return line


def launch_rank(env: Mapping[str, str]) -> LaunchRank | None:
    """The rank the first launcher's variables give (rule 1); None when none is set."""
    for variable, local_variable in RANK_VARIABLES:
        raw = env.get(variable, "")
        if raw == "":
            continue
        rank = _parse(variable, raw, MAX_NODE_ID)
        local_raw = env.get(local_variable, "")
        if local_raw == "":
            return LaunchRank(rank, variable)
        return LaunchRank(
            rank, variable, _parse(local_variable, local_raw, PORT_MAX), local_variable
        )
    return None


def _parse(variable: str, raw: str, high: int) -> int:
    try:
        return parse_int(raw, low=0, high=high, what=variable)
    except ParseError as exc:
        raise SettingsError(f"{variable}={shown(raw)}: {exc}") from None


def _placed_by_rank(settings: Settings) -> bool:
    net = settings.networking
    return (
        net.node_id < 0 and bool(net.hostfile) and settings.origin("networking.port") != PORT_FLAG
    )


def choose_placement(
    env: Mapping[str, str],
    settings: Settings,
    entries: Sequence[tuple[str, int]],
    here: Machine,
) -> Placement | None:
    """The entry this process's rank takes and what it binds (rules 2 to 4); None when the
    rank does not place the node; a SettingsError naming the rank when it cannot."""
    if not _placed_by_rank(settings) or (rank := launch_rank(env)) is None:
        return None
    net, path = settings.networking, settings.networking.hostfile
    if rank.rank >= len(entries):
        raise SettingsError(
            f"{rank} has no entry in hostfile {path}: it has {len(entries)} "
            f"entr{'y' if len(entries) == 1 else 'ies'}; start at most {len(entries)} "
            "processes, or add entries"
        )
    host, port = entries[rank.rank]
    local = here.has_address(host)
    if not local and not here.is_named(host):
        raise SettingsError(
            f"{rank} takes hostfile {path} entry {rank.rank}, {host}:{port}, which does not "
            f"name this host ({here.describe()}); list the hosts in the order the launcher "
            "places the ranks"
        )
    bind = host if local and not is_wildcard(net.host) else net.host
    advertise = net.advertise or ("" if bind == host else host)
    viz_port = settings.viz.port + rank.local_rank if settings.viz.port else 0
    if viz_port > PORT_MAX:
        raise SettingsError(
            f"{rank}: viz.port {settings.viz.port} + local rank {rank.local_rank} is past "
            f"{PORT_MAX}; choose a lower viz.port"
        )
    return Placement(rank, (host, port), bind, port, advertise, viz_port)


def place_node(
    settings: Settings, env: Mapping[str, str], here: Callable[[], Machine] = Machine.here
) -> Settings:
    """The settings the node runs with: ``settings`` placed by its rank when rule 2 says so
    (reading the hostfile and asking the system about this machine), else unchanged."""
    if not _placed_by_rank(settings) or launch_rank(env) is None:
        return settings
    net = settings.networking
    entries = parse_hostfile(net.hostfile, net.port)
    placement = choose_placement(env, settings, entries, here())
    if placement is None:
        return settings
    log.info("%s", placement.describe(net.hostfile))
    origin = f"launcher: {placement.rank}, hostfile entry {placement.rank.rank}"
    origins = dict(settings.origins)
    changed: dict[str, Any] = {
        "node_id": placement.rank.rank,
        "host": placement.host,
        "port": placement.port,
        "advertise": placement.advertise,
    }
    for key, value in changed.items():
        if getattr(net, key) != value:
            origins[f"networking.{key}"] = origin
    viz = settings.viz
    if placement.viz_port != viz.port:
        local = placement.rank.local_variable or "unset"
        origins["viz.port"] = f"launcher: viz.port + local rank ({local})"
        viz = replace(viz, port=placement.viz_port)
    return replace(settings, networking=replace(net, **changed), viz=viz, origins=origins)
