"""The running async library's own scheduling and cancel points, looked up once, and waits no
cancellation cuts short.

anyio's ``cancel_shielded_checkpoint`` and ``checkpoint_if_cancelled`` look the running library up
on every call (about 0.4 to 0.8 µs, a few percent of a lone write); a hot path takes the function
once, where it starts, from these. Each keeps anyio's contract: :func:`scheduling_point` lets
other tasks run and is never a cancel point; :func:`cancel_point` raises the pending cancellation,
if any, and otherwise does not yield.

**Native asyncio cancellation.** anyio's shielded scope holds off every cancellation Trio or anyio
delivers, but not asyncio's own ``Task.cancel()`` (a host's ``task.cancel()``, ``asyncio.timeout``,
a ``TaskGroup`` whose sibling failed): that reaches through any shield. A store that let it cut a
commit short would stop (fail-stop) or, at the scheduling point before a commit, leave rows in
memory that never reach the disk. So on asyncio :func:`scheduling_point` and :func:`shielded` take
such a cancellation, finish what they do, and ask for it again once done: the caller sees it at
its next await, as a shielded scope's cancellation would be seen, and a commit once begun always
ends, written or failed on its own account.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

import anyio
import anyio.lowlevel
import sniffio

__all__ = ["Done", "Parking", "cancel_point", "parking", "scheduling_point", "shielded"]

T = TypeVar("T")


def scheduling_point() -> Callable[[], Awaitable[None]]:
    """A scheduling point that is never a cancel point: under Trio its own; under asyncio one
    that a native ``Task.cancel()`` does not cut short either (see the module docstring)."""
    if sniffio.current_async_library() == "trio":
        import trio.lowlevel

        return trio.lowlevel.cancel_shielded_checkpoint
    return _asyncio_scheduling_point


async def shielded(work: Callable[[], Awaitable[T]]) -> T:
    """``await work()``, which no cancellation cuts short: under Trio in a shielded scope; under
    asyncio in a task of its own, which the caller waits for whatever cancellation reaches it,
    asking for that cancellation again once ``work`` is done (see the module docstring).
    ``work``'s own result or exception is the caller's."""
    if sniffio.current_async_library() != "asyncio":
        with anyio.CancelScope(shield=True):
            return await work()
    import asyncio

    job = asyncio.ensure_future(work())
    deferred = False
    try:
        while True:
            try:
                with anyio.CancelScope(shield=True):
                    return await asyncio.shield(job)
            except asyncio.CancelledError:
                if job.cancelled():
                    raise  # the work itself was cancelled: that is its outcome
                deferred = True  # a native cancellation of the caller: the work goes on, or is done
    finally:
        if deferred:
            _ask_again()


async def _asyncio_scheduling_point() -> None:
    import asyncio

    try:
        await anyio.lowlevel.cancel_shielded_checkpoint()
    except asyncio.CancelledError:
        _ask_again()  # a native cancellation: seen at the caller's next await, not here


def _ask_again() -> None:
    """Ask again for the native cancellation this task took, for its next await (the count
    ``Task.cancelling()`` keeps is left as it was, so ``asyncio.timeout`` still knows its own)."""
    import asyncio

    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
        task.cancel()


def cancel_point() -> Callable[[], Awaitable[None]]:
    """A cancel point that yields only when cancelled: under Trio its own, else anyio's."""
    if sniffio.current_async_library() == "trio":
        import trio.lowlevel

        return trio.lowlevel.checkpoint_if_cancelled
    return anyio.lowlevel.checkpoint_if_cancelled


class Parking(Protocol):
    """Tasks that wait, with no cancellation cutting the wait short, until one call releases
    them all (a cancelled task sees its cancellation at its next await, as after a shielded
    wait)."""

    async def park(self) -> None:
        """Wait until :meth:`release` was called (return at once if it was)."""

    def release(self) -> None:
        """Wake every parked task; later ones do not wait. Called once."""


class _TrioParking:
    """Trio's: its own event, waited for in its own shielded cancel scope (anyio's wrappers of
    both cost more than the wait itself), so a waiting task is never cancelled while it waits.
    (Two cheaper waits, a task parked by hand with ``wait_task_rescheduled`` and an unshielded
    wait that takes a cancellation and goes on shielded, each left the long state machines hung
    now and then; docs/DESIGN.md, "Writes and group commit".)"""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        import trio

        self._event = trio.Event()

    async def park(self) -> None:
        if self._event.is_set():
            return
        import trio

        with trio.CancelScope(shield=True):
            await self._event.wait()

    def release(self) -> None:
        self._event.set()


class _EventParking:
    """Any other library's: an event waited for through :func:`shielded`."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = anyio.Event()

    async def park(self) -> None:
        if not self._event.is_set():
            await shielded(self._event.wait)

    def release(self) -> None:
        self._event.set()


def parking() -> Callable[[], Parking]:
    """What makes a :class:`Parking` for the running library (looked up once, by the caller)."""
    if sniffio.current_async_library() == "trio":
        return _TrioParking
    return _EventParking


class Done:
    """Set once, when a commit ended: the tasks that wait for it are parked (:class:`Parking`,
    made only when one waits), so no cancellation cuts the wait short and a write once queued
    is always waited for to its end. ``parking`` is the running library's (:func:`parking`)."""

    __slots__ = ("_parking", "_parked", "_set")

    def __init__(self, parking: Callable[[], Parking]) -> None:
        self._parking = parking
        self._parked: Parking | None = None
        self._set = False

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        """Wake every waiting task; later ones do not wait. Setting it again does nothing."""
        if self._set:
            return
        self._set = True
        if self._parked is not None:
            self._parked.release()

    async def wait(self) -> None:
        """Return once set (at once if it is)."""
        if self._set:
            return
        if self._parked is None:
            self._parked = self._parking()
        await self._parked.park()
