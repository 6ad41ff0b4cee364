"""memberlist's wire protocol at the edge of a SWIM member: rtsim nodes in a Serf cluster.

- ``codec``: the UDP messages, compound, CRC, compression and encryption (``decode_packet``).
- ``lzw``: Go's LZW, which memberlist compresses with.
- ``stream``: push/pull, the TCP ping and error replies on TCP.
- ``edge``: names to the machine's ids and back; boots and acks (memberlist has neither).
- ``door``: the driver's side: ``open_swim(..., wire_format=Memberlist(name))``.

docs/membership.md ("Speaking memberlist") says where memberlist's rules differ from ours.
"""

from .door import Memberlist, MemberlistDoor
from .edge import decode_tags, encode_tags

__all__ = ["Memberlist", "MemberlistDoor", "decode_tags", "encode_tags"]
