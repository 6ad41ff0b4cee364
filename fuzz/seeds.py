"""The seed corpora (``fuzz/corpus/<name>/``) and dictionaries (``fuzz/dicts/<name>.dict``),
written from the project's own encoders and tables.

    python -m fuzz.seeds            rewrite every corpus's ok-* and edge-* files, and the dicts

Rules:
1. ``ok-*`` inputs are valid: made by the encoders (``swim.wire``, ``swim.exchange``,
   ``cluster.rpc.frames``, ``swim.memberlist``), dumped from the settings' own defaults, or
   copied from the scenario library and from real Serf agents' captures
   (``fuzz.memberlist_seeds``); ``tests/fuzz`` checks that each one is still accepted, so a
   format that changes cannot leave its fuzzer starting from inputs refused at the first byte.
2. ``edge-*`` inputs are refusals a parser must make cleanly (cut short, out of range, wrong
   type, over a limit); they start the fuzzer near the checks.
3. ``mixed-*`` inputs are taken by some of a target's parsers and refused by others.
4. Every input is small (at most a target's ``max_len``) and the same on every run: no
   randomness, no clock. Files this module does not write (``new-*``, kept from a long run)
   are left alone.
5. Dictionaries are the keywords the fuzzer cannot guess: the keys and words of the formats,
   read from the code that defines them.
"""

from __future__ import annotations

import base64
import struct
import sys
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import msgpack
import yaml

from cluster.ground.settings import Settings
from cluster.rpc import frames
from cluster.runtime import BLOCK_OPS
from scenarios.format.records import EXPECT_KINDS, STEP_KINDS
from scenarios.format.spec import TOP_KEYS, load_scenario
from swim import MemberState, SwimConfig, exchange, wire
from swim.keyring import SEAL_VERSION
from swim.wire import StateEntry

from . import CORPUS, HERE, TARGETS, memberlist_seeds
from .targets import join_chunks

__all__ = ["dictionaries", "seeds", "write"]

HOST = "127.0.0.1"
_LEN = struct.Struct(">I")


def _pack(obj: Any) -> bytes:
    out: bytes = msgpack.packb(obj, use_bin_type=True)
    return out


def _framed(obj: Any) -> bytes:
    body = _pack(obj)
    return _LEN.pack(len(body)) + body


# -- membership -------------------------------------------------------------------------------

MESSAGES: tuple[wire.Message, ...] = (
    wire.Ping(7, 0, 1, HOST, 7001),
    wire.PingReq(8, 3, HOST, 7003, True, 1, HOST, 7001),
    wire.Ack(9, 1),
    wire.Nack(10, 1),
    wire.Alive(4, 5, HOST, 7005, 99),
    wire.Suspect(0, 0, 1),
    wire.Dead(3, 2, 1),
)
STATE = (
    StateEntry(0, HOST, 7000, 0, MemberState.ALIVE, 10),
    StateEntry(1, HOST, 7001, 1, MemberState.SUSPECTED, 11),
    StateEntry(4, HOST, 7004, 2, MemberState.DEAD, 14),
    StateEntry(5, HOST, 7005, 0, MemberState.LEFT, 15),
    StateEntry(6, HOST, 7006, 0, MemberState.ALIVE, 16),
)


def _wire() -> dict[str, bytes]:
    out = {f"ok-{wire.type_name(m)}": wire.encode(m) for m in MESSAGES}
    out["ok-compound"] = wire.encode_compound([wire.encode_part(m) for m in MESSAGES])
    ping = wire.encode(MESSAGES[0])
    out |= {
        "edge-cut": ping[:-3],
        "edge-version": bytes([2]) + ping[1:],
        "edge-nested": bytes([wire.VERSION, wire.MsgType.COMPOUND]) + _pack([b"\x08\x90"]),
        "edge-field": bytes([wire.VERSION, wire.MsgType.ACK]) + _pack([1 << 33, 1]),
        "edge-float": bytes([wire.VERSION, wire.MsgType.ACK]) + _pack([1.5, 1]),
        "edge-ext": bytes([wire.VERSION, wire.MsgType.ACK, 0xD4, 1, 0]),
        "edge-map": bytes([wire.VERSION, wire.MsgType.ACK]) + _pack({"a": 1}),
    }
    return out


