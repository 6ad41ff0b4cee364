"""MAPE is percent everywhere, and an untrained method says so instead of showing 0 %."""

from __future__ import annotations

import pytest

from cluster.runtime.costmodel import CostModel


def test_an_untrained_method_says_it_is_untrained() -> None:
    (row,) = CostModel(("read",)).to_json()
    assert row == {
        "id": 0, "name": "read", "coefficient": 1.0, "mape": 0.0, "wall_coefficient": 1.0,
        "wall_mape": 0.0, "samples": 0, "mape_samples": 0, "wall_mape_samples": 0,
        "trained": False,
    }  # fmt: skip


def test_mape_is_percent_of_the_real_cost() -> None:
    model = CostModel(("read",), learning_rate=1.0)  # lr 1: the MAPE is the last error
    model.observe("read", size=0, cpu_us=4.0, wall_us=2.0)  # predicted 1 µs for both
    (row,) = model.to_json()
    assert row["mape"] == pytest.approx(75.0)  # |1 - 4| / 4 = 75 %
    assert row["wall_mape"] == pytest.approx(50.0)  # |1 - 2| / 2 = 50 %
    assert (row["samples"], row["trained"]) == (1, True)


def test_a_trained_method_can_have_a_zero_mape() -> None:
    model = CostModel(("read",), learning_rate=0.5)
    model.observe("read", size=0, cpu_us=1.0, wall_us=1.0)  # predicted exactly
    (row,) = model.to_json()
    assert (row["mape"], row["trained"]) == (0.0, True)


def test_a_mape_no_positive_cost_fed_says_so() -> None:
    """A method that only waits for its subtasks has no CPU time of its own: its CPU MAPE
    stays 0 because nothing fed it, and ``mape_samples`` 0 tells that from a perfect guess."""
    model = CostModel(("scrub",))
    for _ in range(3):
        model.observe("scrub", size=4, cpu_us=0.0, wall_us=900.0)
    (row,) = model.to_json()
    assert (row["samples"], row["mape_samples"], row["wall_mape_samples"]) == (3, 0, 3)
    assert row["mape"] == 0.0
    assert row["wall_mape"] > 0
