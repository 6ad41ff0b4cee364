"""Target ``rpc_frame``: one node RPC frame body through ``cluster.rpc.frames``.

- ``frame_limit`` of its first bytes raises nothing and answers one of the kinds' sizes;
- ``decode_frame`` raises only ``BadFrame`` (rule 2); a request it accepts (other than the
  ``Swim`` frame, carried whole) encodes again into a frame whose request encodes to the same
  bytes, and its frame was no larger than its kind's ``MAX_BYTES`` (rule 4);
- as a reply, ``unpack_untrusted`` then ``decode_reply`` raise only ``BadFrame``.
"""

from __future__ import annotations

import msgpack

from cluster.rpc import frames
from cluster.rpc.frames import BadFrame

from ..mutators import msgpack_mutator

custom_mutator = msgpack_mutator("rpc_frame")

SIZES = {frames.SMALL_FRAME, frames.MAX_FRAME, 1024 * 1024, frames.Block.MAX_BYTES}


def test_one_input(data: bytes) -> bool:
    """True when ``data`` is a request or a reply."""
    assert frames.frame_limit(data[: frames.PEEK_BYTES]) in SIZES
    accepted = False
    try:
        decoded = frames.decode_frame(data)
    except BadFrame:
        pass
    else:
        accepted = True
        request = decoded.request
        assert len(data) <= request.MAX_BYTES
        if not isinstance(request, frames.Swim):
            again = msgpack.packb(frames.encode(request), use_bin_type=True)
            twice = msgpack.packb(
                frames.encode(frames.decode_frame(again).request), use_bin_type=True
            )
            assert twice == again, (request, again)  # bytes compared: a NaN is not == itself
    try:
        frames.decode_reply(frames.unpack_untrusted(data)[0])
    except BadFrame:
        return accepted
    return True