def _machine() -> dict[str, bytes]:
    def packets(*parts: tuple[int, int, bytes]) -> bytes:
        return join_chunks([bytes([src, wait]) + p for src, wait, p in parts])

    ping, req, ack, _, alive, suspect_me, dead = (wire.encode(m) for m in MESSAGES)
    gossip = wire.encode_compound([wire.encode_part(m) for m in MESSAGES[4:]])
    flows = {
        "ok-probe": packets((0, 0, ping), (1, 3, req), (0, 5, ack)),
        "ok-gossip": packets((0, 1, gossip), (1, 2, alive), (2, 10, dead)),
        "ok-refute": packets((1, 0, suspect_me), (0, 20, ping), (3, 1, ping)),
        "ok-stranger": packets((3, 0, ping), (7, 0, alive), (11, 50, req)),
    }
    out = {f"{k}-plain": b"\x00" + v for k, v in flows.items()}
    out |= {f"{k}-sealed": b"\x01" + v for k, v in flows.items()}
    out["edge-unsealed"] = b"\x03" + flows["ok-probe"]
    out["edge-cut"] = b"\x00" + flows["ok-gossip"][:-5]
    return out


def _state() -> dict[str, bytes]:
    push = exchange.pushpull_request(1, STATE, join=True)
    reply = exchange.pushpull_reply(1, STATE)
    swim = frames.encode(frames.Swim(push))
    out = {
        "ok-pushpull-request": b"\x00" + _pack(swim),
        "ok-induct-request": b"\x00" + _pack(frames.encode(frames.Swim(exchange.induct_request()))),
        "ok-pushpull-request-sealed": b"\x01" + _pack(push),
        "ok-pushpull-reply": b"\x02" + _framed(reply),
        "ok-induct-reply": b"\x02" + _framed(exchange.induct_reply(9)),
        "ok-pushpull-reply-sealed": b"\x03" + _pack(reply),
        "edge-bad-row": b"\x00" + _pack({**swim, "state": [[1, HOST, 7001, 0, "gone", 1]]}),
        "edge-short-row": b"\x02" + _framed({**reply, "state": [[1, HOST]]}),
        "edge-error-reply": b"\x02" + _framed(exchange.error_reply("no")),
        "edge-not-a-map": b"\x02" + _framed([1, 2]),
        "edge-cut": b"\x02" + _framed(reply)[:-4],
    }
    # A sealed frame at a member without keys (a seal's bytes, fixed: no random nonce here).
    sealed = {"k": "swim", "sealed": bytes([SEAL_VERSION]) + bytes(12) + b"\x5a" * 40}
    out["edge-sealed-outer"] = b"\x00" + _pack(frames.encode(frames.Swim(sealed)))
    return out


# -- the node RPC -----------------------------------------------------------------------------

REQUESTS: tuple[frames.Request, ...] = (
    frames.Monitor("workers", {"limit": "5"}),
    frames.PoolMonitor("800.0", "stats", {"window": "10"}),
    frames.Swim(exchange.induct_request()),
    frames.Identity(),
    frames.Stop(),
    frames.Faults("loss", 2, 12.5, ()),
    frames.Faults("block", None, 0, (1, 2)),
    frames.Compose(({"mod_name": "rt_bdev", "pool_name": "a", "capacity": "256K"},)),
    frames.Pools(),
    frames.Migrate("800.0", 2),
    frames.Adopt("rt_bdev", "a", "800.0", "local", {"blocks": [b"\x00" * 8]}),
    frames.Block("m1", "info"),
    frames.Block("900.0", "write", 4096, 0, b"\x01" * 64),
    frames.Block("900.0", "read", 4096, 64),
    frames.Block("903.0", "destroy", writer="0/950.0/5eed1e55"),
    frames.Faults("cut", peers=(3, 4)),
    frames.Faults("clock", offset=-86400.0, rate=2.0),
    frames.Faults("disk", pool="m1", latency_ms=200.0, errors=10.0, full=True),
)


