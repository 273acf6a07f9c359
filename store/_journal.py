"""What the store needs of its durable log: the :class:`Journal` interface, as httpcore keeps its
network backends behind one small interface.

The one store class (``store._store.Store``) holds the in-memory model, checks every write's
arguments and keeps the listeners; a journal holds the records on disk (a SQLite file,
``store._sqlite.SqliteJournal``) or in a database many processes share (PostgreSQL,
``store._postgres.PostgresJournal``). The store hands a journal each write's records without ids
(``store._rows.PendingRow``), with the caller's guard and the store's recheck, and the journal:

* **numbers and commits it in the store's order**: its records take their ids and sequences
  where the write takes its place (a journal of one process: when it is handed over; a shared
  one: at commit, after every record any process committed before it). There, first the
  write's recheck runs against the model (what the call would have refused had it been made
  then), then its guard (the caller's check); either raising refuses the write, which then
  writes nothing, and the error is raised to the caller;
* **applies it to the model and tells the listeners** (``apply_rows``, then the ``tell`` it was
  given by :meth:`Journal.serving`), at the one point its write model allows: a journal of one
  process applies before its commit and stops for good if a commit fails
  (:attr:`Journal.failure`), so memory never holds what the disk will not; a shared journal
  applies only once committed. Either way memory and disk never disagree, and a write, once
  handed over, is made whole or not at all whatever the caller does next: a cancelled caller
  waits for it, so "raised Cancelled" means "not written";
* **replays** what is committed into the model at open (:meth:`Journal.replay`), and **catches
  up** with what other writers committed since (:meth:`Journal.catch_up`, :meth:`Journal.sync`),
  telling the listeners of it with the ``...Elsewhere`` events;
* **says whether it is shared** (:attr:`Journal.shared`): whether other processes may write
  while this one has it open. The runtime asks the store's ``shared``, never its class.

Erasures and restores are commits of their own kinds (:meth:`Journal.erase`,
:meth:`Journal.restore`): an erasure is planned where it takes its place and overwrites records,
a restore writes records with their ids. A journal's own extras (SQLite's checkpoint, PostgreSQL's
session locks) are reached through the store class that chose it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ._errors import StoreFailedError
from ._events import StoreEvent
from ._rows import PendingRow, RowTuple

if TYPE_CHECKING:
    from ._erasure import Erasure
    from ._model import LogModel
    from ._search import Candidates

__all__ = ["Journal", "PageReader", "Recheck", "Serving", "Tell", "stopped"]

#: How a journal tells the store's listeners of a write it applied to the model.
Tell = Callable[[StoreEvent], None]
#: The next page of a journal's records (``Journal.record_pages``): empty once all are read.
PageReader = Callable[[], Awaitable[list[RowTuple]]]


#: A write's check where it takes its place, against the model as it is there: it raises what
#: the call would have raised had it been made then (a branch name taken meanwhile, a message
#: erased).
Recheck = Callable[["LogModel"], None]


class Journal(Protocol):
    """A store's durable log (see the module docstring)."""

    #: Where it is, for messages (a PostgreSQL URL without its password).
    path: str
    #: Opened read-only: the store refuses every write before it reaches the journal.
    read_only: bool
    #: Whether other processes may write it while this one has it open.
    shared: bool
    #: What the store's ``statistics()`` reports (``store._store.StoreStatistics`` says what each
    #: counts): commits made, those that found another process's commit first, and records read
    #: from other writers' commits.
    commits: int
    contended_commits: int
    caught_up_records: int
    #: The random value the store keeps to anchor its audit exports (``None``: none yet).
    audit_anchor: str | None
    #: The error that stopped the journal (after which nothing can be written or read through
    #: it), or ``None``.
    failure: BaseException | None
    @property
    def closed(self) -> bool:
        """Whether the journal is closing or closed."""

    async def replay(self) -> None:
        """At open: read every committed record into the model."""

    def serving(self, tell: Tell) -> AbstractAsyncContextManager[None]:
        """Commit for the block, telling ``tell`` of every write applied to the model (this
        process's and, caught up with, others'); leaving it commits what is queued, and the
        journal takes no more writes."""

    async def close(self) -> None:
        """Give back what the journal holds (its connection), after serving or after an open
        that failed first; its opener calls it."""

    async def commit(
        self,
        rows: list[PendingRow],
        *,
        guard: Callable[[], None] | None = None,
        recheck: Recheck | None = None,
        durable: bool = True,
    ) -> range:
        """Number, check, commit and apply one write's ``rows``, together or not at all (see the
        module docstring); returns the record ids they took, in order. ``recheck`` runs where
        the write takes its place, then the caller's ``guard``; raises what refused it (their
        error, ``StoreFailedError``), having written nothing. ``durable=False``: may return
        once the write is applied and queued, before its commit."""

    async def erase(self, message_ids: Sequence[str], reason: str, at: float) -> Erasure | None:
        """Plan an erasure where it takes its place (``None``: nothing left to erase; unknown ids
        refused with ``UnknownMessagesError``, writing nothing), commit it with its overwrites,
        and apply it."""

    async def restore(self, pages: Iterable[Sequence[RowTuple]]) -> None:
        """Commit a backup's records, checked by the store as each page is drawn, with their ids,
        in one transaction, into a journal that holds none (``StoreNotEmptyError`` otherwise),
        then apply them to the model. Holds a page at a time, never the backup. Whatever
        drawing a page raises (a malformed record) is raised, having written and applied
        nothing."""

    async def catch_up(self) -> int:
        """Read and apply the records other writers committed since the last read; how many.
        ``StoreFailedError`` where this journal cannot."""

    async def sync(self) -> None:
        """Return once the model holds every record committed before the call."""

    async def search_candidates(self, query: Sequence[str]) -> Candidates:
        """What the search index says of ``query``'s words (``Store.search_candidates``)."""
        ...

    async def index_search(self) -> int:
        """Index now what the search index has not reached (``Store.index_search``)."""
        ...

    async def append_pages(self, branch: str, pages: Iterable[Sequence[PendingRow]]) -> range:
        """Append the messages of ``pages`` (checked by the store as each page is drawn) to
        ``branch`` (the store checked it is there), numbered after every record committed before them, in one transaction, then
        apply them to the model and tell the listeners, a page at a time; the ids they took.
        Holds a page at a time. Whatever drawing a page raises is raised, having written and
        applied nothing."""

    def record_pages(self, size: int) -> AbstractAsyncContextManager[PageReader]:
        """Every record as the journal holds it, in id order, from one snapshot taken after the
        commit of every write already applied: the block's reader returns the next page of at
        most ``size`` records, and an empty one once every record is read."""

    async def compile_rows(self, namespace: str | None, before: int | None, limit: int) -> list[RowTuple]:
        """The newest ``limit`` committed compile records (of ``namespace`` when given) with ids
        below ``before`` (when given), newest first (``Store.compile_records``)."""
        ...

    async def compact_disclosed(self) -> tuple[int, int]:
        """Merge the runs the database keeps of the ids each ``(namespace, reader, via)`` was
        shown (store/_disclosure.py), losing none, even if this is cut short; how many rows of
        runs it deleted and how many it wrote (none: a journal that keeps no runs)."""
        ...


