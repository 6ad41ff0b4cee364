"""Real Serf agents (Debian's ``serf``) and rtsim nodes speaking memberlist, for the tests.

``Agent`` is one ``serf agent`` process on the harness (ended with it); ``start_node`` starts
``rt_run start --wire memberlist`` joined to an agent and waits for its dashboard.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from cluster.local import SerfUnavailable, free_port, serf_members

from .harness import HOST, Child, Harness
from .waiting import wait_for

__all__ = ["SERF", "Agent", "start_node"]

SERF = shutil.which("serf") or "serf"


class Agent:
    """One ``serf agent`` process started by the harness."""

    def __init__(
        self, h: Harness, name: str, join: int | None, key: str | None, *tags: str
    ) -> None:
        self.name, self.port, self.rpc = name, free_port(), free_port()
        argv = [SERF, "agent", "-node", name, "-bind", f"{HOST}:{self.port}"]
        argv += ["-rpc-addr", f"{HOST}:{self.rpc}", "-log-level=info"]
        argv += ["-join", f"{HOST}:{join}"] if join else []
        argv += ["-encrypt", key] if key else []
        for tag in tags:  # "key=value"
            argv += ["-tag", tag]
        self.child = h.start(argv, name)
        self.h = h
        wait_for(f"{name}'s RPC", self._members_or_none, timeout=30)

    def _members_or_none(self) -> dict[str, str] | None:
        self.h.require_alive(self.child)
        try:
            return self.members()
        except SerfUnavailable:
            return None

    def members(self) -> dict[str, str]:
        """``serf members``: each member's status (alive, failed, left) by name."""
        return serf_members(f"{HOST}:{self.rpc}", timeout=10, serf=SERF)

    def errors(self) -> list[str]:
        return [line for line in Harness.log_text(self.child).splitlines() if "[ERR]" in line]


def start_node(h: Harness, join: int, key_file: Path | None, *, port: int, name: str) -> Child:
    flags = ["--wire", "memberlist", "--node-id", "0", "--name", name, "--join", f"{HOST}:{join}"]
    flags += ["--keyring", str(key_file)] if key_file else []
    child = h.start_dashboard_node(*flags, port=port, name=name)
    h.wait_ready(child)
    return child
