"""HTTP API benchmark: the dashboard against a bare quart-trio app on the same hypercorn setup.

Run ``python -m bench.api``; see ``bench/api/__main__.py``. Figures only, never pass/fail.
"""
