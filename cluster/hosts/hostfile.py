"""Who this node is and whom it joins: the hostfile and the identity resolved from it.

Rules:
1. A hostfile has one entry ``host[:port]`` per line; blank lines and ``#`` comments are not
   entries. A node's id is the offset of its own entry, unless ``--node-id`` overrides it.
2. A node's own entry is the one with its port on its advertised host (names resolved); every
   other entry is a seed to join through.
3. A node with no entry starts only with ``--induct``, and then asks the cluster for its id.
   Every problem is a ``SettingsError`` naming the file (and line).
4. The advertised host, the address peers are told, is ``networking.advertise``, else the bound
   ``networking.host``. A wildcard (``0.0.0.0``, ``::``) is no address a peer can use: a node
   bound to one needs ``advertise``, and a wildcard is never advertised. (Placement by an
   mpirun/srun rank, which can set both, is ``ranks``.)
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket

from cluster.ground.errors import SettingsError
from cluster.ground.parse import ParseError, parse_port, shown
from cluster.ground.settings import NetworkingSettings, Settings

__all__ = [
    "advertised_host",
    "is_wildcard",
    "parse_hostfile",
    "parse_hostfile_text",
    "resolve_identity",
]

MAX_HOSTFILE_BYTES = 1 << 20


def parse_hostfile(path: str, default_port: int) -> list[tuple[str, int]]:
    """Entries ``host[:port]``, one per line; blank lines and ``#`` comments are not entries."""
    try:
        with open(os.path.expanduser(path), "rb") as f:  # pathlib raises for ~user of no user
            data = f.read(MAX_HOSTFILE_BYTES + 1)
    except OSError as exc:
        raise SettingsError(f"hostfile {path}: cannot read: {exc.strerror or exc}") from None
    return parse_hostfile_text(data, path, default_port)


def parse_hostfile_text(data: bytes, path: str, default_port: int) -> list[tuple[str, int]]:
    """``parse_hostfile`` of a hostfile's bytes; errors name ``path``."""
    entries = []
    if len(data) > MAX_HOSTFILE_BYTES:
        raise SettingsError(f"hostfile {path}: larger than {MAX_HOSTFILE_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SettingsError(f"hostfile {path}: not UTF-8 text") from None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        host, sep, port = line.rpartition(":")
        if not sep:
            host, port = line, str(default_port)
        try:
            number = parse_port(port, low=1)
        except ParseError:
            number = 0
        if not number or not host or "\x00" in host:
            raise SettingsError(f"hostfile {path}:{lineno}: expected host[:port], got {raw!r}")
        entries.append((host, number))
    return entries


def _same_host(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return socket.gethostbyname(a) == socket.gethostbyname(b)
    except (OSError, UnicodeError):  # a label over 63 characters fails in the idna codec
        return False


def is_wildcard(host: str) -> bool:
    """Whether binding ``host`` binds every address (``""``, ``0.0.0.0``, ``::``)."""
    try:
        return not host or ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


_DOTTED = re.compile(r"[0-9.]+\Z")  # all digits and dots: meant as an IPv4 address


def advertised_host(net: NetworkingSettings) -> str:
    """The address peers are told (rule 4); SettingsError for a wildcard with nothing else."""
    if not net.advertise:
        if is_wildcard(net.host):
            raise SettingsError(
                f"networking.host {net.host!r} binds every address, which peers cannot "
                "use: set networking.advertise (--advertise ADDR) to the address they reach "
                "this node at"
            )
        return net.host
    literal = net.advertise
    try:
        if ":" in literal:
            ipaddress.IPv6Address(literal)
        elif _DOTTED.match(literal):
            ipaddress.IPv4Address(literal)
    except ValueError:
        raise SettingsError(
            f"networking.advertise: {shown(literal)} is not a valid IP address"
        ) from None
    if is_wildcard(literal):
        raise SettingsError(
            f"networking.advertise: {literal} is a wildcard, no address a peer can reach"
        )
    return literal


def resolve_identity(settings: Settings, induct: bool) -> tuple[int | None, list[tuple[str, int]]]:
    """This node's id (None: ask the cluster) and the seeds to join, from the hostfile."""
    net = settings.networking
    if not net.hostfile:
        return (max(net.node_id, 0), [])
    entries = parse_hostfile(net.hostfile, net.port)
    me = net.advertise or net.host
    own = [i for i, (h, p) in enumerate(entries) if p == net.port and _same_host(h, me)]
    seeds = [e for i, e in enumerate(entries) if i not in own]
    if net.node_id >= 0:
        return net.node_id, seeds
    if own:
        return own[0], seeds
    if induct:
        return None, seeds
    raise SettingsError(
        f"hostfile {net.hostfile} has no entry for {me}:{net.port}; add one, or start "
        "with --induct to join and take the next free id"
    )
