"""YAML that attacks its reader, shared by the hostile tests of every door that reads YAML
(settings files, scenario files, pool configurations)."""

from __future__ import annotations

__all__ = ["ALIAS_BOMB"]

# 342 bytes that expand to 9^9 (387 million) strings when aliases are followed.
ALIAS_BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)
