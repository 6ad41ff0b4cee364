"""Reporting: a run's ``report.html`` (``report``, with its charts, per-observer timeline and
folding of long runs), the many-runs page (``runs_page``), the terminal summary (``summary``)
and the aggregate of many runs (``aggregate``).
"""
