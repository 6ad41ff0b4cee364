"""The built-in modules, each a ``Module`` on the runtime's module contract (``cluster.runtime``).

    rt_admin      the admin pool 1.0: the runtime itself
    rt_bdev       block devices (ram, file, noop)
    rt_safe_bdev  striped arrays with parity over rt_bdev devices (a package)
    rt_cte_core   blob placement over block devices (a package)
    members       finding block devices, and picking or creating an array member's device
    extents       the block-store half every extent device shares (allocation, free space,
                  measured I/O, the one range check of a read or write)

Each is a ``cluster.api.HttpModule``: the runtime's module contract (``cluster.runtime.Module``)
with its HTTP half (create form, routes, their API description) from ``cluster.api``.
Modules see their node through a ``ModuleContext`` (``cluster.runtime``), never the Runtime
class. Nothing imports these by name but the registry (``cluster.runtime.registry.BUILTIN``),
through their dotted paths, so the runtime never points back at its modules.
"""
