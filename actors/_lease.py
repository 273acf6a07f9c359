"""A namespace's compression lease: on a shared store, which process compresses the namespace.

Several processes may open one namespace with a model (docs/postgres.md). Each keeps its
strategy's tracking in memory, so two of them compressing at once would both write its
summaries. The lease makes one of them the compressor at a time:

* **The record.** ``<namespace>/compression-lease`` on the branch holds ``{"holder": <id>,
  "seconds": <length>, "branch": <branch>, "written_at": <epoch seconds>}``; ``holder`` is a
  random id per runtime (``null`` once released). ``written_at`` is for people reading the
  store; no decision uses it. A lease a branch inherited from its parent (``branch`` names the
  parent) binds nobody on the child, and neither does a lease written before the namespace's
  reader claim (its compression was for no reader, and stopped with the claim).
* **Taking it.** A unit of compression takes (or renews) the lease first, with a guarded write
  that passes, at commit under the store's write lock, when the stored lease is absent,
  released, this runtime's own, unreadable, or expired. A process that cannot take it does not
  compress the namespace meanwhile: its drain waits (not a failure).
* **Expiry, on each process's own clock.** A lease another process holds expires once this
  process has seen that same record (the same record id: a renewal is a new record) for its
  ``seconds``, measured on the runtime's monotonic clock from when it first saw it. So no
  two hosts' clocks are compared; a process only has to see records no sooner than they were
  written, which it cannot do otherwise. The holder counts its own lease from before it wrote it,
  so it always believes its lease ends before the others do.
* **Fencing.** Every write a unit makes while holding the lease (strategy state, floor raises)
  carries a guard that refuses it at commit unless the stored lease still names this runtime
  (:class:`LeaseLost`). So a holder that stalled past its lease, whose lease another process
  took, writes nothing more, whatever the clocks say: the clocks decide only when a takeover may
  happen, never whether two processes' writes can both land.

On a store only one process can write (a SQLite file, held with an exclusive lock) the lease is
this process's by construction: nothing is written and nothing is checked.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import anyio
import sniffio

from ..store._model import MISSING

if TYPE_CHECKING:
    from ..store._sqlite import SqliteStore

__all__ = ["CompressionLease", "LeaseHeldElsewhere", "LeaseLost", "current_task_id", "new_holder_id", "is_shared_store"]

log = logging.getLogger("asides.actors")


def new_holder_id() -> str:
    """A runtime's lease-holder id: its process id (for people) and 64 random bits."""
    return f"pid{os.getpid()}-{secrets.token_hex(8)}"


def current_task_id() -> int:
    """The current task's id, as ``anyio.get_current_task().id`` gives it, at a fraction of its
    cost (no task record is built): it is asked on every turn."""
    if sniffio.current_async_library() == "trio":
        import trio

        return id(trio.lowlevel.current_task())
    return id(asyncio.current_task())


def is_shared_store(store: SqliteStore) -> bool:
    """Whether other processes may write ``store`` (a PostgreSQL store) rather than this
    process alone (a store file, which one process holds with an exclusive lock)."""
    from ..store._postgres import PostgresStore  # no driver is imported by this

    return isinstance(store, PostgresStore)


class LeaseHeldElsewhere(Exception):
    """Another process holds the compression lease (a take refused at commit)."""

    def __init__(self, holder: str, wait: float) -> None:
        super().__init__(f"the compression lease is held by {holder!r} for up to {wait:.1f} s more")
        self.holder = holder
        self.wait = wait


class LeaseLost(Exception):
    """A write made under the compression lease was refused at commit: another process took the
    lease over (this one stalled past it, or released it). The write wrote nothing."""


