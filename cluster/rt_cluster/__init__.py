"""``rt_cluster``'s cluster commands, on top of ``cluster.local``.

``cli.py`` holds the parser, ``main`` and the exit codes; ``commands.py`` one handler per
command; ``output.py`` the printed lines, tables, progress and the status summary. The
commands that run scenarios, and the entry point of the whole command (the ``rt_cluster``
console script), are the floor above's: ``scenarios.command``.
"""
