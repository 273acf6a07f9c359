"""What the committer of a PostgreSQL journal (:class:`~store._postgres.PostgresJournal`, which
owns it and its state) queues and how long it waits: a queued write, a waiting sync, and the
committer's timings. docs/postgres.md, "A commit", says how and why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import anyio
import attrs

from ._erasure import Erasure
from ._errors import StoreFailedError
from ._journal import Recheck
from ._rows import PendingRow, RowTuple
from ._scheduling import Done

__all__ = ["OPTIMISTIC_ATTEMPTS", "PendingWrite", "QUIET_SECONDS", "RELISTEN_FIRST", "RELISTEN_MAX", "Sync", "failure"]


#: A commit first tries this many times without the write lock: catch up with what other
#: processes committed, then append if the head has not moved since (one statement). Only then
#: does it take the lock, which it holds across two round trips and a replay: under contention
#: (several processes writing at once) lock holders queue behind one another.
OPTIMISTIC_ATTEMPTS = 3
#: The first pause before an idle store reconnects to go on hearing other processes' commits,
#: and the longest (the pause doubles after each failed attempt).
RELISTEN_FIRST = 0.05
RELISTEN_MAX = 5.0
#: How long an idle store waits for work before it watches its connection for other processes'
#: commits (so it hears of one at most this much later than it could).
QUIET_SECONDS = 0.002


@attrs.define(eq=False)
class PendingWrite:
    """One write queued for the committer, committed together or not at all, or one of the
    commits of its own kinds. ``recheck`` and ``guard`` run at commit against the caught-up
    model (``store._journal``); ``ids`` are the record ids it took, ``error`` what refused it,
    and ``done`` is set once it is committed or refused (its maker gives it the journal's
    ``Done``, made with the running library's parking)."""

    rows: list[PendingRow]
    guard: Callable[[], None] | None = None
    recheck: Recheck | None = None
    ids: range = range(0)
    #: A paged write instead of ``rows``: given the id its first record takes, the pages of
    #: records to write exactly as they are, drawn one at a time during the commit (a restore,
    #: or messages appended a page at a time); ``empty_only``: into a store with no record;
    #: ``tell``: the listeners hear of them.
    exact: Callable[[int], Iterable[Sequence[RowTuple]]] | None = None
    empty_only: bool = False
    tell: bool = True
    #: An erasure ``(message ids, reason, at)``, planned and committed under the write lock
    #: instead of ``rows``; ``erased`` is what it did (``None``: nothing was left to erase).
    erase: tuple[list[str], str, float] | None = None
    erased: Erasure | None = None
    #: A session lock ``(name, key, take)`` to take (``take``) or give back on the store's
    #: connection instead of ``rows``; ``locked`` says whether the take got it.
    lock: tuple[str, int, bool] | None = None
    locked: bool = False
    error: BaseException | None = None
    #: Set once the write is committed or refused; its writer waits for it parked (never cut short).
    done: Done = attrs.field(kw_only=True)


class Sync:
    """A caller of ``sync``, waiting for the committer's next catch-up."""

    __slots__ = ("done", "error")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.error: BaseException | None = None


def failure(where: str, error: BaseException, what: str) -> BaseException:
    if isinstance(error, StoreFailedError):
        return error
    failure = StoreFailedError(f"{what} to {where!r} failed ({error}); nothing of it was written")
    failure.__cause__ = error
    return failure
