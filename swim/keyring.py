"""Keyring: shared keys that seal gossip, as memberlist's keyring does (AES-GCM).

A sealed message::

    sealed := SEAL_VERSION:u8  nonce:12  AES-GCM(key, nonce, plaintext, aad=label)   (+16 tag)

The plaintext is a whole UDP packet (``wire`` format) or a whole TCP swim frame (msgpack);
``label`` says which (``UDP``, ``TCP_REQUEST``, ``TCP_REPLY``), so one can never be passed off
as another. ``SEAL_VERSION`` differs from ``wire.VERSION``: a member without a keyring drops a
sealed packet as a bad version, and one with a keyring drops a plain packet as unauthenticated.

Rules:
1. The first key seals; every key is tried to open. That is how keys rotate without a moment
   of disagreement: add the new key second on every member, restart; move it first on every
   member, restart; remove the old key (docs/gossip-keys.md).
2. ``open_untrusted`` raises only ``BadMessage("auth")``: nothing is decoded before it opens.
3. Nonces come from ``os.urandom``, never from the protocol's seeded ``random.Random``: runs
   seeded alike with one key would repeat nonces, and a repeated nonce breaks AES-GCM.
4. Keys are read once, at start (``load_keyring``); a bad file is a ``ValueError`` naming the
   file and the line. Keys are never shown: not in ``repr``, not in errors, not in logs.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .messages import BadMessage

__all__ = [
    "MAX_KEYS",
    "OVERHEAD",
    "SEAL_VERSION",
    "TCP_REPLY",
    "TCP_REQUEST",
    "UDP",
    "Keyring",
    "load_keyring",
    "new_key_line",
]

SEAL_VERSION = 0xA1
NONCE_BYTES = 12
TAG_BYTES = 16
OVERHEAD = 1 + NONCE_BYTES + TAG_BYTES  # bytes a sealed message adds to its plaintext
MAX_KEYS = 16  # every key is tried on every packet that fails to open: bound the work
MAX_FILE_BYTES = 64 * 1024
KEY_SIZES = (16, 24, 32)  # AES-128, AES-192, AES-256

UDP = b"rtsim swim udp"
TCP_REQUEST = b"rtsim swim tcp request"
TCP_REPLY = b"rtsim swim tcp reply"


class Keyring:
    """The keys of one member: ``keys[0]`` seals, all of them open."""

    __slots__ = ("_aeads", "fingerprints")

    def __init__(self, keys: Sequence[bytes]) -> None:
        if not 1 <= len(keys) <= MAX_KEYS:
            raise ValueError(f"a keyring holds 1..{MAX_KEYS} keys, not {len(keys)}")
        for k in keys:
            if len(k) not in KEY_SIZES:
                raise ValueError(f"a key is 16, 24 or 32 bytes, not {len(k)}")
        self._aeads = tuple(AESGCM(k) for k in keys)
        # Short digests name the keys (status output, tests) without revealing them.
        self.fingerprints = tuple(hashlib.sha256(k).hexdigest()[:12] for k in keys)

    def __repr__(self) -> str:
        return f"Keyring(primary={self.fingerprints[0]}, keys={len(self.fingerprints)})"

    def seal(self, plaintext: bytes, label: bytes) -> bytes:
        """``plaintext`` sealed with the primary key under ``label``."""
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._aeads[0].encrypt(nonce, plaintext, label)
        return bytes([SEAL_VERSION]) + nonce + sealed

    def open_untrusted(self, data: bytes, label: bytes) -> bytes:
        """The plaintext of a sealed message; ``BadMessage("auth")`` if no key opens it."""
        if len(data) < OVERHEAD or data[0] != SEAL_VERSION:
            raise BadMessage("auth", f"not a sealed message ({len(data)} bytes)")
        nonce, body = data[1 : 1 + NONCE_BYTES], data[1 + NONCE_BYTES :]
        for aead in self._aeads:
            try:
                return aead.decrypt(nonce, body, label)
            except InvalidTag:
                continue
        raise BadMessage("auth", "no key opens it")

    def seal_envelope(self, head: bytes, plaintext: bytes, aad: bytes | None) -> bytes:
        """``head``, a fresh nonce and ``plaintext`` under the primary key: another protocol's
        envelope around the same keys (``swim.memberlist.crypt``)."""
        nonce = os.urandom(NONCE_BYTES)
        return head + nonce + self._aeads[0].encrypt(nonce, plaintext, aad)

    def open_envelope(self, nonce: bytes, sealed: bytes, aad: bytes | None) -> bytes:
        """The plaintext of ``sealed`` under whichever key opens it; ``BadMessage("auth")``."""
        if len(nonce) != NONCE_BYTES or len(sealed) < TAG_BYTES:
            raise BadMessage("auth", "too short to be sealed")
        for aead in self._aeads:
            try:
                return aead.decrypt(nonce, sealed, aad)
            except InvalidTag:
                continue
        raise BadMessage("auth", "no key opens it")

    def can_open_from(self, other: Keyring | None) -> bool:
        """Would this keyring open what ``other`` seals? (The simulated network's TCP model.)"""
        return other is not None and other.fingerprints[0] in self.fingerprints


def load_keyring(path: str | os.PathLike[str]) -> Keyring:
    """Read a keyring file: one key per line, base64 of 16, 24 or 32 bytes; the first seals.

    Blank lines and lines starting with ``#`` are skipped. Raises ``ValueError`` naming the
    file (and the line) for an unreadable, oversized, empty or malformed file.
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"keyring file {name}: cannot read it: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ValueError(f"keyring file {name}: larger than {MAX_FILE_BYTES} bytes")
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise ValueError(f"keyring file {name}: not ASCII text (base64 keys)") from None
    keys: list[bytes] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keys.append(_parse_key(line, f"keyring file {name}, line {lineno}"))
    if not keys:
        raise ValueError(f"keyring file {name}: no key in it")
    if len(keys) > MAX_KEYS:
        raise ValueError(f"keyring file {name}: {len(keys)} keys, at most {MAX_KEYS}")
    return Keyring(keys)


def new_key_line(size: int = 32) -> str:
    """A fresh random key as one line of a keyring file (base64 of ``size`` bytes)."""
    if size not in KEY_SIZES:
        raise ValueError(f"a key is 16, 24 or 32 bytes, not {size}")
    return base64.b64encode(os.urandom(size)).decode("ascii")


def _parse_key(line: str, where: str) -> bytes:
    try:
        key = base64.b64decode(line, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{where}: not base64") from None
    if len(key) not in KEY_SIZES:
        raise ValueError(f"{where}: a key is 16, 24 or 32 bytes, not {len(key)}")
    return key
