"""Target ``wire``: one UDP packet through ``swim.wire.decode_untrusted``.

Only ``BadMessage`` may come out (``swim.wire`` rule 1); a packet it accepts holds messages
that encode again (``encode_part``, ``encode_compound``) into a packet that decodes to the same
messages.
"""

from __future__ import annotations

from swim import wire

from ..mutators import after, msgpack_mutator

custom_mutator = msgpack_mutator("wire", after(2))  # a version byte, a type byte


def test_one_input(data: bytes) -> bool:
    try:
        messages = wire.decode_untrusted(data)
    except wire.BadMessage:
        return False
    assert 1 <= len(messages) <= wire.MAX_PARTS
    again = wire.encode_compound([wire.encode_part(m) for m in messages])
    assert wire.decode_untrusted(again) == messages, (messages, again)
    return True
