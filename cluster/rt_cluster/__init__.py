"""``rt_cluster``: the command on top of ``cluster.local`` and ``scenarios``.

``cli.py`` holds the parser, ``main`` and the exit codes (the console script);
``commands.py`` one handler per command; ``output.py`` the printed lines, tables, progress
and the status summary.
"""
