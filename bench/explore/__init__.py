"""Explore benchmark: search speed, planted bugs, clean runs (``python -m bench.explore``)."""