def stopped(path: str, failure: BaseException) -> StoreFailedError:
    """The error of every call on a store whose journal stopped (``failure``)."""
    error = StoreFailedError(f"the store {path!r} stopped after a failed commit ({failure!r}); reopen it to continue")
    error.__cause__ = failure
    return error


def _tell_no_one(event: StoreEvent) -> None:
    """Until it serves, a journal tells no one."""


class Serving:
    """A journal's life, a part each journal owns, with the state of it: while it serves, the
    journal's committer task runs; leaving the block stops new writes (:attr:`closed`), has the
    committer commit what is queued and return (:attr:`closing`), and waits for it. :meth:`tell`
    tells the store's listeners once it serves, no one before."""

    def __init__(self, committer: Callable[[], Coroutine[Any, Any, None]], wake_committer: Callable[[], None]) -> None:
        self._committer = committer
        self._wake_committer = wake_committer
        #: The journal is closing or closed: it takes no more writes.
        self.closed = False
        #: The committer is to commit what is queued and return.
        self.closing = False
        self.tell: Tell = _tell_no_one

    def close(self) -> None:
        """The journal closed (after serving, or after an open that failed first)."""
        self.closed = True

    @asynccontextmanager
    async def serving(self, tell: Tell) -> AsyncIterator[None]:
        """Run the committer for the block, telling ``tell`` of what the journal applies."""
        self.tell = tell
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._committer)
                try:
                    yield
                finally:
                    with anyio.CancelScope(shield=True):
                        self.closing = self.closed = True
                        self._wake_committer()
        finally:
            self.closed = True
