"""The one way YAML enters the project: a loader with limits, plain data out, one error type.

Rules:
1. Every YAML text from outside (configuration files, compose requests and files, scenario
   files) goes through ``load`` or ``load_file``; nothing else calls ``yaml.safe_load``.
2. Limits are checked while the text is read, before more work is done: size in bytes
   (``load_file`` never reads past it), nesting depth, number of nodes. Anchors and aliases
   are refused where they appear, so nothing is ever expanded (an alias bomb fails at its
   first ``&``); so are merge keys, duplicate keys and collections used as keys.
3. Only plain data comes out: dict, list, str, int, float, bool, None. A timestamp stays the
   text it was written as; any other tag (``!!binary``, ``!!set``, ``!python/...``, ``!foo``)
   is refused.
4. Every failure is one ``YamlError`` (a ValueError; ``YamlTooLarge`` for the size) with the
   1-based line and column whenever the text has one (the size refusal has none); its message
   starts ``line L, column C: ``. Each caller maps it to its own boundary error (SettingsError,
   a 400 answer, a ScenarioError). ``load_marked`` also tells where each top-level key was
   written, so a caller's later complaint about a value can point at its line too.
5. The document is built from the parser's events (libyaml's C parser when PyYAML has it), in
   one loop with an explicit stack: no recursion, so no depth can overflow the C stack (PyYAML's
   C composer crashes the process on a few thousand nested ``[``).
6. Our limits speak first, whatever libyaml is installed. Newer libyamls refuse deep nesting
   themselves (about 1,000 levels), and since their scanner reads up to 1,024 characters
   ahead, that refusal can come before the builder has seen the first level past
   ``max_depth``. Such a refusal is answered by reading the text up to its mark again with the
   pure-Python parser, which stops at our limit's own line and column (at most about a second
   for a 1 MiB prefix, and only for text a libyaml has already called too deep).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml
from yaml import events as ev
from yaml.nodes import ScalarNode

__all__ = [
    "DEFAULT_LIMITS",
    "KeyMarks",
    "Limits",
    "YamlError",
    "YamlTooLarge",
    "load",
    "load_file",
    "load_marked",
]

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_TAG = "tag:yaml.org,2002:"
_PLAIN_MAP = (None, "!", _TAG + "map")
_PLAIN_SEQ = (None, "!", _TAG + "seq")

KeyMarks = dict[Any, tuple[int, int]]  # a top-level key -> (line, column), counted from 1


@dataclass(frozen=True, slots=True)
class Limits:
    """What one document may hold: ``max_bytes`` of UTF-8 text, collections nested at most
    ``max_depth`` deep, at most ``max_nodes`` scalars and collections in all."""

    max_bytes: int = 1 << 20
    max_depth: int = 32
    max_nodes: int = 100_000


DEFAULT_LIMITS = Limits()


class YamlError(ValueError):
    """YAML that is malformed or outside the limits; ``line`` and ``column`` count from 1."""

    def __init__(self, problem: str, line: int | None = None, column: int | None = None) -> None:
        where = f"line {line}, column {column}: " if line is not None else ""
        super().__init__(f"{where}{problem}")
        self.problem = problem
        self.line = line
        self.column = column


class YamlTooLarge(YamlError):
    """A document larger than ``Limits.max_bytes`` (refused before it is parsed)."""


def load_file(path: str | os.PathLike[str], limits: Limits = DEFAULT_LIMITS) -> Any:
    """The plain data of the YAML file at ``path``, read up to ``limits.max_bytes`` (a larger
    file is a YamlError without reading the rest). OSError when it cannot be read."""
    with open(path, "rb") as f:
        data = f.read(limits.max_bytes + 1)
    return load(data, limits)


def load(text: str | bytes, limits: Limits = DEFAULT_LIMITS) -> Any:
    """The plain data of one YAML document (None for an empty one); YamlError otherwise."""
    return load_marked(text, limits)[0]


def load_marked(text: str | bytes, limits: Limits = DEFAULT_LIMITS) -> tuple[Any, KeyMarks]:
    """``load``, and where each key of the top-level mapping was written (empty when the
    document is not a mapping)."""
    if isinstance(text, str):
        if len(text) > limits.max_bytes:  # a character is one byte at least
            raise _too_large(limits)
        chars = text
        try:
            text = chars.encode("utf-8")
        except UnicodeEncodeError as exc:
            line, column = _line_column(chars[: exc.start])
            raise YamlError(f"not UTF-8 text: {exc.reason}", line, column) from None
    if len(text) > limits.max_bytes:
        raise _too_large(limits)
    try:
        return _build(_Loader, text, limits)
    except _TooDeepForLibyaml as refusal:
        raise _depth_refusal(text, refusal.error, limits) from None


class _TooDeepForLibyaml(Exception):
    """libyaml's own nesting limit spoke (rule 6); ``error`` is its refusal in our words."""

    def __init__(self, error: YamlError) -> None:
        self.error = error