def _label(request: frames.Request) -> str:
    kind, op = request.KIND
    return f"{kind}-{op}" if op else kind


def _rpc_frame() -> dict[str, bytes]:
    out = {}
    for i, r in enumerate(REQUESTS):
        out[f"ok-{i:02d}-{_label(r)}"] = _pack(frames.encode(r))
    out["ok-reply"] = _pack(frames.encode_reply(frames.Ok({"workers": [1, 2]})))
    out["ok-error-reply"] = _pack(frames.encode_reply(frames.Err(404, "no pool")))
    out |= {
        "edge-list": _pack([1, 2, 3]),
        "edge-unknown-kind": _pack({"k": "nope", "op": "x"}),
        "edge-bad-field": _pack({"k": "control", "op": "faults", "action": "loss", "value": True}),
        "edge-nested": b"\x81\xa1k" + b"\x91" * 40 + b"\x90",
        "edge-nan": _pack({"k": "control", "op": "faults", "action": "delay", "value": 1e400}),
        "edge-block-writer": _pack({"k": "block", "pool": "903.0", "op": "destroy", "writer": 7}),
        "edge-clock-rate": _pack({"k": "control", "op": "faults", "action": "clock", "rate": "2"}),
        "edge-disk-full": _pack({"k": "control", "op": "faults", "action": "disk", "full": 1}),
    }
    return out


def _block_call() -> dict[str, bytes]:
    """Block calls on the ``block_call`` target's node: ``lent`` (900.0) and ``spare`` (901.0)
    made for ``OWNER``, ``lent`` in use; ``plain`` (902.0) made for no array."""
    owner = "0/950.0/5eed1e55"

    def call(pool: str, op: str, **fields: Any) -> bytes:
        return _pack(frames.encode(frames.Block(pool, op, **fields)))

    return {
        "ok-info": call("spare", "info", writer=owner),
        "ok-allocate": call("902.0", "allocate", size=8192, writer="x", epoch=3),
        "ok-write": call("901.0", "write", offset=4096, data=b"\x07" * 512, writer=owner, epoch=9),
        "ok-read": call("900.0", "read", size=4096),
        "ok-free": call("900.0", "free", size=4096),
        "ok-destroy": call("901.0", "destroy", writer=owner),
        "ok-destroy-by-name": call("spare", "destroy", writer=owner),
        "edge-destroy-in-use": call("900.0", "destroy", writer=owner),
        "edge-destroy-other-writer": call("901.0", "destroy", writer=owner[:-1]),
        "edge-destroy-no-owner": call("902.0", "destroy", writer=owner),
        "edge-destroy-nobody": call("901.0", "destroy"),
        "edge-destroy-admin": call("1.0", "destroy", writer=owner),
        "edge-writer-too-long": call("901.0", "destroy", writer="w" * 129),
        "edge-double-free": call("902.0", "free", size=4096),
        "edge-outside": call("901.0", "read", offset=65536 - 8, size=16),
        "edge-unknown-op": call("901.0", "trim"),
        "edge-not-block": _pack(frames.encode(frames.Pools())),
    }


