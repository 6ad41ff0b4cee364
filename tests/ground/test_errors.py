"""The error tree: statuses and messages that never echo a huge input back in full."""

from __future__ import annotations

import pytest

from cluster.ground.errors import MAX_MESSAGE, BadRequest, Conflict, PoolGone
from cluster.ground.ids import PoolId


def test_a_message_about_a_huge_input_is_cut_and_says_how_long_it_was() -> None:
    exc = BadRequest(f"bad pool id '{'9' * 5000}'")
    assert len(exc.message) < MAX_MESSAGE + 40
    assert exc.message.endswith("(5014 characters)")
    assert exc.body() == {"error": exc.message}


def test_a_huge_pool_id_is_refused_with_a_short_message() -> None:
    with pytest.raises(BadRequest) as info:
        PoolId.parse("9" * 5000)
    assert len(info.value.message) <= MAX_MESSAGE + 40


def test_a_short_message_is_kept_as_it_is() -> None:
    assert BadRequest("bad pool id 'x'").message == "bad pool id 'x'"


def test_a_destroyed_pool_is_a_conflict_naming_the_pool() -> None:
    exc = PoolGone("801.0")
    assert isinstance(exc, Conflict)
    assert exc.status == 409
    assert exc.pool == "801.0"
    assert "801.0" in exc.message
