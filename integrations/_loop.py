"""Running an integration's work in the event loop its runtime lives in, from any loop or thread.

Shared by the three integrations: the OpenAI Agents session's loop (``openai_agents/_loop.py``)
is this one, raising its own :class:`RuntimeClosedError` subclass.

A runtime (its store, actors and managers) belongs to one event loop in one thread. A framework
calls an integration from wherever its agent runs: the runtime's own asyncio loop (``ainvoke``,
``agent.run``), or a synchronous call (``invoke``, ``run_sync``) in another thread. :class:`LoopHandle`
names the runtime's loop (asyncio's loop object or Trio's token, a function that starts a task in
a task group of that loop, and the loop's thread) and runs a coroutine function there:

* called on the loop's own thread, it simply awaits it;
* called from anywhere else, it starts a task in the runtime's task group and awaits a
  ``concurrent.futures.Future`` the task completes. The hop into the loop never blocks: a Trio
  loop takes it through ``TrioToken.run_sync_soon``, an asyncio loop through
  ``call_soon_threadsafe`` of a callback, in a fresh context (the caller's, a Trio run's say,
  must not come along), that makes a one-step task which starts it. The caller
  waits the way its own loop waits: ``asyncio.wrap_future`` under asyncio, a ``trio.Event`` woken
  through the caller's Trio token under Trio, a worker thread otherwise.

A caller cancelled while it waits stops waiting; work already started finishes in the runtime's
loop (a write is never left half done), and work not yet started is not started. Called on the
loop's own thread, :meth:`LoopHandle.run` simply awaits (a cancelled caller cancels its work);
:meth:`LoopHandle.finish`, for writes, starts a task there too, so a batch of writes is never
left half done by a cancelled caller, wherever it was called from.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Literal, TypeVar

import anyio.to_thread
import attrs
import sniffio

from ..store._errors import AsidesError

__all__ = ["LoopHandle", "RuntimeClosedError", "wait_future"]

T = TypeVar("T")


class RuntimeClosedError(AsidesError, RuntimeError):
    """An integration was used after the runtime it works in closed."""


async def wait_future(future: concurrent.futures.Future[T]) -> T:
    """Wait for ``future`` without blocking the caller's event loop (asyncio or Trio)."""
    try:
        library = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        library = None
    if library == "asyncio":
        return await asyncio.wrap_future(future)
    if library == "trio":
        import trio

        token = trio.lowlevel.current_trio_token()
        done = trio.Event()

        def wake(_: object) -> None:
            try:
                token.run_sync_soon(done.set)
            except trio.RunFinishedError:
                pass  # the caller's run ended while it waited

        future.add_done_callback(wake)
        await done.wait()
        return future.result()
    return await anyio.to_thread.run_sync(future.result)


Spawn = Callable[[Callable[[], Coroutine[Any, Any, None]]], object]


@attrs.frozen
class LoopHandle:
    """The event loop a runtime lives in (see the module docstring)."""

    kind: Literal["asyncio", "trio"]
    native: Any  # the asyncio loop, or the Trio token
    spawn: Spawn
    thread: int
    #: What a call raises when the loop no longer runs (an integration may name its own).
    closed: type[RuntimeClosedError] = RuntimeClosedError

    @classmethod
    def here(cls, spawn: Spawn, *, closed: type[RuntimeClosedError] = RuntimeClosedError) -> LoopHandle:
        """The loop this is called in; ``spawn`` starts a task in a task group of it."""
        if sniffio.current_async_library() == "trio":
            import trio

            return cls("trio", trio.lowlevel.current_trio_token(), spawn, threading.get_ident(), closed)
        return cls("asyncio", asyncio.get_running_loop(), spawn, threading.get_ident(), closed)

    @property
    def on_loop_thread(self) -> bool:
        return threading.get_ident() == self.thread

    def _job(self, fn: Callable[[], Awaitable[T]]) -> tuple[concurrent.futures.Future[T], Callable[[], Coroutine[Any, Any, None]]]:
        """A task running ``fn`` (unless its caller stopped waiting before it started), and the
        future that holds its outcome."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        async def job() -> None:
            if not future.set_running_or_notify_cancel():
                return  # the caller stopped waiting before it started
            try:
                result = await fn()
            except Exception as exc:
                future.set_exception(exc)
            except BaseException:
                future.set_exception(self.closed("the runtime closed while the call ran"))
                raise
            else:
                future.set_result(result)

        return future, job

    def submit(self, fn: Callable[[], Awaitable[T]]) -> concurrent.futures.Future[T]:
        """Start ``fn`` in the loop from another thread; the future holds its outcome. Raises
        ``closed`` (a :class:`RuntimeClosedError`) when the loop no longer runs."""
        future, job = self._job(fn)
        try:
            if self.kind == "trio":
                self.native.run_sync_soon(self.spawn, job)
            else:
                loop: asyncio.AbstractEventLoop = self.native

                async def hop() -> None:
                    self.spawn(job)

                def start() -> None:
                    loop.create_task(hop())

                # A fresh context: the caller's (a Trio run's, say) must not come along.
                loop.call_soon_threadsafe(start, context=contextvars.Context())
        except RuntimeError as exc:  # the loop finished (Trio's RunFinishedError is one too)
            raise self.closed(f"the runtime is closed ({exc})") from None
        return future

    async def run(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn`` in the loop and return its result, from any loop or thread."""
        if self.on_loop_thread:
            return await fn()
        return await wait_future(self.submit(fn))

    async def finish(self, fn: Callable[[], Awaitable[T]]) -> T:
        """As :meth:`run`, for work that must not stop half done (a batch of writes): once
        started it runs to its end in the loop, even when it was called on the loop's own thread
        and the caller is cancelled meanwhile (the caller stops waiting, as from anywhere else)."""
        if not self.on_loop_thread:
            return await wait_future(self.submit(fn))
        future, job = self._job(fn)
        self.spawn(job)
        return await wait_future(future)

    def run_blocking(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn`` in the loop and wait for it, blocking this thread (not the loop's own)."""
        if self.on_loop_thread:
            raise RuntimeError("run_blocking would wait for its own event loop; await run() instead")
        return self.submit(fn).result()