def _rpc_stream() -> dict[str, bytes]:
    def conn(*requests: frames.Request) -> bytes:
        return b"\x00" + b"".join(_framed(frames.encode(r)) for r in requests)

    monitor = frames.Monitor
    out = {
        "ok-requests": conn(REQUESTS[0], REQUESTS[3], REQUESTS[5], REQUESTS[9]),
        "ok-swim": conn(REQUESTS[2]),
        "ok-refused": conn(monitor("refuse"), monitor("workers")),
        "ok-failing": conn(monitor("fail"), monitor("unencodable"), monitor("workers")),
        "ok-large-kind": conn(REQUESTS[10], REQUESTS[7]),
        "ok-reply": b"\x01" + _framed(frames.encode_reply(frames.Ok({"a": 1}))),
        "ok-error-reply": b"\x01" + _framed(frames.encode_reply(frames.Err(503, "busy"))),
        "edge-zero-length": b"\x00" + _LEN.pack(0),
        "edge-over-length": b"\x00" + _LEN.pack(1 << 30) + b"\x81",
        "edge-cut": conn(REQUESTS[0])[:-2],
        "edge-not-msgpack": b"\x00" + _LEN.pack(3) + b"\xc1\xc1\xc1",
        "edge-reply-cut": b"\x01" + _LEN.pack(9) + b"\x81",
    }
    return out


# -- files and text ---------------------------------------------------------------------------


def _settings_yaml() -> dict[str, bytes]:
    d = Settings()
    sections = {
        name: {
            k: list(v) if isinstance(v, tuple) else v for k, v in asdict(getattr(d, name)).items()
        }
        for name in ("networking", "runtime", "viz", "logging", "workload")
    }
    swim = {k: v for k, v in SwimConfig().as_dict().items() if v is not None}
    compose = [
        {"mod_name": "rt_bdev", "pool_name": "a", "pool_id": "800.0", "capacity": "256K"},
        {"mod_name": "rt_safe_bdev", "pool_name": "arr", "members": "a,b", "max_failures": 1},
        {"mod_name": "rt_cte_core", "pool_name": "core", "targets": [{"name": "t"}]},
    ]
    full = {**sections, "swim": swim, "compose": compose}
    return {
        "ok-defaults": yaml.safe_dump(full, sort_keys=False).encode(),
        "ok-small": yaml.safe_dump(
            {"networking": {"port": 9500}, "viz": {"enabled": True}}
        ).encode(),
        "ok-flow": b"runtime: {num_threads: 8, modules: [rt_admin]}\nlogging: {level: warn}\n",
        "ok-empty": b"",
        "edge-unknown": b"networking:\n  prot: 1\n",
        "edge-range": b"runtime:\n  learning_rate: 0\nviz:\n  port: 70000\n",
        "edge-swim": b"swim:\n  probe_interval: 1e400\n  gossip_nodes: 99999999999999999999999\n",
        "edge-alias": b"a: &x [1, 2]\nb: *x\n",
        "edge-tag": b"networking: !!binary aGVsbG8=\n",
        "edge-nul": b'runtime:\n  conf_dir: "a\\0b"\n',
        "edge-deep": b"compose: " + b"[" * 40 + b"]" * 40 + b"\n",
        "edge-dup": b"viz: {}\nviz: {}\n",
    }


def _scenario() -> dict[str, bytes]:
    library = Path(__file__).resolve().parents[1] / "scenarios"
    out = {  # a file for real processes only is refused in sim: mixed (rule 3)
        f"{'mixed' if load_scenario(p).real_only else 'ok'}-{p.stem}": p.read_bytes()
        for p in sorted(library.glob("*.yaml"))
    }
    out |= {
        "edge-unknown-step": b"nodes: 3\nsteps:\n  - {at: 1, explode: 1}\n",
        "edge-order": b"nodes: 3\nsteps:\n  - {at: 5, kill: 1}\n  - {at: 1, kill: 2}\n",
        "edge-node": b"nodes: 3\nsteps:\n  - {at: 1, kill: 9}\n",
        "edge-number": b"nodes: 3\nduration: .inf\nsteps:\n  - {at: 1e400, kill: 1}\n",
        "edge-swim": b"nodes: 3\nswim: {probe_interval: 1e400}\n",
        "edge-range": b'nodes: 3\nsteps:\n  - {at: 1, partition: [["0-1"], ["2-999999"]]}\n',
    }
    return out