class CompressionLease:
    """The compression lease of one namespace on one branch, as this runtime sees it. Part of
    the namespace actor, which calls :meth:`take` and :meth:`release` in its turn."""

    def __init__(self, store: SqliteStore, branch: str, key: str, holder: str, *, claim_key: str) -> None:
        self.store = store
        self.branch = branch
        self.key = key
        self.holder = holder
        self._claim_key = claim_key
        self.shared = is_shared_store(store)
        #: The stored lease record this runtime has seen (its record id) and when it first did.
        self._seen: tuple[int | None, float] | None = None
        self._fenced: set[int] = set()  # tasks whose writes carry the fence

    # -- what is stored --------------------------------------------------------------------------

    def _stored(self) -> tuple[str | None, float]:
        """``(holder, seconds)`` of the stored lease; ``(None, 0)`` when absent, released,
        inherited from a parent branch, older than the reader claim, or unreadable (an
        unreadable lease is taken over: it cannot bar compression for ever)."""
        model = self.store.model
        value: Any = model.get_state(self.branch, self.key)
        if value is MISSING or not isinstance(value, dict) or value.get("branch") != self.branch:
            return None, 0.0
        holder, seconds = value.get("holder"), value.get("seconds")
        if not isinstance(holder, str) or not holder:
            return None, 0.0
        claimed = model.state_record_id(self.branch, self._claim_key)
        if claimed is not None and claimed > (model.state_record_id(self.branch, self.key) or 0):
            return None, 0.0
        if not isinstance(seconds, int | float) or isinstance(seconds, bool) or not seconds > 0:
            return None, 0.0
        return holder, float(seconds)

    def observe(self) -> float:
        """Note the stored record if it is new to this runtime; how long this runtime has seen it.

        A record that names this runtime but that this object did not write (the namespace's
        actor ended while the lease was held, and started again) has run out by this process's
        own count: it is renewed before the next unit, so the holder still believes its lease
        ends before any other process does."""
        record_id = self.store.model.state_record_id(self.branch, self.key)
        now = anyio.current_time()
        if self._seen is None or self._seen[0] != record_id:
            self._seen = (record_id, -math.inf if self._stored()[0] == self.holder else now)
        return now - self._seen[1]

    @property
    def holder_seen(self) -> str | None:
        """The holder the stored lease names (``None``: nobody)."""
        return self._stored()[0]

    def held_here(self) -> bool:
        """Whether the stored lease names this runtime."""
        return self._stored()[0] == self.holder

    def wait(self) -> float | None:
        """``None`` when this runtime may take the lease now (nobody holds it, it is this
        runtime's, or it expired); else the seconds until it expires, as this runtime sees it."""
        holder, seconds = self._stored()
        age = self.observe()
        if holder is None or holder == self.holder or age >= seconds:
            return None
        return seconds - age

    @property
    def busy(self) -> bool:
        """Whether a task of this process is in a fenced block (a unit under the lease)."""
        return bool(self._fenced)

    def left(self) -> float:
        """Seconds left of this runtime's own lease by its own count (0 when not held)."""
        holder, seconds = self._stored()
        if holder != self.holder:
            return 0.0
        return max(0.0, seconds - self.observe())

    # -- writing (in the namespace actor's turn) --------------------------------------------------

    async def take(self, seconds: float, renew_below: float) -> float | None:
        """See :meth:`NamespaceActor.take_lease`."""
        if not self.shared or self.store.read_only:
            return None
        wait = self.wait()
        if wait is not None:
            return wait
        if self.held_here() and self.left() >= renew_below:
            return None
        started = anyio.current_time()
        record = {"holder": self.holder, "seconds": seconds, "branch": self.branch, "written_at": round(time.time(), 3)}
        try:
            await self.store.set_state(self.branch, self.key, record, guard=self.check_free)
        except LeaseHeldElsewhere as exc:  # another process took it first (decided at commit)
            return exc.wait
        # Counted from before the write began: no later than any other process can count it.
        self._seen = (self.store.model.state_record_id(self.branch, self.key), started)
        log.debug("compression lease %s on %r taken for %g s by %s", self.key, self.branch, seconds, self.holder)
        return None

    async def release(self) -> None:
        """See :meth:`NamespaceActor.release_lease`."""
        if not self.shared or self.store.read_only or not self.held_here():
            return
        record = {"holder": None, "seconds": 0, "branch": self.branch, "written_at": round(time.time(), 3)}
        try:
            await self.store.set_state(self.branch, self.key, record, guard=self.check_ours)
        except LeaseLost:
            return  # another process holds it now: nothing to give up

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

    # -- guards (run at commit, under the store's write lock) ------------------------------------

    def check_free(self) -> None:
        """Refuse a take while another process holds the lease (:class:`LeaseHeldElsewhere`)."""
        wait = self.wait()
        if wait is not None:
            raise LeaseHeldElsewhere(self.holder_seen or "?", wait)

    def check_ours(self) -> None:
        """Refuse a write made under the lease once the stored lease names another holder, or
        none (:class:`LeaseLost`)."""
        holder = self.holder_seen
        if holder != self.holder:
            raise LeaseLost(
                f"the compression lease of {self.key.rsplit('/', 1)[0]!r} on {self.branch!r} is no longer this "
                f"process's (held by {holder!r}); the write was refused"
            )
