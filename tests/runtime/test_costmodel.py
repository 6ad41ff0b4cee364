"""The task-cost model learns coefficients and MAPE from measured costs."""

from __future__ import annotations

import pytest

from cluster.runtime.costmodel import CostModel


def test_coefficients_start_at_one_and_untrained() -> None:
    m = CostModel(("read", "write")).method("read")
    assert (m.coefficient, m.wall_coefficient, m.mape, m.wall_mape) == (1.0, 1.0, 0.0, 0.0)
    assert m.predict_cpu(3) == 4.0


def test_learning_follows_the_reference_update_rule() -> None:
    model = CostModel(("read",), learning_rate=0.2)
    model.observe("read", size=4, cpu_us=50.0, wall_us=100.0)
    m = model.method("read")
    err = 1.0 * 5 - 50.0
    assert m.coefficient == pytest.approx(1.0 - 0.2 * err / 5)
    assert m.mape == pytest.approx(0.2 * 100 * abs(err) / 50.0)  # percent
    assert m.wall_coefficient == pytest.approx(1.0 - 0.2 * (5 - 100.0) / 5)


def test_converges_on_a_linear_cost() -> None:
    model = CostModel(("write",), learning_rate=0.2)
    for i in range(400):
        size = (i % 7) + 1
        model.observe("write", size, cpu_us=10.0 * (size + 1), wall_us=20.0 * (size + 1))
    m = model.method("write")
    assert m.coefficient == pytest.approx(10.0, rel=1e-3)
    assert m.wall_coefficient == pytest.approx(20.0, rel=1e-3)
    assert m.mape < 1.0  # percent


def test_zero_real_cost_leaves_mape_alone() -> None:
    model = CostModel(("noop",))
    model.observe("noop", 0, 0.0, 0.0)
    assert model.method("noop").mape == 0.0


def test_unknown_method_is_added_with_the_next_id() -> None:
    model = CostModel(("a",))
    assert model.method("b").id == 1
    assert [m["name"] for m in model.to_json()] == ["a", "b"]


def test_learn_alike_teaches_what_observe_teaches_with_equal_cpu_and_wall() -> None:
    """The inline path's one-pass lesson (``MethodModel.learn_alike``) is ``observe`` with
    ``cpu_us == wall_us``, figure for figure, over a run of tasks (zero costs included)."""
    a, b = CostModel(("read",), 0.2), CostModel(("read",), 0.2)
    for size, real in [(4.0, 3.5), (4.0, 0.0), (1024.0, 900.0), (0.0, 2.0), (4.0, 4.2)]:
        a.observe("read", size, real, real)
        b.method("read").learn_alike(size, real, b.learning_rate)
    assert a.to_json() == b.to_json()
