"""A namespace's compression lease: on a shared store, which process compresses the namespace.

Several processes may open one namespace with a model (docs/postgres.md). Each keeps its
strategy's tracking in memory, so two of them compressing at once would both write its
summaries. The lease makes one of them the compressor at a time:

* **A session lock, not a record.** The lease of a namespace on a branch is a session lock of
  the store (:meth:`PostgresStore.take_session_lock`: a session-level advisory lock on the
  PostgreSQL server, held by the store's connection, the one that commits). Nothing about it
  enters the log: taking, holding and giving it up write no record. A session that ends frees
  it at once on the server: a holder that crashed (or whose connection was lost, or whose host
  vanished, once the server's keepalives give up on it: about half a minute) leaves the
  namespace to the next process that asks.
* **Taking it.** A unit of compression that may ask the model takes the lease first (one round
  trip, which never waits), or finds it already held here (in memory, no round trip). A
  process that cannot take it does not compress the namespace meanwhile: its drain waits (not a
  failure), following the holder's records as they arrive, and asks again once
  ``ModelPolicy.lease_retry`` seconds (default 1) have passed on the runtime's clock, at its
  next unit: a drain wakes for every write on the branch, and for that retry. The holder's
  release writes nothing, so it is noticed by that retry; so is a crashed holder's session end.
* **Fencing.** Every write a unit makes while holding the lease (strategy state, floor raises)
  carries a guard that refuses it at commit (:class:`LeaseLost`) unless the store's connection
  still holds the lock. The guard runs on the committer, just before the commit is sent on that
  same connection, so a write under the lease commits only through the session that holds the
  lock: a session that ended took its lock with it, and a reconnected store holds nothing until
  a unit takes the lease again. So two processes' unit writes can never both land.
* **Giving it up.** ``drain()`` gives it up once nothing is left to do; so does the last drain of
  the namespace here when it stops between units; so does a unit that failed (the model raised,
  timed out, or was rejected), so that a process whose model answers may take over; and so does
  the namespace actor when it ends (nothing of this process uses the namespace any more). A
  release is in memory at once (later writes under it are refused) and reaches the server with
  the committer's next round. Closing the store ends the session, and with it every lease.

Old stores may hold ``<namespace>/compression-lease`` records, written by earlier versions: they
are ignored (the key stays a namespace's own record, which no strategy may write).

On a store only one process can write (a SQLite file, held with an exclusive lock) the lease is
this process's by construction: nothing is taken and nothing is checked.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, cast

import anyio
import sniffio

if TYPE_CHECKING:
    from ..store._postgres import PostgresStore
    from ..store._store import Store

__all__ = ["CompressionLease", "LeaseLost", "current_task_id", "lease_holders", "lease_name"]

log = logging.getLogger("asides.actors")


def current_task_id() -> int:
    """The current task's id, as ``anyio.get_current_task().id`` gives it, at a fraction of its
    cost (no task record is built): it is asked on every turn."""
    if sniffio.current_async_library() == "trio":
        import trio

        return id(trio.lowlevel.current_task())
    return id(asyncio.current_task())


def lease_name(branch: str, namespace: str) -> str:
    """The name of the session lock that is the compression lease of ``namespace`` on ``branch``."""
    return "compression lease " + json.dumps([branch, namespace])


async def lease_holders(store: Store, namespaces: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Who holds the compression lease of each ``(branch, namespace)`` now, in words (the
    server process and what ``pg_stat_activity`` says of it), for reading tools; a lease nobody
    holds is left out, and on a store file, which records nothing while its process runs, every
    one is."""
    if not store.shared:
        return {}
    wanted = {lease_name(branch, namespace): (branch, namespace) for branch, namespace in namespaces}
    found = await cast("PostgresStore", store).session_lock_holders(wanted)
    return {wanted[name]: holder for name, holder in found.items()}


class LeaseLost(Exception):
    """A write made under the compression lease was refused at commit: the store's connection no
    longer holds the lease (its session ended, or the lease was given up). The write wrote
    nothing."""


class CompressionLease:
    """The compression lease of one namespace on one branch, as this runtime holds it. Part of
    the namespace actor, which calls :meth:`take` and :meth:`release` in its turn."""

    def __init__(self, store: Store, branch: str, namespace: str) -> None:
        self.store = store
        self.branch = branch
        self.namespace = namespace
        self.name = lease_name(branch, namespace)
        self.shared = store.shared
        #: Takes refused because another session held the lease (for tests and measurements).
        self.refusals = 0
        self._next_try = -math.inf  # on the runtime's clock: no take is asked before it
        self._fenced: set[int] = set()  # tasks whose writes carry the fence

    def _locks(self) -> PostgresStore:
        return cast("PostgresStore", self.store)

    def held_here(self) -> bool:
        """Whether this process holds the lease (on a shared store; in memory)."""
        return self.shared and self._locks().holds_session_lock(self.name)

    def wait(self) -> float | None:
        """``None`` when this runtime holds the lease or may ask for it now; else the seconds
        until it asks again."""
        if self.held_here():
            return None
        left = self._next_try - anyio.current_time()
        return left if left > 0 else None

    @property
    def busy(self) -> bool:
        """Whether a task of this process is in a fenced block (a unit under the lease)."""
        return bool(self._fenced)

    # -- taking and giving up (in the namespace actor's turn) ------------------------------------

    async def take(self, retry: float) -> float | None:
        """See :meth:`NamespaceActor.take_lease`."""
        if not self.shared or self.store.read_only or self.held_here():
            return None
        wait = self.wait()
        if wait is not None:
            return wait  # refused lately: the holder's release or end is looked for later
        if await self._locks().take_session_lock(self.name):
            log.debug("compression lease of %r on %r taken", self.namespace, self.branch)
            return None
        self.refusals += 1
        self._next_try = anyio.current_time() + retry
        log.debug("compression lease of %r on %r is held by another process; asking again in %g s", self.namespace, self.branch, retry)
        return retry

    def release(self) -> None:
        """See :meth:`NamespaceActor.release_lease`."""
        if self.held_here():
            self._locks().release_session_lock(self.name)
            self._next_try = -math.inf
            log.debug("compression lease of %r on %r given up", self.namespace, self.branch)

    # -- fencing ---------------------------------------------------------------------------------

    @contextmanager
    def fenced(self) -> Iterator[None]:
        """See :meth:`NamespaceActor.fenced`."""
        me = current_task_id()
        self._fenced.add(me)
        try:
            yield
        finally:
            self._fenced.discard(me)

    def fence(self) -> Callable[[], None] | None:
        """The guard a write of the current task carries: :meth:`check_ours` in a fenced block on
        a shared store, else none."""
        if not self.shared or current_task_id() not in self._fenced:
            return None
        return self.check_ours

    def check_ours(self) -> None:
        """Refuse a write made under the lease unless the store's connection still holds it
        (:class:`LeaseLost`). Runs at commit, on the committer, just before the commit is sent on
        that connection."""
        if not self.held_here():
            raise LeaseLost(
                f"the compression lease of {self.namespace!r} on {self.branch!r} is no longer this process's "
                "(its connection's session ended, or the lease was given up); the write was refused"
            )
