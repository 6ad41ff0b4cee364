"""Will a local cluster fit in this machine's memory? Asked before anything is written or
started, so a size the machine cannot hold is refused at once instead of sinking into swap
and the out-of-memory killer half-way through its start.

Rules:
1. What a cluster needs: ``NODE_MIB`` for each node with its watcher (what ``bench.idle``
   measures at rest at 20 nodes, rounded up; in a larger cluster a node's share of the
   zygote's pages is smaller), ``AGENT_MIB`` for each Serf agent, and ``RESERVE_MIB`` for
   the launcher, the zygote and the rest of the machine.
2. What the machine has: ``MemAvailable`` of ``/proc/meminfo`` (free memory plus what the
   kernel can take back), read at the moment of asking. Without it (not Linux) nothing is
   refused.
3. A refusal is one line: how much the size needs, how much the machine has, and the largest
   size that fits (``BadInput``, exit 2 on the command line).
4. Whatever the machine has, a local cluster has at most ``MAX_NODES`` nodes (``plan`` refuses
   more; ``rt_cluster``'s parser reads the bound from here without loading the launcher).
"""

from __future__ import annotations

from pathlib import Path

from .record import BadInput

__all__ = ["AGENT_MIB", "MAX_NODES", "NODE_MIB", "RESERVE_MIB", "available_mib", "check_fits"]

MAX_NODES = 1024  # nodes in one local cluster, whatever the machine has
NODE_MIB = 18  # a node and its watcher: bench.idle measures 17.1 MB PSS at rest at 20 nodes
AGENT_MIB = 8  # a Serf agent: bench.idle measures 6.9 MB PSS at rest
RESERVE_MIB = 1024  # the launcher, the zygote, the system


def available_mib(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """``MemAvailable`` in MiB, or None when the kernel does not say (rule 2)."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_fits(nodes: int, agents: int = 0, meminfo: Path = Path("/proc/meminfo")) -> None:
    """Refuse (``BadInput``) a cluster of ``nodes`` nodes and ``agents`` Serf agents that
    would not fit in the memory available now (rules 1-3)."""
    have = available_mib(meminfo)
    if have is None:
        return
    need = nodes * NODE_MIB + agents * AGENT_MIB + RESERVE_MIB
    if need <= have:
        return
    fits = max(0, (have - RESERVE_MIB - agents * AGENT_MIB) // NODE_MIB)
    raise BadInput(
        f"{nodes} nodes need about {need / 1024:.1f} GiB of memory ({NODE_MIB} MiB a node "
        f"with its watcher, {RESERVE_MIB} MiB kept for the rest); this machine has "
        f"{have / 1024:.1f} GiB available: start at most {fits} nodes, or free memory"
    )