def _build(loader_type: type[yaml.SafeLoader], text: bytes, limits: Limits) -> tuple[Any, KeyMarks]:
    loader = loader_type(text)
    builder = _Builder(loader, limits)
    try:
        return builder.document(), builder.marks
    except yaml.MarkedYAMLError as exc:
        error = _marked(exc)
        if "maximum nesting depth" in (exc.problem or ""):
            raise _TooDeepForLibyaml(error) from None
        raise error from None
    except yaml.reader.ReaderError as exc:  # bad encoding, a control character
        line, column = _line_column(text[: exc.position].decode("utf-8", "replace"))
        raise YamlError(exc.reason, line, column) from None
    except yaml.YAMLError as exc:  # pragma: no cover - the parser's errors carry marks
        raise YamlError(" ".join(str(exc).split())) from None
    finally:
        loader.dispose()


def _depth_refusal(text: bytes, libyaml: YamlError, limits: Limits) -> YamlError:
    """Our own refusal of a text libyaml found too deeply nested: the pure-Python parser reads
    it again up to libyaml's mark, where our depth (or node) limit speaks at its own place. A
    libyaml whose limit were below ours would leave that prefix whole: then its mark stands."""
    if libyaml.line is None or libyaml.column is None:  # pragma: no cover - libyaml marks it
        return libyaml
    # A prefix cut at the wrong place (text in UTF-16, lines broken by CR alone) only means the
    # second reading ends without our refusal, and libyaml's mark stands.
    chars = text.decode("utf-8", "replace")
    lines = chars.split("\n", libyaml.line - 1)
    end = len(chars) - len(lines[-1]) + libyaml.column
    try:
        _build(yaml.SafeLoader, chars[:end].encode("utf-8"), limits)
    except YamlError as ours:
        if ours.problem.startswith(("nested deeper", "more than")):
            return ours
    return YamlError(f"nested deeper than {limits.max_depth} levels", libyaml.line, libyaml.column)


def _line_column(before: str) -> tuple[int, int]:
    """The 1-based line and column of the character after ``before``."""
    return before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1


def _too_large(limits: Limits) -> YamlError:
    return YamlTooLarge(f"larger than {limits.max_bytes} bytes")


def _marked(exc: yaml.MarkedYAMLError) -> YamlError:
    mark = exc.problem_mark or exc.context_mark
    problem = " ".join(p for p in (exc.context, exc.problem) if p) or "not valid YAML"
    if mark is None:
        return YamlError(problem)
    return YamlError(problem, mark.line + 1, mark.column + 1)


def _fail(event: ev.Event, problem: str) -> YamlError:
    mark = event.start_mark
    if mark is None:  # pragma: no cover - the parsers mark every event
        return YamlError(problem)
    return YamlError(problem, mark.line + 1, mark.column + 1)


_NO_KEY = object()


class _Frame:
    """A collection being built: a list, or a dict and the key waiting for its value."""

    __slots__ = ("items", "key", "start")

    def __init__(self, items: list[Any] | dict[Any, Any], start: ev.Event) -> None:
        self.items = items
        self.key: Any = _NO_KEY
        self.start = start  # where errors about the whole collection point


