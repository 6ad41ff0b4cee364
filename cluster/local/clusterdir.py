"""The cluster directory made ready for a run: an earlier run's processes refused, its logs
cleared, the hostfile and the gossip keyring written, the record returned.

Rules:
1. A directory whose earlier processes still run is refused (they would lose their logs).
2. A node's id is its line offset in the hostfile (``write_entries``); a node added later
   appends its line (``append_entry``).
3. A keyring is ``<dir>/keyring``, mode 0600, one base64 line of 32 random bytes, written
   whole and then renamed, so a reader never sees part of a key.
4. Nothing here starts, signals or asks a process; ``plan`` decides what to write.
"""

from __future__ import annotations

import base64
import os
import secrets
import time
from collections.abc import Sequence
from pathlib import Path

from .ledger import live_members, procs_dir
from .record import BadInput, ClusterError, ClusterRecord, Network, NodeRecord, read_record
from .serf import AGENT_CONFIG

__all__ = [
    "append_entry",
    "check_config",
    "hostfile_entries",
    "prepare",
    "refuse_earlier_run",
    "write_entries",
    "write_hostfile",
    "write_keyring",
]


def prepare(
    directory: Path,
    name: str,
    nodes: tuple[NodeRecord, ...],
    config: str,
    use_keyring: bool,
    *,
    host: str = "127.0.0.1",
    network: Network | None = None,
) -> ClusterRecord:
    """The directory made ready for ``nodes`` (fresh logs, hostfile, keyring); the record."""
    directory.mkdir(parents=True, exist_ok=True)
    old_files = [*directory.glob("node-*.log"), *directory.glob("node-*.events")]
    old_files += [*directory.glob("serf-*.log"), *directory.glob(AGENT_CONFIG)]
    for old in [*old_files, *procs_dir(directory).glob("*.json")]:
        old.unlink()
    hostfile = directory / "hostfile"
    write_entries(hostfile, [(n.host, n.runtime_port) for n in nodes])
    if use_keyring:
        write_keyring(directory / "keyring")
    return ClusterRecord(
        name=name,
        directory=str(directory),
        hostfile=str(hostfile),
        config=str(Path(config).resolve()) if config else "",
        host=host,
        created=time.time(),
        nodes=nodes,
        keyring=str(directory / "keyring") if use_keyring else "",
        network=network,
    )


def check_config(config: str) -> None:
    """BadInput when the ``--config`` file is missing or cannot be read."""
    shown = config if len(config) <= 80 else config[:77] + "..."
    try:
        if not Path(config).is_file():
            raise BadInput(f"--config {shown!r}: no such file")
        with open(config, "rb"):
            pass
    except OSError as exc:
        raise BadInput(f"--config {shown!r}: cannot be read ({exc.strerror})") from None


def refuse_earlier_run(directory: Path, name: str) -> None:
    """ClusterError when processes of an earlier run in ``directory`` still run (rule 1)."""
    try:
        earlier = read_record(directory)
    except ClusterError:
        earlier = None
    running = live_members(directory, earlier)
    if running:
        raise ClusterError(
            f"cluster {name!r} is already running ({len(running)} processes, e.g. "
            f"{running[0].label()}); stop it first with: rt_cluster down --name {name}"
        )


def write_keyring(path: Path) -> None:
    """A fresh gossip keyring at ``path``: one base64 line of 32 random bytes, mode 0600,
    written whole, then renamed (a reader never sees part of a key)."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, base64.b64encode(secrets.token_bytes(32)) + b"\n")
    finally:
        os.close(fd)
    os.replace(tmp, path)


def hostfile_entries(path: Path) -> list[str]:
    """The hostfile's entries (comments and blank lines left out); [] when it is unreadable."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    return [s for s in (line.split("#", 1)[0].strip() for line in lines) if s]


def append_entry(path: Path, host: str, port: int) -> None:
    with path.open("a") as f:
        f.write(f"{host}:{port}\n")


def write_hostfile(path: Path, host: str, ports: Sequence[int]) -> None:
    write_entries(path, [(host, p) for p in ports])


def write_entries(path: Path, entries: Sequence[tuple[str, int]]) -> None:
    """A hostfile of ``host:port`` lines, in order (line offset = node id)."""
    path.write_text("".join(f"{host}:{port}\n" for host, port in entries))
