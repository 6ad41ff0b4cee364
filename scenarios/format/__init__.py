"""The scenario file format: what a file may say and the frozen records it becomes, checked
before anything runs (docs/rt_cluster.md).

``records`` (the records, plain data), ``spec`` (a file read and checked: ``load_scenario``,
``parse_scenario``), ``steps`` (the ``steps:`` and ``expect:`` lists), ``values`` (one checker
of values: ids, numbers, node sets), ``bounds`` (the bounds derived from the protocol's timing),
``storage`` (the ``storage:`` section). Nothing here plays or judges a run.
"""
