"""The container of one core: targets (register, unregister, score), blobs (put, get, delete,
move) and the monitor queries that reach them.

A blob's bytes are written on a target's device through its ``BlockStore``; the core keeps
where each blob lives (``BlobLoc``) by tag and name.

A destroyed core (or one whose start fails) gives back what it took, after its operations in
flight: its blobs' extents on every target, and the devices it made for its targets once
nothing else holds space on them.

Request fields are read as written, never stripped: a target name is a pool name
(``name_error``), ``attach_pool_id`` a ``PoolId.parse`` id, a put's size canonical ASCII digits
(``cluster.ground.parse``), a blob's tag and name printable and at most ``MAX_KEY`` characters.
"""

from __future__ import annotations

import hashlib
import logging
import random
from collections.abc import Mapping
from typing import Any

from cluster.ground.errors import BadRequest, Conflict, NotFound, ValidationFailed
from cluster.ground.ids import PoolId
from cluster.ground.parse import ParseError, parse_int
from cluster.runtime import Container, name_error, parse_period
from cluster.storage import BlobLoc, BlockStore, NoSpace, Target, plan_moves, score

from ..bdev_config import bdev_config_errors
from ..members import MEMBER_BASE, find_block_store
from ..rt_bdev import BdevContainer

__all__ = ["CteCoreContainer"]

log = logging.getLogger(__name__)
JSON = dict[str, Any]
MAX_PUT = 64 << 20  # bytes one monitor put writes
MAX_KEY = 255  # characters of a blob's tag, and of its name


def _check_key(verb: str, tag: str, name: str) -> None:
    """A blob's tag and name: each 1 to ``MAX_KEY`` printable characters."""
    if not tag or not name:
        raise BadRequest(f"expected {verb}:<tag>/<name>{':<size>' if verb == 'put' else ''}")
    for what, text in (("tag", tag), ("name", name)):
        if len(text) > MAX_KEY or not text.isprintable():
            raise BadRequest(f"a blob's {what} is 1 to {MAX_KEY} printable characters")


