"""Structure-aware mutators: edit the document or the msgpack value, not only its bytes.

libFuzzer's byte mutations rarely turn a valid settings file or RPC frame into another valid one
with one value changed, and msgpack's decoder is C, so its branches guide nothing; yet that is
where type and range bugs live (a 310-digit integer where a float is read, ``.nan`` where a
count is, 2^63 where an incarnation is). Half of the time these mutators decode the input,
change one to three places (a value replaced by an edge value or a word of the format, a key
added, removed or renamed, an item copied) and encode it again; the other half they leave the
bytes to libFuzzer (``atheris.Mutate``). Anything they cannot decode mutates as bytes.

Rules:
1. Deterministic for a given ``seed`` (libFuzzer replays mutations by seed).
2. YAML is read without expanding aliases (``yaml.safe_load`` would be an alias bomb's victim).
3. A target that holds msgpack bodies inside a frame gives a ``Layout``: how its input splits
   into (header, body) pieces and how the pieces join again, lengths recomputed.
4. The words (keys, kinds) come from the target's dictionary (``fuzz/dicts/<name>.dict``, written
   by ``fuzz.seeds``), so no project module is imported here (``fuzz`` rule 1).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgpack
import yaml

from . import HERE

__all__ = [
    "EDGE_VALUES",
    "WHOLE",
    "WIRE_VALUES",
    "Layout",
    "after",
    "frames_after",
    "msgpack_mutator",
    "yaml_mutator",
]

Mutator = Callable[[bytes, int, int], bytes]
Pieces = list[tuple[bytes, bytes]]

EDGE_VALUES: tuple[Any, ...] = (
    0, -1, 1, 2**31, 2**63, 2**64, 10**309, -(10**309), 0.5, -0.0, 1e308, math.inf, -math.inf,
    math.nan, True, False, None, "", "0", "-1", "1e400", "~nouser/x", "./~x", "a" * 5000,
    "x\x00y", "0-99999999", "all", "auto", [], {}, [1, 2], {"a": 1},
)  # fmt: skip
# msgpack holds no int past 64 bits: the edges of the fields' ranges instead.
WIRE_VALUES: tuple[Any, ...] = (
    0, 1, -1, 2**16 - 1, 2**16, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**63,
    2**64 - 1, -(2**63), 0.5, math.nan, math.inf, True, False, None, "", "x" * 300, b"",
    b"\x00" * 9, "127.0.0.1", [], {}, [[]], {"k": "swim"}, ["a", "b"],
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a target's msgpack bodies are (rule 3)."""

    split: Callable[[bytes], Pieces]
    join: Callable[[Pieces], bytes]


_HEADERS = "".join(map(chr, range(0x80, 0x100)))
WHOLE = Layout(lambda data: [(b"", data)], lambda pieces: pieces[0][0] + pieces[0][1])


def after(n: int) -> Layout:
    """One msgpack body after an ``n``-byte header."""
    return Layout(lambda data: [(data[:n], data[n:])], lambda pieces: b"".join(pieces[0]))


def frames_after(n: int) -> Layout:
    """An ``n``-byte header, then frames: a 4-byte big-endian length and a msgpack body each."""

    def split(data: bytes) -> Pieces:
        pieces, at = [(data[:n], b"")], n
        while at + 4 <= len(data):
            size = int.from_bytes(data[at : at + 4], "big")
            pieces.append((b"", data[at + 4 : at + 4 + size]))
            at += 4 + size
        return pieces

    def join(pieces: Pieces) -> bytes:
        return pieces[0][0] + b"".join(len(b).to_bytes(4, "big") + b for _, b in pieces[1:])

    return Layout(split, join)


def _words(name: str) -> list[str]:
    """The plain words of a target's dictionary (its keys and keywords)."""
    path = HERE / "dicts" / f"{name}.dict"
    words = []
    for line in path.read_text().splitlines() if path.is_file() else ():
        entry = line.strip()[1:-1].encode("latin-1").decode("unicode_escape")
        word = entry.lstrip(_HEADERS)  # a msgpack string's header byte (rpc_frame's entries)
        if word.isidentifier():
            words.append(word)
    return words or ["key"]


class _NoAliases(yaml.SafeLoader):
    """PyYAML's safe loader refusing aliases (rule 2)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError("an alias")
        return super().compose_node(parent, index)


def _places(doc: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) of the document, the top included as (None, None)."""
    out: list[tuple[Any, Any]] = [(None, None)]
    stack = [doc]
    while stack and len(out) < 2000:
        node = stack.pop()
        if isinstance(node, dict | list):
            for key, value in list(node.items() if isinstance(node, dict) else enumerate(node)):
                out.append((node, key))
                stack.append(value)
    return out


def _edit(doc: Any, rng: random.Random, words: list[str], values: tuple[Any, ...]) -> Any:
    """``doc`` with one place changed (in place where it can be; the new top is returned)."""
    container, key = rng.choice(_places(doc))
    new = rng.choice(values) if rng.random() < 0.7 else rng.choice(words)
    if container is None:
        if isinstance(doc, dict):
            doc[rng.choice(words)] = new
            return doc
        return new
    how = rng.randrange(4)
    if how == 0 and isinstance(container, dict):  # a key renamed, or a new key
        container[rng.choice(words)] = container.pop(key) if rng.random() < 0.5 else new
    elif how == 1:  # a node removed
        del container[key]
    elif how == 2 and isinstance(container, list):  # a node copied
        container.insert(key, container[key])
    else:
        container[key] = new
    return doc


def _mutator(edit: Callable[[bytes, random.Random], bytes]) -> Mutator:
    def mutate(data: bytes, max_size: int, seed: int) -> bytes:
        import atheris  # type: ignore[import-untyped]  # only the engine mutates (fuzz rule 4)

        rng = random.Random(seed)
        out = b""
        if rng.random() < 0.5:
            try:
                out = edit(data, rng)
            except Exception:  # a decoder fails in many ways on fuzzed bytes ('!!float' alone is
                out = b""  # PyYAML's IndexError); the mutator must not: these mutate as bytes
        if not out or len(out) > max_size:
            return bytes(atheris.Mutate(data, max_size))
        return out

    return mutate


def yaml_mutator(name: str) -> Mutator:
    """The custom mutator of YAML target ``name`` (atheris ``custom_mutator``)."""
    words = _words(name)

    def edit(data: bytes, rng: random.Random) -> bytes:
        doc = yaml.load(data, Loader=_NoAliases)
        for _ in range(rng.randint(1, 3)):
            doc = _edit(doc, rng, words, EDGE_VALUES)
        flow = rng.random() < 0.3
        return yaml.safe_dump(doc, default_flow_style=flow, sort_keys=False).encode()

    return _mutator(edit)


def msgpack_mutator(name: str, layout: Layout = WHOLE) -> Mutator:
    """The custom mutator of a target whose input holds msgpack bodies where ``layout`` says."""
    words = _words(name)

    def edit(data: bytes, rng: random.Random) -> bytes:
        pieces = layout.split(data)
        bodies = [i for i, (_, body) in enumerate(pieces) if body]
        i = rng.choice(bodies)
        value = msgpack.unpackb(pieces[i][1], raw=False, strict_map_key=False)
        for _ in range(rng.randint(1, 3)):
            value = _edit(value, rng, words, WIRE_VALUES)
        pieces[i] = (pieces[i][0], msgpack.packb(value, use_bin_type=True))
        return layout.join(pieces)

    return _mutator(edit)
