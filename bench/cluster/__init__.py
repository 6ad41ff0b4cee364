"""Benchmark of local clusters: time until N node processes converge, and memory per node."""
