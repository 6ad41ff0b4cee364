"""``rt_cluster``: the command on top of ``cluster.local`` and ``scenarios``.

    cli.py        the parser, ``main`` and exit codes (the console script)
    commands.py   one handler per command
    output.py     printed lines, tables, progress and the status summary
"""
