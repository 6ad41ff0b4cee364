"""Who is where: the hostfile (one ``host[:port]`` entry per node, a node's id its offset) and
this machine (its names and interface addresses). The node reads them to find itself and its
seeds; the launcher reads them to manage a cluster it did not start. Nothing of the node here.

    parse_hostfile, resolve_identity    the entries, and the identity a node takes from them
    advertised_host, is_wildcard        the address a node tells its peers
    Machine, interface_addresses        this machine's names and addresses
"""

from .hostfile import (
    advertised_host,
    is_wildcard,
    parse_hostfile,
    parse_hostfile_text,
    resolve_identity,
)
from .machine import Machine, interface_addresses

__all__ = [
    "Machine",
    "advertised_host",
    "interface_addresses",
    "is_wildcard",
    "parse_hostfile",
    "parse_hostfile_text",
    "resolve_identity",
]