class CteCoreContainer(Container):
    methods = ("put", "get", "delete", "move", "rescore")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.targets: dict[str, Target] = {}
        self.tags: dict[str, dict[str, BlobLoc]] = {}
        self._created: list[Container] = []  # target devices made for this core

    async def start(self) -> None:
        for spec in self.config.get("targets") or []:
            params = {str(k): str(v) for k, v in dict(spec).items()}
            if "attach_pool_name" in params:
                found = self.runtime.pools.by_name(params.pop("attach_pool_name"))
                params["attach_pool_id"] = str(found.info.pool_id) if found else "0.0"
            try:
                await self.register_target(params)
            except ValidationFailed as exc:
                what = "; ".join(f"{k}: {v}" for k, v in exc.errors.items())
                name = params.get("name")
                raise ValidationFailed({"targets": f"target '{name}': {what}"}) from None
        period = parse_period(self.config.get("rescore_period_s", 1.0))
        self.runtime.workers.add_periodic(self.info.pool_id, "rescore", period, self._rescore)

    async def close(self) -> None:
        await super().close()
        await self.wait_idle()
        for loc in [loc for names in self.tags.values() for loc in names.values()]:
            try:
                await self._release(loc)
            except Exception as exc:  # a target gone or broken keeps its space
                log.info("core %s: could not free %s: %s", self.info.pool_name, loc, exc)
        self.tags.clear()
        for device in list(self._created):
            await self._drop_created(device.info.pool_id)

    # -- targets ----------------------------------------------------------------------------

    def _store(self, target: Target) -> BlockStore:
        store = find_block_store(self.runtime, target.pool_id)
        if store is None:
            raise Conflict(f"target '{target.name}' lost its device pool {target.pool_id}")
        return store

    def _score(self, target: Target) -> float:
        store = find_block_store(self.runtime, target.pool_id)
        if store is None:
            return 0.0
        return score(store.io_snapshot(), store.capacity, store.remaining_capacity)

    async def _rescore(self) -> None:
        self.ensure_open()
        for t in self.targets.values():
            t.score = self._score(t)

    def target_json(self, t: Target) -> JSON:
        store = find_block_store(self.runtime, t.pool_id)
        io = store.io_snapshot() if store else None
        return {
            "name": t.name,
            "score": self._score(t),
            "remaining_space": store.remaining_capacity if store else 0,
            "bytes_read": t.bytes_read,
            "bytes_written": t.bytes_written,
            "ops_read": t.ops_read,
            "ops_written": t.ops_written,
            "capacity": store.capacity if store else 0,
            "read_latency_us": io.read_latency_us if io else 0.0,
            "write_latency_us": io.write_latency_us if io else 0.0,
            "read_bandwidth_mbps": io.read_bandwidth_mbps if io else 0.0,
            "write_bandwidth_mbps": io.write_bandwidth_mbps if io else 0.0,
            "bdev_pool_id": str(t.pool_id),
            "attached": t.attached,
            "draining": t.draining,
        }

    def _attach_errors(self, text: str, errors: dict[str, str]) -> PoolId | None:
        try:
            pool_id = PoolId.parse(text)
        except BadRequest as exc:
            errors["attach_pool_id"] = exc.message
            return None
        if pool_id == self.info.pool_id:
            errors["attach_pool_id"] = "a core cannot be its own target"
        elif find_block_store(self.runtime, pool_id) is None:
            errors["attach_pool_id"] = f"no block-device-like pool with id {pool_id} on this node"
        elif other := next((t for t in self.targets.values() if t.pool_id == pool_id), None):
            errors["attach_pool_id"] = f"pool {pool_id} is target '{other.name}' already"
        return pool_id

    async def register_target(self, params: Mapping[str, str]) -> JSON:
        """Register ``name`` on an attached pool or a fresh device; all bad fields at once."""
        with self.operation():
            return await self._register_target(params)

    async def _register_target(self, params: Mapping[str, str]) -> JSON:
        errors: dict[str, str] = {}
        name = params.get("name", "")
        attach = params.get("attach_pool_id", "")
        device = f"{self.info.pool_name}_{name}"  # the name of a device made for the target
        if not name:
            errors["name"] = "required"
        elif (why := name_error(name)) is not None:
            errors["name"] = why
        elif not attach and (why := name_error(device)) is not None:
            errors["name"] = f"too long for its device's name '{device[:40]}...': {why}"
        elif name in self.targets:
            errors["name"] = f"a target named '{name}' exists already"
        pool_id = None
        if attach:
            if params.get("capacity", ""):
                errors["attach_pool_id"] = "give either attach_pool_id or capacity, not both"
            else:
                pool_id = self._attach_errors(attach, errors)
        else:
            config = {
                "bdev_type": params.get("bdev_type", "") or "ram",
                "capacity": params.get("capacity", ""),
            }
            errors.update(bdev_config_errors(config, self.runtime.settings.data_dir))
        if errors:
            raise ValidationFailed(errors)
        if pool_id is None:
            body = await self.runtime.compose(
                "rt_bdev",
                device,
                str(self.runtime.pools.suggest(MEMBER_BASE)),
                config,
            )
            pool_id = PoolId.parse(body["pool_id"])
            self._created.append(self.runtime.pools.get(pool_id))
        self.targets[name] = Target(name, pool_id, attached=bool(attach))
        self.targets[name].score = self._score(self.targets[name])
        return {"ok": True, "name": name, "bdev_pool_id": str(pool_id), "attached": bool(attach)}

    async def unregister_target(self, name: str) -> JSON:
        """Move the target's blobs to the others, then drop it (and its own device)."""
        with self.operation():
            return await self._unregister_target(name)

    async def _unregister_target(self, name: str) -> JSON:
        if not name:
            raise BadRequest("missing name")
        target = self.targets.get(name)
        if target is None:
            raise NotFound(f"no target named '{name}' in {self.info.pool_name}")
        blobs = {
            f"{tag}/{b}": loc
            for tag, names in self.tags.items()
            for b, loc in names.items()
            if loc.target == name
        }
        others = [t for t in self.targets.values() if t is not target and not t.draining]
        free = {
            t.name: s.largest_free
            for t in others
            if (s := find_block_store(self.runtime, t.pool_id))
        }
        if plan_moves({k: v.size for k, v in blobs.items()}, free) is None:
            raise Conflict(
                f"cannot unregister target '{name}': its {len(blobs)} blobs "
                f"({sum(v.size for v in blobs.values())} bytes) do not fit on the remaining "
                f"targets ({sum(free.values())} bytes free)"
            )
        target.draining = True
        moved = 0
        try:
            for key in blobs:
                tag, _, blob = key.partition("/")
                await self._run(
                    "move", blobs[key].size, lambda t=tag, b=blob: self._move(t, b, name)
                )
                moved += 1
        except NoSpace as exc:
            target.draining = False
            raise Conflict(
                f"unregister of '{name}' stopped after moving {moved} of {len(blobs)} blobs: "
                f"{exc.message}"
            ) from None
        del self.targets[name]
        await self._drop_created(target.pool_id)
        return {"ok": True, "name": name}

    async def _drop_created(self, pool_id: PoolId) -> None:
        """Destroy the device made for a target, unless something else holds space on it."""
        for device in [d for d in self._created if d.info.pool_id == pool_id]:
            self._created.remove(device)
            still_ours = self.runtime.pools.find(pool_id) is device
            if still_ours and isinstance(device, BdevContainer) and device.unused:
                await self.runtime.destroy(str(pool_id))

    # -- blobs ------------------------------------------------------------------------------

    async def _run(self, method: str, size: int, fn: Any) -> Any:
        async def task() -> Any:
            with self.operation():
                return await fn()

        return await self.runtime.workers.run(self.info.pool_id, method, size / 1024, task)

    async def _place(self, data: bytes, exclude: str = "") -> BlobLoc:
        ranked = sorted(
            (t for t in self.targets.values() if not t.draining and t.name != exclude),
            key=lambda t: -self._score(t),
        )
        for t in ranked:
            store = find_block_store(self.runtime, t.pool_id)
            if store is None or store.largest_free < len(data):
                continue
            try:
                extent = await store.allocate(max(1, len(data)))
            except NoSpace:
                continue
            await store.write(extent.offset, data)
            t.bytes_written += len(data)
            t.ops_written += 1
            return BlobLoc(t.name, extent, len(data))
        raise NoSpace(f"no target of {self.info.pool_name} can hold {len(data)} bytes")

    async def _release(self, loc: BlobLoc) -> None:
        target = self.targets.get(loc.target)
        store = find_block_store(self.runtime, target.pool_id) if target else None
        if store is not None:
            await store.free(loc.extent)

    async def _read(self, loc: BlobLoc) -> bytes:
        target = self.targets[loc.target]
        data = await self._store(target).read(loc.extent.offset, loc.size)
        target.bytes_read += loc.size
        target.ops_read += 1
        return data

    async def _move(self, tag: str, name: str, source: str) -> None:
        loc = self.tags[tag][name]
        new = await self._place(await self._read(loc), exclude=source)
        if self.tags.get(tag, {}).get(name) != loc:  # overwritten meanwhile: keep the newer one
            await self._release(new)
            return
        self.tags[tag][name] = new
        await self._release(loc)

    async def put(self, tag: str, name: str, data: bytes) -> BlobLoc:
        async def fn() -> BlobLoc:
            loc = await self._place(data)
            old = self.tags.setdefault(tag, {}).get(name)
            self.tags[tag][name] = loc
            if old is not None:
                await self._release(old)
            return loc

        return await self._run("put", len(data), fn)  # type: ignore[no-any-return]

    def locate(self, tag: str, name: str) -> BlobLoc:
        loc = self.tags.get(tag, {}).get(name)
        if loc is None:
            raise NotFound(f"no blob '{name}' in tag '{tag}'")
        return loc

    async def get(self, tag: str, name: str) -> bytes:
        loc = self.locate(tag, name)
        return await self._run("get", loc.size, lambda: self._read(self.locate(tag, name)))  # type: ignore[no-any-return]

    async def delete(self, tag: str, name: str) -> None:
        loc = self.locate(tag, name)

        async def fn() -> None:
            if self.tags.get(tag, {}).pop(name, None) is not None:
                await self._release(loc)
            if not self.tags.get(tag, True):
                del self.tags[tag]

        await self._run("delete", loc.size, fn)

    # -- monitor and workload ---------------------------------------------------------------

    def stats(self) -> JSON:
        return {
            "pool_name": self.info.pool_name,
            "num_targets": len(self.targets),
            "num_tags": len(self.tags),
            "num_blobs": sum(len(b) for b in self.tags.values()),
            "blob_bytes": sum(loc.size for b in self.tags.values() for loc in b.values()),
            "targets": [
                {
                    k: v
                    for k, v in self.target_json(t).items()
                    if k in ("name", "bytes_read", "bytes_written", "ops_read", "ops_written")
                }
                for t in self.targets.values()
            ],
        }

    async def monitor(self, query: str, params: Mapping[str, str]) -> Any:
        """``stats``, ``targets``, ``put:<tag>/<name>:<size>``, ``get:<tag>/<name>``,
        ``del:<tag>/<name>``; put writes deterministic bytes seeded by the blob's key."""
        verb, _, arg = query.partition(":")
        if verb == "targets":
            return {
                "pool_id": str(self.info.pool_id),
                "targets": [self.target_json(t) for t in self.targets.values()],
            }
        if verb in ("put", "get", "del") and arg:
            key, _, size_text = arg.rpartition(":") if verb == "put" else (arg, "", "")
            tag, _, name = key.partition("/")
            _check_key(verb, tag, name)
            if verb == "del":
                await self.delete(tag, name)
                return {"ok": True, "tag": tag, "name": name}
            if verb == "put":
                try:
                    size = parse_int(size_text, low=0, high=MAX_PUT, what="put size")
                except ParseError as exc:
                    raise BadRequest(f"{exc} (a whole number of bytes up to 64M)") from None
                data = random.Random(key).randbytes(size)
                loc = await self.put(tag, name, data)
            else:
                data = await self.get(tag, name)
                loc = self.locate(tag, name)
            sha = hashlib.sha256(data).hexdigest()
            return {
                "ok": True,
                "tag": tag,
                "name": name,
                "size": len(data),
                "target": loc.target,
                "sha256": sha,
            }
        return await super().monitor(query, params)

    async def workload_step(self, rng: random.Random, io_size: int) -> None:
        name = f"b{rng.randrange(16)}"
        if rng.random() < 0.5 and name in self.tags.get("workload", {}):
            await self.get("workload", name)
        else:
            try:
                await self.put("workload", name, rng.randbytes(io_size))
            except NoSpace:  # full: make room for the next step
                if name in self.tags.get("workload", {}):
                    await self.delete("workload", name)