def _hostfile() -> dict[str, bytes]:
    return {
        "ok-hosts": b"127.0.0.1:9413\n127.0.0.1:9414\n# a comment\n\nnode-a.example:9500  # x\n",
        "ok-ipv6": b"[::1]:9413\n::1\nlocalhost\n",
        "edge-port": b"127.0.0.1:0\n",
        "edge-big-port": b"127.0.0.1:65536\n",
        "edge-no-host": b":9413\n",
        "edge-utf8": b"h\xff:1\n",
        "edge-nul": b"a\x00b:1\n",
    }


def _query() -> dict[str, bytes]:
    return {
        "ok-pairs": b"node=2&limit=50&window=10&flag",
        "ok-spaces": b"q=a+b&name=x%20y&name=ignored",
        "edge-utf8": b"a=%ff%fe",
        "edge-raw": b"a=\xff",
        "edge-many": b"a&" * 1001,
        "ok-odd": b"a=1;b=2&&=&%",
    }


def _numbers() -> dict[str, bytes]:
    ok = ("0", "-1", "800", "2147483647", "1.5", "0.25", "16M", "1GiB", "1.5K", "4096", "yes")
    edge = ("+1", "1_000", "1e400", "nan", "inf", "1" * 70)
    mixed = ("0800", "-0", " 1", "2147483648")  # refused by some parsers, taken by others
    out = {f"ok-{i:02d}": t.encode() for i, t in enumerate(ok)}
    out |= {f"edge-{i:02d}": t.encode() for i, t in enumerate(edge)}
    out |= {f"mixed-{i:02d}": t.encode() for i, t in enumerate(mixed)}
    out |= {
        "edge-digits": "١٢".encode(),
        "edge-json": b'[1, {"a": 2.5}]',
        "edge-bigint": b"9" * 400,
    }
    return out


def _keyring() -> dict[str, bytes]:
    keys = [base64.b64encode(bytes(range(n))) for n in (32, 16, 24)]
    return {
        "ok-three": b"# primary first\n" + b"\n".join(keys) + b"\n",
        "ok-one": keys[0] + b"\n",
        "edge-size": base64.b64encode(b"x" * 20) + b"\n",
        "edge-base64": b"not base64!\n",
        "edge-empty": b"# nothing\n\n",
        "edge-many": b"\n".join([keys[1]] * 17) + b"\n",
        "edge-ascii": keys[0] + b"\xc3\xa9\n",
    }


def seeds() -> dict[str, dict[str, bytes]]:
    """Every target's seed files: name -> file name -> bytes."""
    settings = _settings_yaml()
    scenario = _scenario()
    safeyaml = {f"{k}-settings": v for k, v in settings.items() if k.startswith("ok-")}
    safeyaml |= {f"{k}-scenario": v for k, v in scenario.items() if k.startswith("ok-")}
    safeyaml |= {f"{k}-settings": settings[k] for k in ("edge-alias", "edge-tag", "edge-dup")}
    safeyaml |= {
        "edge-merge": b"a: {b: 1}\nc:\n  <<: {d: 2}\n",
        "edge-key": b"? [1, 2]\n: 3\n",
        "edge-two-docs": b"a: 1\n---\nb: 2\n",
        "edge-python": b"!!python/object:os.system [ls]\n",
        "edge-control": b"a: \x07\n",
        "edge-bad-int": b"a: !!int x\n",
    }
    return {
        "wire": _wire(),
        "machine": _machine(),
        "state": _state(),
        "rpc_frame": _rpc_frame(),
        "rpc_stream": _rpc_stream(),
        "block_call": _block_call(),
        "settings": settings,
        "safeyaml": safeyaml,
        "scenario": scenario,
        "hostfile": _hostfile(),
        "query": _query(),
        "numbers": _numbers(),
        "keyring": _keyring(),
        **memberlist_seeds.seeds(),
    }


