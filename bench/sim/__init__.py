"""The simulated network's speed and size: ``python -m bench.sim`` (see ``run``)."""
