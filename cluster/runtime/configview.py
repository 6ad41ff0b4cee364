"""The config answer: the settings a node came up with, and their sources.

Rules:
1. Values are what the node runs with (the bound dashboard address, the loaded modules), not
   only what was asked for; ``sources`` says where each came from (``default``, ``file
   <path>``, ``env RT_...``, ``flag --...``, or how it was derived), ``paths`` the paths in use
   with ``~`` expanded.
2. Read-only: built from ``Settings`` and what the runtime passes in, nothing changed.
"""

from __future__ import annotations

from typing import Any

from cluster.ground.settings import Settings

__all__ = ["config_answer"]

JSON = dict[str, Any]


def _sources(s: Settings, viz_port: int) -> dict[str, str]:
    port_from = s.origin("viz.port")
    return {
        "port": s.origin("networking.port"),
        "server_addr": s.origin("networking.host"),
        "num_threads": s.origin("runtime.num_threads"),
        "worker_count": s.origin("runtime.worker_count")
        if s.runtime.worker_count
        else "derived: num_threads (worker_count 0)",
        "hostfile": s.origin("networking.hostfile"),
        "conf_dir": s.origin("runtime.conf_dir"),
        "learning_rate": s.origin("runtime.learning_rate"),
        "swim_enabled": "derived: the membership layer this node runs",
        "viz_port": port_from if viz_port == s.viz.port else f"bound: {port_from} asked for 0",
        "viz_bind": s.origin("viz.bind"),
        "modules": s.origin("runtime.modules"),
        "data_dir": s.origin("runtime.data_dir")
        if s.runtime.data_dir
        else "derived: conf_dir/data/node-<port>",
        "config_file": s.origin("config_file"),
    }


def config_answer(
    s: Settings, viz_address: tuple[str, int] | None, *, swim_enabled: bool, modules: list[str]
) -> JSON:
    """The config answer for settings ``s``; ``viz_address`` is the bound dashboard (or
    None)."""
    viz_bind, viz_port = viz_address or (s.viz.bind, s.viz.port)
    return {
        "port": s.networking.port,
        "server_addr": s.networking.host,
        "num_threads": s.runtime.num_threads,
        "worker_count": s.runtime.workers,
        "hostfile": s.networking.hostfile,
        "conf_dir": s.runtime.conf_dir,
        "learning_rate": s.runtime.learning_rate,
        "swim_enabled": swim_enabled,
        "viz_port": viz_port,
        "viz_bind": viz_bind,
        "modules": modules,
        "sources": _sources(s, viz_port),
        "paths": s.paths(),
    }
