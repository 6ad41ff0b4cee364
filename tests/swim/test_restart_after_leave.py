"""A member that left and comes back (new boot, incarnation 0) is alive again everywhere at once.

Peers hold it as ``left`` at incarnation 0, which beats ``alive`` at the same incarnation; only
the new boot nonce tells them it is a new instance. Before that rule, the news spread only by
its refutation's gossip (a budget of 2 sends at N=5) and a periodic push/pull: seconds to never.
"""

from __future__ import annotations

import pytest

from swim import SimNetwork


@pytest.mark.parametrize("seed", range(5))
def test_a_restarted_member_is_alive_again_at_every_peer(seed: int) -> None:
    net = SimNetwork(5, seed=seed)
    net.run_for(3)
    for subject in (0, 1, 2):
        net.leave(subject)
        net.run_for(2)
        assert all(net.state(i, subject) == "left" for i in net.ids() if i != subject)
        net.restart(subject)
        others = [i for i in net.ids() if i != subject]
        assert net.until(
            lambda s=subject, o=others: all(net.state(i, s) == "alive" for i in o), 2.0
        )
