"""Storage: block devices, erasure coding, arrays and extents. It knows nothing of modules,
pools or workers: the modules (``cluster.modules``) wire it to the runtime.

    Allocator, Extent, NoSpace       first-fit extents of a linear byte space
    Store, open_store, ...           where a device's bytes live (ram, file, noop)
    BlockStore                       the block interface device-like containers offer
    Codec, Buffer                    XOR / Reed-Solomon over GF(2^8), the bytes-like it codes
    StripeArray, ArrayMember, ...    the data path of an erasure-coded array, its roster
    IoMeter, IoSnapshot              measured latency and bandwidth
    Footprint                        the runs of a device ever written: its present use
    Target, BlobLoc, score, ...      blob placement on targets
    parse_size, format_size          sizes such as 16M, 512MB, 1GiB

Storage imports only storage and the ground modules (``cluster.ground.errors``,
``cluster.ground.ids``).
"""

from .alloc import Allocator, Extent, NoSpace
from .array import StripeArray, Unreadable
from .backends import (
    FileStore,
    NoopStore,
    RamStore,
    Store,
    export_chunks,
    import_chunks,
    open_store,
)
from .blockdev import BlockStore
from .erasure import Buffer, Codec
from .footprint import Footprint
from .iometer import IoMeter, IoSnapshot
from .placement import BlobLoc, Target, plan_moves, score
from .roster import ArrayMember, DeviceState, RecoveryProgress
from .sizes import format_size, parse_size
from .slots import SlotLocks, slot_runs

__all__ = [
    "Allocator",
    "ArrayMember",
    "BlobLoc",
    "BlockStore",
    "Buffer",
    "Codec",
    "DeviceState",
    "Extent",
    "FileStore",
    "Footprint",
    "IoMeter",
    "IoSnapshot",
    "NoSpace",
    "NoopStore",
    "RamStore",
    "RecoveryProgress",
    "SlotLocks",
    "Store",
    "StripeArray",
    "Target",
    "Unreadable",
    "export_chunks",
    "format_size",
    "import_chunks",
    "open_store",
    "parse_size",
    "plan_moves",
    "score",
    "slot_runs",
]
