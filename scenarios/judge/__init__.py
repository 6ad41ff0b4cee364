"""Judging a run: what a run left (``trace``: events, actions and HTTP answers on one clock,
each observer's view rebuilt), the accusations it holds (``suspicions``), the verdicts of a
scenario's expectations (``analysis``), the checkers of chaos tests (``checks``), the
properties explore checks (``properties``) and the durability of an array (``durability``).
Pure: nothing here touches a process, a socket or a clock.
"""
