"""Where an array's members live: rt_bdev devices of this node, or of a peer (``remote``).

Rules:
1. A member is named ``name`` (this node's rt_bdev pool) or ``name@node`` (node ``node``'s,
   reached over the node RPC: a ``RemoteStore``). A member change with a peer's ``node_id``
   finds that node's device by name, or, when it has none of that name and the request gives
   a capacity, makes it there (``find_or_make``): every field is checked first, with the
   rules of a device made here (``members.check_new_device``), all bad fields at once. A
   device made on a peer is composed with ``made_for`` (this array's writer name) and a pool
   id neither that node nor a member of the array has (rule 2).
2. The members of one array have distinct pool ids, wherever they live: a member is known by
   its pool id in the API (``member_pool_id``) and in the roster.
3. Member health follows membership: a member on a node this node's SWIM holds ``dead`` or
   ``left``, or that left the host table, is ``faulty`` and away. When its node is alive
   again and still holds the very device (``remote`` rule 3: not made again by a restart),
   it comes back ``recovering`` and only the slots it missed (``storage.array`` rule 5) are
   rebuilt onto it. A member whose device was made again stays faulty: replace it. The
   array's I/O marks a member that fails or times out ``faulty`` on its own
   (``storage.array`` rule 2); it is away too once its node is declared down, or at once when
   an I/O failed: for want of an answer (a peer cut off or silent for a moment, whose node
   SWIM may never declare dead, or a device slower than the forward bound) or with the
   device's own refusal (a disk that fails its I/O or is full). It comes back the same way,
   once the device answers a read again within the bound (``RemoteStore.refence``), and an
   away member keeps the time it first went away until it is seen ``active`` again, so a
   device that keeps failing is replaced (rule 4) however often it is tried.
4. With ``auto_replace_after_s``, a member away that long is replaced onto a spare made on a
   live node (a peer holding no member of the array first, then the replaced member's own
   node, then this node, then any peer), and recovery runs across the network. A spare that
   no replacement took is given back at once (rule 5).
5. What the array made on peers it gives back (``give_back``), when a member change that
   made it is refused and when the array is destroyed: once its regions there are freed,
   the peer is asked to destroy the device (``remote`` rule 6), which it does only for this
   writer and with nothing allocated on it. A peer that is down, or does not answer within
   the forward bound, keeps the device: the array's destroy goes on, and says so.
"""

from __future__ import annotations

import logging

import trio

from cluster.ground.errors import ApiError, Conflict, NotFound, PeerUnavailable, ValidationFailed
from cluster.ground.ids import PoolId
from cluster.runtime import FORWARD_TIMEOUT, BlockCall, ModuleContext, name_error
from cluster.storage import ArrayMember, BlockStore, DeviceState, StripeArray

from ..members import MEMBER_BASE, MemberRequest, check_new_device, find_block_store
from ..remote import PROBE_BYTES, RemoteStore, split_member
from ..rt_bdev import BdevContainer

__all__ = ["DOWN_STATES", "MemberDevices"]

log = logging.getLogger(__name__)
DOWN_STATES = ("dead", "left", None)  # how membership holds a node whose members are lost
RETRY_S = 1.0  # seconds between two tries to reattach an away member whose node is alive


