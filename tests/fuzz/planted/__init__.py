"""Fuzz targets with a defect planted, for the runner's own tests: each fails on every input."""
