"""The store ``asides serve`` shows, kept current while a host writes to it.

:class:`Snapshots` holds a read-only runtime over the store (``open_runtime(path,
read_only=True)``): it never writes and never creates a file. What keeps it current:

* **PostgreSQL** stores hear other processes' commits by themselves (``LISTEN/NOTIFY``).
* **SQLite**: a watcher looks at the store file and its ``-wal`` file (inode, size,
  modification time; ``os.stat`` only, so nothing is created) every ``poll_seconds``; when they
  changed, it asks the store to catch up (``store.catch_up()``: one ``SELECT`` of the records
  after the newest it holds, replayed as a PostgreSQL store replays other processes' commits).
  So a host writing one message costs the inspector that one record, whatever the length of
  the history. Only when the store cannot catch up (it was opened while no writer held it, in
  SQLite's ``immutable`` mode, which reads no later commit; the file was replaced; a read
  failed) does the watcher open a new read-only runtime, warm it, make it the current one and
  close the previous one once no request uses it. A reopen costs an open and a start (under
  a second at 200,000 messages, more with many strategy records), so the watcher then waits
  at least as long as it took before it looks again. A host that starts writing to a store no writer held costs one reopen; every later
  change is caught up with.

On both, every store event the current runtime hears clears what was worked out from it
(:attr:`Snapshot.cache`; the managers stay, they catch up by themselves, and so does
:attr:`Snapshot.kept`) and raises :attr:`Snapshots.changed`.

Each new snapshot is warmed (the ``warm`` callback: the log read, the managers opened) before it
becomes the current one, so a page never waits for a reopen: until the new snapshot is ready,
requests read the previous one. A catch-up and a compile take turns (:attr:`Snapshot.lock`), so
a compile reads one state of the store.

A request borrows the current :class:`Snapshot` for its whole length (``async with
snapshots.borrow()``), so it reads one consistent store even while a newer one opens.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc

from ..actors._manager import ContextManager
from ..actors._runtime import Runtime, internal_store, open_runtime
from ..actors._signals import Signal
from ..store._errors import AsidesError

__all__ = ["Snapshot", "Snapshots", "is_url"]

log = logging.getLogger("asides.serve")

#: How many compiling managers one snapshot keeps open for reuse (the oldest is closed first).
MANAGER_CACHE = 16


def is_url(path: str) -> bool:
    """Whether ``path`` names a PostgreSQL store rather than a file (``store._postgres.is_postgres_url``)."""
    from ..store._postgres import is_postgres_url

    return is_postgres_url(path)


def _stamp(path: str) -> tuple[int, ...]:
    """What changes when a commit reaches the SQLite file or its write-ahead log."""
    stamp: list[int] = []
    for name in (path, path + "-wal"):
        try:
            info = os.stat(name)
        except OSError:
            stamp += [-1, -1, -1]
        else:
            stamp += [info.st_ino, info.st_size, info.st_mtime_ns]
    return tuple(stamp)


class Snapshot:
    """One read-only runtime over the store, with what the inspector worked out from it (kept
    as long as the runtime is current): open managers for compiles, and the readers found."""

    def __init__(self, runtime: Runtime, version: int) -> None:
        self.runtime = runtime
        #: Which store this is, counting from 1 at start (one more per reopen).
        self.version = version
        #: Open managers for compiles, by (branch, namespace, reader, strategy name); oldest first.
        self.managers: dict[tuple[str, str, str | None, str], ContextManager] = {}
        #: Anything worked out from the store as it is now (for example the namespaces' report);
        #: cleared on each change (:meth:`forget`).
        self.cache: dict[Any, Any] = {}
        #: What is worked out once and then kept up to date from the changes by its own user
        #: (for example the readers the audiences name, scanned up to a position of the log).
        self.kept: dict[Any, Any] = {}
        #: One more each time :meth:`forget` cleared :attr:`cache`.
        self.generation = 0
        #: Held while a request opens or compiles with one of :attr:`managers`.
        self.lock = anyio.Lock()
        self._users = 0
        self._superseded = False
        self._done = anyio.Event()

    def forget(self) -> None:
        """The store changed under this (live) snapshot: drop what was worked out from it."""
        self.cache.clear()
        self.generation += 1

    def remember(self, key: Any, value: Any, generation: int, *, kind_limit: int = 32) -> None:
        """Keep ``value`` under ``key`` unless the cache was cleared since ``generation`` (when the
        work that made it began); at most ``kind_limit`` keys of the same kind (``key[0]``)."""
        if generation != self.generation:
            return
        same = [k for k in self.cache if isinstance(k, tuple) and isinstance(key, tuple) and k[:1] == key[:1]]
        for old in same[: max(0, len(same) - kind_limit + 1)]:
            del self.cache[old]
        self.cache[key] = value

    def enter(self) -> None:
        self._users += 1

    def leave(self) -> None:
        self._users -= 1
        if self._superseded and self._users == 0:
            self._done.set()

    def supersede(self) -> None:
        """A newer snapshot is current: close this one once no request uses it."""
        self._superseded = True
        if self._users == 0:
            self._done.set()

    async def wait_done(self) -> None:
        await self._done.wait()

    async def remember_manager(self, key: tuple[str, str, str | None, str], manager: ContextManager) -> None:
        """Keep ``manager`` for reuse, closing the oldest kept one past :data:`MANAGER_CACHE`."""
        self.managers[key] = manager
        while len(self.managers) > MANAGER_CACHE:
            oldest = next(iter(self.managers))
            await self.managers.pop(oldest).aclose()


class Snapshots:
    """The current snapshot of the store at ``path`` and the signal of its changes. Use
    :meth:`open` (an async context manager): it opens the store (raising what ``open_runtime``
    raises when it cannot) and runs the watcher for the block."""

    def __init__(self, path: str, *, poll_seconds: float = 0.25, warm: Callable[[Snapshot], Awaitable[None]] | None = None) -> None:
        self.path = path
        self.poll_seconds = poll_seconds
        self._warm = warm
        #: Raised on every change of the store the inspector can see.
        self.changed = Signal()
        self._current: Snapshot | None = None
        self._version = 0

    @classmethod
    @asynccontextmanager
    async def open(
        cls, path: str, *, poll_seconds: float = 0.25, warm: Callable[[Snapshot], Awaitable[None]] | None = None
    ) -> AsyncIterator[Snapshots]:
        """``warm`` is awaited on each new snapshot before it becomes the current one (so that
        the first request after a start or a reopen finds the work of reading the log done)."""
        made = cls(path, poll_seconds=poll_seconds, warm=warm)
        before_open = None if is_url(path) else _stamp(path)  # a commit during the open is a change
        async with anyio.create_task_group() as tasks:
            made._current = await tasks.start(made._hold)
            if before_open is not None:
                tasks.start_soon(made._watch, tasks, before_open)
            try:
                yield made
            finally:
                tasks.cancel_scope.cancel()

    def _heard(self, snapshot: Snapshot) -> None:
        """The store under ``snapshot``'s (live) runtime changed: what was worked out from it
        is forgotten (the managers stay: they catch up by themselves)."""
        snapshot.forget()
        if snapshot is self._current:
            self.changed.raise_()

    @property
    def current(self) -> Snapshot:
        assert self._current is not None, "Snapshots.open() was not entered"
        return self._current

    @asynccontextmanager
    async def borrow(self) -> AsyncIterator[Snapshot]:
        """The current snapshot, kept open until the block ends."""
        snapshot = self.current
        snapshot.enter()
        try:
            yield snapshot
        finally:
            snapshot.leave()

    async def _hold(self, *, task_status: anyio.abc.TaskStatus[Snapshot] = anyio.TASK_STATUS_IGNORED) -> None:
        """Open one read-only runtime, hand it over, and keep it open until it is superseded
        and unused (or the inspector stops)."""
        async with open_runtime(self.path, read_only=True) as runtime:
            self._version += 1
            snapshot = Snapshot(runtime, self._version)
            unlisten = internal_store(runtime).add_listener(lambda _event: self._heard(snapshot))
            try:
                if self._warm is not None:
                    await self._warm(snapshot)
                task_status.started(snapshot)
                await snapshot.wait_done()
            finally:
                unlisten()

    async def _catch_up(self, snapshot: Snapshot) -> bool:
        """Bring ``snapshot``'s store up to the file (see the module docstring); ``False`` when
        it cannot be (then open the store again)."""
        try:
            async with snapshot.lock:
                await snapshot.runtime.store.catch_up()
        except AsidesError as exc:
            log.info("cannot catch up with %s (%s); opening it again", self.path, exc)
            return False
        return True

    async def _watch(self, tasks: anyio.abc.TaskGroup, seen: tuple[int, ...]) -> None:
        """Catch the SQLite store up whenever its files changed from ``seen`` (as they were
        before the open), or reopen it when it cannot be caught up with (see the module
        docstring)."""
        pause = self.poll_seconds
        while True:
            await anyio.sleep(pause)
            stamp = _stamp(self.path)
            if stamp == seen:
                continue
            same_file = stamp[0] == seen[0] != -1
            seen = stamp  # taken before the read: a commit made during it is seen next time
            started = time.monotonic()
            if same_file and await self._catch_up(self.current):
                pause = max(self.poll_seconds, time.monotonic() - started)
                continue
            try:
                fresh: Snapshot = await tasks.start(self._hold)
            except AsidesError as exc:  # e.g. a checkpoint mid-way; the previous snapshot stays
                log.warning("could not reopen %s to show its changes (showing the previous state): %s", self.path, exc)
                continue
            previous, self._current = self._current, fresh
            if previous is not None:
                previous.supersede()
            self.changed.raise_()
            pause = max(self.poll_seconds, time.monotonic() - started)
