"""Membership benchmark: rtsim swim against Serf on loopback, and the simulated network."""
