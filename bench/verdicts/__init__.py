"""Verdicts you can trust (issue 13): pass rates of the scenario library on held-out seeds in
the simulation and on real processes beside a loaded cluster (``passrates``), and the
simulation calibrated against real processes (``calibrate``). ``python -m bench.verdicts``.
"""
