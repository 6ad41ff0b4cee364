"""Idle cost: CPU and memory per node at rest, rtsim's nodes beside Serf's agents."""
