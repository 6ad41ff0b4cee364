"""rt_safe_bdev: an erasure-coded array over rt_bdev pools (XOR for one parity member,
Reed-Solomon for more), with member management and recovery.

    SafeBdevContainer   one array: composition, block I/O, recover and scrub   (container)
    add/remove/replace  member changes on a running array, on a ``MemberHost``   (member_ops)
    SafeBdevModule      the create form, its validation, the member routes       (module)

The container hands member changes to ``member_ops``, which sees it as a ``MemberHost``
Protocol and imports nothing of it, so the two modules do not import each other.

Rules:
1. The data path lives in ``cluster.storage`` (``StripeArray``); this package wires it to the
   module context: logical reads and writes are tasks of the array's pool whose member I/O are
   subtasks of the members' pools; each rebuilt slot is a ``recover`` task.
2. Members are ordinary rt_bdev pools; ``members`` of the create form are the data members and
   ``max_failures`` parity members are created next to them (``<pool>_p<j>``, ids from 900)
   unless ``parity_members`` names existing ones.
3. Two periodic tasks per array: ``recover`` (runs a pending rebuild) and ``scrub`` (checks a
   few written slots, repairs parity of dirty ones). After destroy they keep retrying for a
   bounded time, then go (``cluster.runtime.workers``, rule 3).
4. An action that would leave more members out of service than the parity level is refused
   (409); nothing is changed by a refused or invalid request. Member changes run one at a
   time per array; one sent while another runs is refused (409).
5. A destroyed array frees its regions on its members and destroys the devices it made
   (``<pool>_p<j>``, members and spares made from a capacity, on this node or on a peer)
   unless something else holds space there.
"""

from .container import SafeBdevContainer
from .module import SafeBdevModule

__all__ = ["SafeBdevContainer", "SafeBdevModule"]
