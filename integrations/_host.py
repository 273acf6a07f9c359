"""A runtime of its own, on a thread of its own, shared by the integration objects of one store.

``AsidesSession("conversation", "room.db")`` (OpenAI Agents) and ``AsidesSessionService("room.db")``
(Google ADK) are built the way their frameworks' own sessions are: from a path, with no event
loop at hand, and called from whatever loop the framework runs (``Runner.run_sync`` and ADK's
``Runner.run`` start a fresh loop per call). They need a runtime, and a runtime lives in an event
loop. So the objects of one store share a :class:`ThreadHost`: a daemon thread running Trio
(asides's reference backend), with the runtime over that store and a task group for their calls
(see ``_loop``). The callers' own event loops never host the runtime, so a program that uses the
framework (``asyncio.run``, ``Runner.run_sync``) keeps plain asyncio.

**Why one piece of module state.** A store file is held by one runtime at a time (a second open
is refused, in this process as in another), and a session is an independent object built from a
path. So two objects built from the same path must find the one runtime that holds it: the
process-wide registry :data:`_HOSTS`, keyed by the resolved path (a store URL by itself) and
reference counted. The first
object on a path starts its host; the last ``close()`` stops it (closing the runtime and the
store) and removes it. ``":memory:"`` is never shared: each object built with it gets a private
in-memory store, as the SDK's ``SQLiteSession`` does.
"""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import attrs
import trio

from ..actors._runtime import Runtime, open_runtime
from ..store._errors import StoreLockedError
from ._loop import LoopHandle, RuntimeClosedError

__all__ = ["ThreadHost", "acquire_host", "release_host"]

MEMORY = ":memory:"


class ThreadHost:
    """A runtime over ``path`` in a Trio loop on a daemon thread. Made by :func:`acquire_host`."""

    def __init__(self, path: str, key: str | None, *, hint: str | None = None) -> None:
        self.path = path
        self.key = key  # the registry key, or None for a private in-memory store
        self.users = 1
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._runtime: Runtime | None = None
        self._loop: LoopHandle | None = None
        self._stop: trio.Event | None = None
        self._thread = threading.Thread(target=self._main, name=f"asides integration host: {path}", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            self._thread.join()
            if isinstance(self._failure, StoreLockedError):
                raise StoreLockedError(self._failure.path, hint=hint) from None
            raise self._failure

    @property
    def runtime(self) -> Runtime:
        assert self._runtime is not None
        return self._runtime

    @property
    def loop(self) -> LoopHandle:
        assert self._loop is not None
        return self._loop

    def loop_as(self, closed: type[RuntimeClosedError]) -> LoopHandle:
        """The host's loop, raising ``closed`` (an integration's own error) once it no longer runs."""
        return attrs.evolve(self.loop, closed=closed)

    def _main(self) -> None:
        try:
            trio.run(self._serve)
        except BaseException as exc:  # reported to the constructor when it failed to start
            if not self._ready.is_set():
                self._failure = exc
                self._ready.set()

    async def _serve(self) -> None:
        async with open_runtime(self.path) as runtime:
            async with anyio.create_task_group() as calls:
                self._runtime = runtime
                self._loop = LoopHandle.here(calls.start_soon)
                self._stop = trio.Event()
                self._ready.set()
                await self._stop.wait()
                calls.cancel_scope.cancel()

    def stop(self) -> None:
        """Close the runtime (every manager, the store) and end the thread; waits for both."""
        if self._stop is not None and self._thread.is_alive():
            try:
                self.loop.native.run_sync_soon(self._stop.set)
            except trio.RunFinishedError:
                pass  # the loop already ended
        self._thread.join()


_HOSTS: dict[str, ThreadHost] = {}
"""The hosts of store files, by resolved path (see the module docstring)."""
_HOSTS_LOCK = threading.Lock()


def acquire_host(db_path: str | Path, *, hint: str | None = None) -> ThreadHost:
    """The host of ``db_path``, started when nothing uses it yet; count one more user. ``hint``
    says what to do instead when another runtime holds the store file."""
    if str(db_path) == MEMORY:
        return ThreadHost(MEMORY, None, hint=hint)
    # a store URL (``postgresql://...``) is its own key; a file is keyed by its resolved path
    key = str(db_path) if "://" in str(db_path) else str(Path(db_path).expanduser().resolve())
    with _HOSTS_LOCK:
        host = _HOSTS.get(key)
        if host is not None:
            host.users += 1
            return host
        host = ThreadHost(key, key, hint=hint)
        _HOSTS[key] = host
        return host


def release_host(host: ThreadHost) -> None:
    """Count one user less; the last one stops the host (closing its store) and forgets it."""
    if host.key is None:
        host.stop()
        return
    with _HOSTS_LOCK:  # held while stopping, so a new object on the path waits for the file
        host.users -= 1
        if host.users > 0:
            return
        if _HOSTS.get(host.key) is host:
            del _HOSTS[host.key]
        host.stop()
