"""Per-pool, per-method task-cost model, learned online from measured task costs.

CPU prediction ``a·(x+1)`` and wall prediction ``b·(y+1)`` from a task's size ``x`` (both sizes
are the task's size here). Both coefficients start at 1.0. After each task, with
``err = predicted - real``: ``coef -= lr·err/(x+1)``; where the real cost is positive,
``mape = (1-lr)·mape + lr·100·|err|/real``.

Units: costs are microseconds; sizes whatever unit the module chooses (KiB for I/O); ``mape``
and ``wall_mape`` are PERCENT everywhere (here, in the API, on the pages: 12.5 means 12.5 %).
A method is trained once it has learned from a task (``samples`` > 0); before that its MAPE
is no figure at all (``to_json`` says ``trained: false``), not a perfect 0 %. Likewise a MAPE
that no task with a positive real cost fed (``mape_samples`` or ``wall_mape_samples`` 0: a
method whose own CPU time is nil because it only waits for its subtasks) is no figure.
A MAPE can be far above 100 % when real costs are tiny beside the first predictions (the
coefficients start at 1 µs per unit and the average forgets slowly).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CostModel", "MethodModel"]


@dataclass(slots=True)
class MethodModel:
    id: int
    name: str
    coefficient: float = 1.0  # µs of CPU per (size + 1)
    mape: float = 0.0  # percent
    wall_coefficient: float = 1.0  # µs of wall time per (size + 1)
    wall_mape: float = 0.0  # percent
    samples: int = 0  # tasks learned from
    mape_samples: int = 0  # of them, tasks with a positive CPU cost (the ones the MAPE saw)
    wall_mape_samples: int = 0  # tasks with a positive wall time
    inline: int = 0  # tasks its pool ran inline (``WorkerPool.count_inline``), learned or not

    def predict_cpu(self, size: float) -> float:
        return self.coefficient * (size + 1)

    def learn_alike(self, size: float, real: float, lr: float) -> None:
        """Learn from one task whose CPU and wall time are both ``real`` µs (work that never
        waited): what ``CostModel.observe`` teaches with ``cpu_us == wall_us``, in one pass
        (an inline I/O of a few µs must not pay more to be counted than to be done)."""
        x = size + 1
        err = self.coefficient * x - real
        wall_err = self.wall_coefficient * x - real
        self.coefficient -= lr * err / x
        self.wall_coefficient -= lr * wall_err / x
        self.samples += 1
        if real > 0:
            self.mape = (1 - lr) * self.mape + lr * 100.0 * abs(err) / real
            self.wall_mape = (1 - lr) * self.wall_mape + lr * 100.0 * abs(wall_err) / real
            self.mape_samples += 1
            self.wall_mape_samples += 1

    def predict_wall(self, size: float) -> float:
        return self.wall_coefficient * (size + 1)

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "name": self.name,
            "coefficient": self.coefficient,
            "mape": self.mape,
            "wall_coefficient": self.wall_coefficient,
            "wall_mape": self.wall_mape,
            "samples": self.samples,
            "mape_samples": self.mape_samples,
            "wall_mape_samples": self.wall_mape_samples,
            "trained": self.samples > 0,
        }


def _learn(coef: float, mape: float, lr: float, size: float, real: float) -> tuple[float, float]:
    err = coef * (size + 1) - real
    coef -= lr * err / (size + 1)
    if real > 0:
        mape = (1 - lr) * mape + lr * 100.0 * abs(err) / real
    return coef, mape


class CostModel:
    """The learned models of one pool's methods."""

    def __init__(self, methods: tuple[str, ...], learning_rate: float = 0.2) -> None:
        self.learning_rate = learning_rate
        self.methods = {name: MethodModel(i, name) for i, name in enumerate(methods)}

    def method(self, name: str) -> MethodModel:
        model = self.methods.get(name)
        if model is None:
            model = self.methods[name] = MethodModel(len(self.methods), name)
        return model

    def observe(self, name: str, size: float, cpu_us: float, wall_us: float) -> None:
        """Learn from one finished task of method ``name``."""
        m = self.method(name)
        lr = self.learning_rate
        m.coefficient, m.mape = _learn(m.coefficient, m.mape, lr, size, cpu_us)
        m.wall_coefficient, m.wall_mape = _learn(m.wall_coefficient, m.wall_mape, lr, size, wall_us)
        m.samples += 1
        m.mape_samples += cpu_us > 0
        m.wall_mape_samples += wall_us > 0

    def to_json(self) -> list[dict[str, object]]:
        return [m.to_json() for m in sorted(self.methods.values(), key=lambda m: m.id)]
