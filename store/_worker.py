"""One dedicated thread that runs the blocking calls sent to it, in the order they were sent.

The store's connections are blocking (``sqlite3``, psycopg's synchronous connection), and each is
used by one thread at a time. A :class:`WorkerThread` owns such a connection's calls: it is
cheaper than starting a call through ``anyio.to_thread`` each time (no thread pool, no capacity
limiter: a queue put, and the event loop woken once the call is done), and calls never overlap.

It works under Trio and asyncio alike: the caller's event loop is woken from the worker with
Trio's token or asyncio's ``call_soon_threadsafe``.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import sniffio

from ._scheduling import shielded

__all__ = ["WorkerThread"]

T = TypeVar("T")

_STOP = object()


def _loop_waker() -> Callable[[Callable[[], object]], None]:
    """A function that runs a callback in the current event loop's thread, callable from any
    thread."""
    if sniffio.current_async_library() == "trio":
        import trio

        token = trio.lowlevel.current_trio_token()

        def wake(callback: Callable[[], object]) -> None:
            try:
                token.run_sync_soon(callback)
            except trio.RunFinishedError:  # pragma: no cover - the run ended meanwhile
                pass

        return wake
    import asyncio

    loop = asyncio.get_running_loop()

    def wake_asyncio(callback: Callable[[], object]) -> None:
        try:
            loop.call_soon_threadsafe(callback)
        except RuntimeError:  # pragma: no cover - the loop closed meanwhile
            pass

    return wake_asyncio


class WorkerThread:
    """A daemon thread running the calls sent with :meth:`run`, one at a time, in order.

    A call that was sent always finishes before its caller goes on: the caller waits for it
    shielded from cancellation, and sees a cancellation only afterwards.
    """

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is _STOP:
                return
            fn, args, finish = job
            try:
                result: tuple[bool, Any] = (True, fn(*args))
            except BaseException as exc:  # handed to the caller, which raises it
                result = (False, exc)
            finish(result)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in the worker thread; returns its result or raises its exception."""
        wake = _loop_waker()
        finished = anyio.Event()
        box: list[tuple[bool, Any]] = []

        def finish(result: tuple[bool, Any]) -> None:
            box.append(result)
            wake(finished.set)

        self._jobs.put((fn, args, finish))
        await shielded(finished.wait)  # past asyncio's own Task.cancel() too
        ok, value = box[0]
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    def run_after(self, fn: Callable[[], object]) -> None:
        """Queue ``fn()`` behind every call sent so far, without waiting for it (for closing a
        connection from the thread that owns it); its errors are ignored."""

        def ignore(_result: tuple[bool, Any]) -> None:
            return None

        self._jobs.put((fn, (), ignore))

    async def stop(self) -> None:
        """Finish the calls sent so far, then end the thread; waits for it."""
        self._jobs.put(_STOP)
        await anyio.to_thread.run_sync(self._thread.join)