class _Builder:
    """Plain data from the loader's events, checking the limits as they come."""

    def __init__(self, loader: yaml.SafeLoader, limits: Limits) -> None:
        self.loader = loader
        self.next_event: Callable[[], ev.Event] = loader.get_event
        self.resolve: Callable[[type, str, tuple[bool, bool]], str] = loader.resolve
        self.limits = limits
        self.nodes = 0
        self.marks: KeyMarks = {}

    def document(self) -> Any:
        self._expect(ev.StreamStartEvent)
        event = self.next_event()
        if isinstance(event, ev.StreamEndEvent):
            return None
        if not isinstance(event, ev.DocumentStartEvent):  # pragma: no cover - parser's order
            raise _fail(event, "expected a document")
        value = self._value()
        self._expect(ev.DocumentEndEvent)
        event = self.next_event()
        if not isinstance(event, ev.StreamEndEvent):
            raise _fail(event, "expected one document, found another ('---')")
        return value

    def _expect(self, kind: type[ev.Event]) -> None:
        event = self.next_event()
        if not isinstance(event, kind):  # pragma: no cover - the parser keeps this order
            raise _fail(event, f"expected {kind.__name__}")

    def _value(self) -> Any:
        """One node and everything under it, built with an explicit stack."""
        stack: list[_Frame] = []
        while True:
            event = self.next_event()
            value = self._event(event, stack)
            if value is _NO_KEY:
                continue  # a collection was opened
            while True:
                if not stack:
                    return value
                top = stack[-1]
                if value is _END:
                    stack.pop()
                    value, event = top.items, top.start
                    continue
                if len(stack) == 1 and isinstance(top.items, dict) and top.key is _NO_KEY:
                    self._mark(value, event)
                _add(top, value, event)
                break

    def _mark(self, key: Any, event: ev.Event) -> None:
        """Remember where a top-level key was written (a collection key is refused later)."""
        mark = event.start_mark
        if mark is not None and not isinstance(key, list | dict):
            self.marks[key] = (mark.line + 1, mark.column + 1)

    def _event(self, event: ev.Event, stack: list[_Frame]) -> Any:
        """A scalar's value, ``_END`` for a collection's end, ``_NO_KEY`` after a start."""
        if isinstance(event, ev.SequenceEndEvent | ev.MappingEndEvent):
            return _END
        if isinstance(event, ev.AliasEvent):
            raise _fail(event, f"aliases (*{event.anchor}) are not allowed")
        assert isinstance(event, ev.NodeEvent)
        if event.anchor is not None:
            raise _fail(event, f"anchors (&{event.anchor}) are not allowed")
        self.nodes += 1
        if self.nodes > self.limits.max_nodes:
            raise _fail(event, f"more than {self.limits.max_nodes} values")
        if isinstance(event, ev.ScalarEvent):
            return self._scalar(event)
        if len(stack) >= self.limits.max_depth:
            raise _fail(event, f"nested deeper than {self.limits.max_depth} levels")
        if isinstance(event, ev.MappingStartEvent):
            if event.tag not in _PLAIN_MAP:
                raise _fail(event, f"tag {event.tag} is not allowed")
            stack.append(_Frame({}, event))
        elif isinstance(event, ev.SequenceStartEvent):
            if event.tag not in _PLAIN_SEQ:
                raise _fail(event, f"tag {event.tag} is not allowed")
            stack.append(_Frame([], event))
        else:  # pragma: no cover - every node event is one of the three
            raise _fail(event, "unexpected event")
        return _NO_KEY

    def _scalar(self, event: ev.ScalarEvent) -> Any:
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.resolve(ScalarNode, event.value, event.implicit)
        kind = tag.removeprefix(_TAG) if tag.startswith(_TAG) else tag
        if kind in ("str", "timestamp", "value"):
            return event.value  # a date stays the text it was written as
        if kind == "merge":
            raise _fail(event, "merge keys (<<) are not allowed")
        if kind not in _CONSTRUCTED:
            raise _fail(event, f"tag {tag} is not allowed")
        construct = getattr(self.loader, f"construct_yaml_{kind}")
        try:
            return construct(ScalarNode(tag, event.value))
        except Exception:  # PyYAML's converters assume resolved text: '!!int' alone is IndexError
            raise _fail(event, f"not a valid {kind}: {event.value[:40]!r}") from None


_END = object()

_CONSTRUCTED = ("null", "bool", "int", "float")  # by PyYAML's own SafeConstructor methods


def _add(frame: _Frame, value: Any, event: ev.Event) -> None:
    """Put ``value`` in the open collection: an item, a mapping's key, or its value."""
    items = frame.items
    if isinstance(items, list):
        items.append(value)
        return
    if frame.key is _NO_KEY:
        if isinstance(value, list | dict):
            raise _fail(event, "a mapping key must be a scalar, not a collection")
        if value in items:
            raise _fail(event, f"duplicate key {str(value)[:40]!r}")
        frame.key = value
        return
    items[frame.key] = value
    frame.key = _NO_KEY
