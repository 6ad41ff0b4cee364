"""The built-in modules, each a ``Module`` on the runtime's module contract (``cluster.runtime``).

    rt_admin      the admin pool 1.0: the runtime itself
    rt_bdev       block devices (ram, file, noop)
    rt_safe_bdev  striped arrays with parity over rt_bdev devices
    rt_cte_core   blob placement over block devices

Nothing imports these by name but the registry (``cluster.runtime.registry.BUILTIN``), through
their dotted paths, so the runtime never points back at its modules.
"""
