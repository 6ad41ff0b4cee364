"""Benchmarks of the whole-node simulator (``python -m bench.wholesim``)."""