def _dict_lines(words: Iterable[str | bytes]) -> str:
    lines = []
    for w in sorted({w if isinstance(w, bytes) else w.encode() for w in words}):
        lines.append(
            '"'
            + "".join(chr(b) if 32 <= b < 127 and b not in b'"\\' else f"\\x{b:02x}" for b in w)
            + '"'
        )
    return "\n".join(lines) + "\n"


YAML_WORDS = ("&a", "*a", "<<", "!!", "---", "...", "? ", ": ", "- ", "[", "{", "~", "null")
# Numbers at the edges of the types that hold them: 2^31, 2^63, 2^64, past a float, -0, inf.
EDGE_NUMBERS = (
    "2147483648", "9223372036854775808", "18446744073709551616", "1" + "0" * 309, "-0", "1e309",
    ".inf", "-.inf", ".nan", "0x7f", "0o17", "1_0", "+1", "true", "false",
)  # fmt: skip


def dictionaries() -> dict[str, str]:
    """libFuzzer dictionaries: target name -> file text."""
    d = Settings()
    setting_keys: set[str] = {"swim", "compose", "mod_name", "pool_name"}
    for name in ("networking", "runtime", "viz", "logging", "workload"):
        setting_keys |= {name, *asdict(getattr(d, name))}
    setting_keys |= set(SwimConfig().as_dict())
    step_words = {*TOP_KEYS, *STEP_KINDS, *EXPECT_KINDS, "at", "name", "for", "within", "after"}
    kinds = {k for r in REQUESTS for k in r.KIND if k} | {"k", "op", "ok", "body", "status"}
    kinds |= {*BLOCK_OPS, "pool", "writer", "epoch"}  # a block call's keys and operations
    kinds |= {"action", "peers", "offset", "rate", "latency_ms", "errors", "full"}  # faults
    kinds |= {"loss", "delay", "block", "cut", "clock", "disk", "heal"}  # their actions
    yaml_words = {*YAML_WORDS, *EDGE_NUMBERS}
    tags = {"!!int", "!!str", "!!binary", "!!set", "!!float", "tag:yaml.org,2002:"}
    return {
        "settings": _dict_lines(setting_keys | yaml_words),
        "safeyaml": _dict_lines(yaml_words | tags),
        "scenario": _dict_lines(step_words | yaml_words | {"all", "leader", "auto", "0-2"}),
        "rpc_frame": _dict_lines(_pack(k) for k in kinds),  # as msgpack writes them
        "block_call": _dict_lines(
            _pack(k)
            for k in {
                *BLOCK_OPS,
                "k",
                "block",
                "pool",
                "writer",
                "epoch",
                "offset",
                "size",
                "data",
                "lent",
                "spare",
                "plain",
                "900.0",
                "901.0",
            }
        ),
        "numbers": _dict_lines({*EDGE_NUMBERS, "K", "M", "GiB", "MB", "e+", "e-", ".", "-"}),
        "memberlist": _dict_lines(memberlist_seeds.WORDS),  # as go-msgpack writes them
        "memberlist_stream": _dict_lines(memberlist_seeds.WORDS),
    }


def write(corpus: Path = CORPUS, dicts: Path = HERE / "dicts") -> list[Path]:
    """Write every seed and dictionary; the paths written."""
    written = []
    for name, files in seeds().items():
        assert name in TARGETS, name
        folder = corpus / name
        folder.mkdir(parents=True, exist_ok=True)
        for prefix in ("ok-", "edge-", "mixed-"):
            for stale in folder.glob(prefix + "*"):
                stale.unlink()
        for file, data in files.items():
            assert len(data) <= TARGETS[name].max_len, (name, file, len(data))
            (folder / file).write_bytes(data)
            written.append(folder / file)
    dicts.mkdir(exist_ok=True)
    for name, text in dictionaries().items():
        (dicts / f"{name}.dict").write_text(text)
        written.append(dicts / f"{name}.dict")
    return written


if __name__ == "__main__":
    paths = write()
    print(f"wrote {len(paths)} files under {CORPUS} and {HERE / 'dicts'}")
    sys.exit(0)
