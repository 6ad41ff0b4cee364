"""The one way tests wait: poll a condition until it holds, or fail saying what and why.

Rules:
1. A test waits for a condition, never for a fixed time: ``check()`` gives a value, ``until``
   (by default ``bool``) says whether it is the one awaited.
2. One polling core (``_Poll``) decides whether a value ends the wait, when to look again and
   what to report; ``wait_for`` drives it with ``time.sleep`` (sync tests, playwright's sync
   API, sync fixtures), ``wait_for_async`` with ``trio.sleep`` on trio's clock (trio tests; the
   check may be sync or async).
3. A check that raises one of ``retry_on`` (default ``OSError``, ``ValueError``: a server not
   listening yet, a half-written answer) means "not yet"; any other exception (an
   ``AssertionError`` saying a process died) ends the wait at once.
4. Running out of time raises ``WaitTimeout`` (an ``AssertionError``) naming what was awaited
   and the last value or error the check gave.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar, overload

import trio

__all__ = ["RETRY_ON", "WaitTimeout", "wait_for", "wait_for_async"]

T = TypeVar("T")
RETRY_ON: tuple[type[BaseException], ...] = (OSError, ValueError)


class WaitTimeout(AssertionError):
    """A condition did not hold in time; the message names it and the last value seen."""


@dataclass
class _Poll:
    """The state of one wait: what for, until when (on the caller's clock), the last answer."""

    what: str
    timeout: float
    interval: float
    deadline: float
    retry_on: tuple[type[BaseException], ...]
    until: Callable[[Any], bool]
    last: Any = None

    def holds(self, value: Any) -> bool:
        self.last = value
        return self.until(value)

    @contextlib.contextmanager
    def looking(self) -> Iterator[None]:
        """Around one look: an exception of ``retry_on`` is remembered, not raised."""
        try:
            yield
        except self.retry_on as exc:
            self.last = exc

    def pause(self, now: float) -> float:
        """Seconds to sleep before the next look; WaitTimeout once the deadline has passed."""
        if now >= self.deadline:
            raise WaitTimeout(
                f"timed out after {self.timeout:g}s waiting for {self.what} (last: {self.last!r})"
            )
        return min(self.interval, self.deadline - now)


def wait_for(
    what: str,
    check: Callable[[], T | None],
    *,
    timeout: float = 30.0,
    interval: float = 0.05,
    retry_on: tuple[type[BaseException], ...] = RETRY_ON,
    until: Callable[[Any], bool] = bool,
) -> T:
    """Call ``check()`` until ``until(value)`` holds (by default: the value is truthy) and
    return that value; ``what`` says what is awaited, for the error. ``timeout`` and
    ``interval`` are seconds."""
    poll = _Poll(what, timeout, interval, time.monotonic() + timeout, retry_on, until)
    while True:
        with poll.looking():
            value = check()
            if poll.holds(value):
                return value  # type: ignore[return-value]  # ``until`` accepted it
        time.sleep(poll.pause(time.monotonic()))


@overload
async def wait_for_async(
    what: str,
    check: Callable[[], Awaitable[T | None]],
    *,
    timeout: float = ...,
    interval: float = ...,
    retry_on: tuple[type[BaseException], ...] = ...,
    until: Callable[[Any], bool] = ...,
) -> T: ...


@overload
async def wait_for_async(
    what: str,
    check: Callable[[], T | None],
    *,
    timeout: float = ...,
    interval: float = ...,
    retry_on: tuple[type[BaseException], ...] = ...,
    until: Callable[[Any], bool] = ...,
) -> T: ...


async def wait_for_async(
    what: str,
    check: Callable[[], Any],
    *,
    timeout: float = 30.0,
    interval: float = 0.05,
    retry_on: tuple[type[BaseException], ...] = RETRY_ON,
    until: Callable[[Any], bool] = bool,
) -> Any:
    """``wait_for`` in a trio task: sleeps with ``trio.sleep`` and awaits an async check."""
    poll = _Poll(what, timeout, interval, trio.current_time() + timeout, retry_on, until)
    while True:
        with poll.looking():
            value = check()
            if inspect.isawaitable(value):
                value = await value
            if poll.holds(value):
                return value
        await trio.sleep(poll.pause(trio.current_time()))