class MemberDevices:
    """The devices one array's members are on (rule 1), and their health (rule 3)."""

    def __init__(self, runtime: ModuleContext, writer: str, name: str = "") -> None:
        self.runtime, self.name = runtime, name  # the array's pool name, for the log
        self.writer = writer  # the array's name for its write fences (``remote`` rule 2)
        self.remote: dict[PoolId, RemoteStore] = {}
        self.away: dict[int, tuple[PoolId, float]] = {}  # position -> member, since (rule 3)
        self.resync: set[int] = set()  # positions back from away: only what they missed
        self.tried: dict[int, float] = {}  # position -> when its reattach was last tried
        self.since: dict[int, float] = {}  # position -> when it first went away (rule 3)
        self.made: dict[PoolId, int] = {}  # devices made on peers for this array -> their node

    def is_remote(self, node_id: int | None) -> bool:
        return node_id is not None and node_id != self.runtime.node_id

    async def named(self, text: str) -> BlockStore:
        """The device ``text`` names: ``name`` here, ``name@node`` on a peer."""
        name, node_id = split_member(text)
        if self.is_remote(node_id):
            assert node_id is not None
            return await self.on_node(node_id, name)
        found = self.runtime.pools.by_name(name, "rt_bdev")
        if not isinstance(found, BdevContainer):
            raise NotFound(f"no rt_bdev pool named '{name}'")
        return found

    async def on_node(self, node_id: int, name: str) -> RemoteStore:
        """Node ``node_id``'s rt_bdev pool ``name`` (rule 1)."""
        if self.runtime.node_state(node_id) is None:
            raise NotFound(f"node {node_id} is not in the host table")
        store = await RemoteStore.find(self.runtime, node_id, name, self.writer)
        self.remote[store.pool_id] = store
        return store

    async def find_or_make(
        self, node_id: int, req: MemberRequest, needed: int, array: StripeArray | None
    ) -> RemoteStore:
        """Rule 1: node ``node_id``'s device ``req.member_name`` with ``needed`` free bytes,
        found there by name or made there from ``req.capacity``; not a member yet (rule 2)."""
        name, bdev_type = req.member_name, req.bdev_type or "file"
        errors: dict[str, str] = {}
        if self.runtime.node_state(node_id) is None:
            errors["node_id"] = f"node {node_id} is not in the host table"
        if (why := name_error(name)) is not None:
            errors["member_name"] = why
        if req.capacity:
            check_new_device(req, bdev_type, needed, errors)
        if errors:
            raise ValidationFailed(errors)
        try:
            store, made = await self.on_node(node_id, name), False
        except NotFound:
            if not req.capacity:
                raise ValidationFailed(
                    {
                        "member_name": f"no pool named '{name}' exists on node {node_id}; give "
                        "a capacity to create it there"
                    }
                ) from None
            store, made = await self._make(node_id, name, req.capacity, bdev_type, array), True
        try:
            if store.largest_free < needed:
                raise Conflict(
                    f"'{name}' on node {node_id} has {store.largest_free} bytes free; the array "
                    f"needs {needed}"
                )
            self.check_distinct(array, [], store)
        except ApiError:
            if made:
                await self.give_back(store.pool_id)
            raise
        return store

    async def _make(
        self, node_id: int, name: str, capacity: str, bdev_type: str, array: StripeArray | None
    ) -> RemoteStore:
        """Compose device ``name`` on node ``node_id`` for this array (rules 1 and 5)."""
        taken = await self.runtime.peer_pool_ids(node_id) | set(self.remote) | set(self.made)
        if array is not None:
            taken |= {array.member(p).pool_id for p in array.positions()}
        pool_id = PoolId(MEMBER_BASE, 0)
        while pool_id in taken:
            pool_id = PoolId(pool_id.major + 1, 0)
        entry = {"mod_name": "rt_bdev", "pool_name": name, "pool_id": str(pool_id)}
        entry |= {"bdev_type": bdev_type, "capacity": capacity, "made_for": self.writer}
        await self.runtime.peer_compose(node_id, entry)
        self.made[pool_id] = node_id
        return await self.on_node(node_id, str(pool_id))

    async def give_back(self, pool_id: PoolId, freed: bool = True) -> None:
        """Rule 5: ask the peer device ``pool_id`` was made on for this array to destroy it
        (``freed``: the array's regions there are freed); logged when it stays there."""
        node_id = self.made.get(pool_id)
        if node_id is None:
            return
        state = self.runtime.node_state(node_id)
        why = None if freed else "a region of the array there could not be freed"
        if why is None and state in DOWN_STATES:
            why = f"node {node_id} is {state or 'out of the host table'}"
        if why is None:
            call = BlockCall(str(pool_id), "destroy", writer=self.writer)
            try:
                await self.runtime.peer_block(node_id, call)
            except NotFound:
                pass  # gone already: its node restarted, or someone destroyed it
            except ApiError as exc:
                why = exc.message
        if why is not None:
            log.warning(
                "array %s: device %s stays on node %d: %s", self.name, pool_id, node_id, why
            )
            return
        del self.made[pool_id]
        self.remote.pop(pool_id, None)

    def member(self, store: BlockStore, base: int) -> ArrayMember:
        """The member record of the array's region at ``base`` on ``store``."""
        if isinstance(store, RemoteStore):
            return ArrayMember(store.pool_name, store.pool_id, base, node_id=store.node_id)
        assert isinstance(store, BdevContainer)
        return ArrayMember(store.info.pool_name, store.info.pool_id, base)

    @staticmethod
    def pool_id(store: BlockStore) -> PoolId:
        if isinstance(store, RemoteStore):
            return store.pool_id
        assert isinstance(store, BdevContainer)
        return store.info.pool_id

    def check_distinct(
        self, array: StripeArray | None, taken: list[PoolId], store: BlockStore
    ) -> None:
        """Rule 2: Conflict when ``store``'s pool id is a member's already."""
        pool_id = self.pool_id(store)
        if pool_id in taken or (array is not None and array.position_of(pool_id) is not None):
            raise Conflict(
                f"pool id {pool_id} is a member of this array already (on another node?): the "
                "members of one array need distinct pool ids"
            )

    def open(self, pool_id: PoolId) -> BlockStore | None:
        """The device of member ``pool_id`` (``StripeArray``'s ``open_member``)."""
        return self.remote.get(pool_id) or find_block_store(self.runtime, pool_id)

    async def follow_membership(self, array: StripeArray, now: float) -> list[str]:
        """Rule 3, once a recover tick: members whose node is down turn ``faulty`` (and are
        remembered as away); an away member whose node is alive again and still holds the
        very device comes back ``recovering``, to be resynchronised. What changed, in words."""
        said: list[str] = []
        for p in array.positions():
            m = array.member(p)
            if m.state == DeviceState.REMOVED:
                continue
            if m.state == DeviceState.ACTIVE:
                self.since.pop(p, None)
            remote = self.is_remote(m.node_id)
            state = self.runtime.node_state(m.node_id) if m.node_id is not None else "alive"
            if remote and state in DOWN_STATES:
                if m.state != DeviceState.FAULTY:
                    array.set_state(p, DeviceState.FAULTY)
                    said.append(f"member {m.pool_name} is faulty: node {m.node_id} is {state}")
                self.away.setdefault(p, (m.pool_id, self.since.setdefault(p, now)))
            elif m.state == DeviceState.FAULTY and p not in self.away:
                failure = array.failures.pop(p, None)
                if failure is not None:  # an I/O failed: unreachable, slow or refused
                    self.away[p] = (m.pool_id, self.since.setdefault(p, now))
                    if not isinstance(failure, PeerUnavailable):
                        where = f" on node {m.node_id}" if remote else ""
                        said.append(f"member {m.pool_name}{where} failed: {failure}")
            elif p in self.away and (self.away[p][0] != m.pool_id or m.state != DeviceState.FAULTY):
                del self.away[p]  # replaced or taken out meanwhile
                self.since.pop(p, None)
            elif p in self.away and state == "alive" and now >= self.tried.get(p, 0) + RETRY_S:
                self.tried[p] = now
                if await self._answers(m.pool_id):
                    del self.away[p]
                    self.resync.add(p)
                    array.set_state(p, DeviceState.RECOVERING)
                    array.recovery.generation += 1
                    where = f" on node {m.node_id}" if remote else ""
                    said.append(f"member {m.pool_name} is back{where}: resync")
        return said

    async def _answers(self, pool_id: PoolId) -> bool:
        """Rule 3: does the device of away member ``pool_id`` answer again: on a peer, the
        very device, refenced, reading within the bound (``RemoteStore.refence``); here, the
        device still open, reading within the same bound?"""
        remote = self.remote.get(pool_id)
        if remote is not None:
            return await remote.refence()
        store = find_block_store(self.runtime, pool_id)
        if not isinstance(store, BdevContainer):
            return False
        with trio.move_on_after(FORWARD_TIMEOUT):
            try:
                await store.read(0, min(PROBE_BYTES, store.capacity))
            except ApiError:
                return False
            return True
        return False

    def overdue(self, now: float, after_s: float) -> list[tuple[int, PoolId]]:
        """Away members whose node has been down ``after_s`` seconds (rule 4); each is due
        once per ``after_s``, so a failed replacement is tried again that much later."""
        due = [(p, pool_id) for p, (pool_id, since) in self.away.items() if now - since >= after_s]
        for p, pool_id in due:
            self.away[p] = (pool_id, now)
        return due

    async def make_spare(
        self, array: StripeArray, name: str, size: int, replacing: int | None = None
    ) -> tuple[MemberRequest, PoolId | None]:
        """Rule 4: a device of ``size`` bytes named ``name`` on a live node, for a member
        to be replaced onto: a peer that holds none of the array's members if one answers,
        else this node, else any live peer. The node of the member at position ``replacing``
        comes after the other peers that hold none (its device failed or died with it), and
        before this node. A request naming it, and the pool id of the device made on a peer
        (None: the replacement makes it here)."""
        me, alive = self.runtime.node_id, self.runtime.alive_nodes()
        node_of = [array.member(p).node_id for p in array.positions()]
        node_of = [me if n is None else n for n in node_of]
        gone = None if replacing is None else node_of[replacing]
        holding = {n for p, n in enumerate(node_of) if p != replacing}
        free = [n for n in alive if n not in holding and n != me]
        order = [*sorted(free, key=lambda n: n == gone), me]  # the replaced one's node last
        order += [n for n in alive if n in holding and n != me]
        why = "no live node"
        for node_id in order:
            if not self.is_remote(node_id):
                return MemberRequest(name, str(size), "file"), None
            try:
                store = await self._make(node_id, name, str(size), "file", array)
            except ApiError as exc:
                why = f"node {node_id}: {exc.message}"
                continue
            return MemberRequest(name, node_id=str(node_id)), store.pool_id
        raise Conflict(f"no live node could hold a spare of {size} bytes ({why})")

    def resync_only(self, array: StripeArray) -> bool:
        """Are all the recovering members back from being away (their blocks kept)?"""
        recovering = {
            p for p in array.positions() if array.member(p).state == DeviceState.RECOVERING
        }
        self.resync &= recovering
        return bool(recovering) and recovering <= self.resync
