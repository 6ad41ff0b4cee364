"""rt_cte_core: blobs grouped in tags, placed on storage targets by score.

    CteCoreContainer   one core: its targets, its blobs, its monitor queries   (container)
    CteCoreModule      the create form, validation and the target routes       (module)

Rules:
1. A target is a block-device-like pool (``BlockStore``): a fresh rt_bdev created for it
   (pool id suggested from 900) or an attached existing pool such as a safe_bdev array.
2. A blob goes to the best-scoring target that can hold it; puts, gets and moves are tasks of
   this pool whose device I/O are subtasks of the targets' pools.
3. Unregistering a target never loses data: its blobs move to the other targets first, or the
   request is refused (409) when they cannot hold them, and the target stays registered.
4. One periodic task (``rescore``) refreshes target scores; after destroy it keeps retrying
   for a bounded time, then goes (``cluster.runtime.workers``, rule 3).
5. A destroyed core frees its blobs' extents on every target and destroys the devices it made
   for its targets unless something else holds space there.
"""

from .container import CteCoreContainer
from .module import CteCoreModule

__all__ = ["CteCoreContainer", "CteCoreModule"]
