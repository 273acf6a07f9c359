"""The read side of a store, as a runtime hands it out: :class:`StoreReader`.

A runtime's store is written only by its actors, which keep a namespace's reader record, its
narrowing floor and its claim checked; a holder of the runtime reads the store through a
:class:`StoreReader`, which has every read of :class:`~asides.store._store.Store` and no write, no
listener and no model. It answers as the store does, refusals included.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, cast

from .._deprecate import deprecated
from ._store import RECORD_PAGE

if TYPE_CHECKING:
    from ._disclosure import Disclosure, DisclosureRecord
    from ._erasure import Erasure, Tombstone
    from ._messages import Message
    from ._model_parts import BranchInfo
    from ._pg_vacuum import OwedVacuum
    from ._postgres import PostgresStore
    from ._rows import RowTuple
    from ._store import RecordPages, Store, StoreStatistics

__all__ = ["StoreReader"]


class StoreReader:
    """The reads of a runtime's store (``Runtime.store``): its messages, branches, state records,
    disclosures, erasures and counts, as :class:`~asides.lowlevel.Store` answers them, with the same
    refusals (``StoreFailedError`` after a failed commit, the store's own errors for an unknown
    branch or a malformed key). It has no write, no listener and no model: writes go through a
    manager or the runtime, and code that works on a store itself opens one with
    ``asides.lowlevel.open_store``."""

    __slots__ = ("__store",)

    def __init__(self, store: Store) -> None:
        self.__store = store

    def __repr__(self) -> str:
        return f"<StoreReader {self.__store.path!r}>"

    # -- what the store is ----------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The path or URL the store was opened with."""
        return self.__store.path

    @property
    def read_only(self) -> bool:
        """Whether the store was opened read-only."""
        return self.__store.read_only

    @property
    def shared(self) -> bool:
        """Whether other processes may write the store at the same time (a PostgreSQL store)."""
        return self.__store.shared

    @property
    def closed(self) -> bool:
        """Whether the store is closed."""
        return self.__store.closed

    @property
    def failed(self) -> bool:
        """Whether a commit failed (every later call then raises ``StoreFailedError``)."""
        return self.__store.failed

    def raise_if_failed(self) -> None:
        """Raise ``StoreFailedError`` when a commit failed; nothing otherwise."""
        self.__store.raise_if_failed()

    def statistics(self) -> StoreStatistics:
        """What the store counted since its open (``asides.lowlevel.StoreStatistics``)."""
        return self.__store.statistics()

    @property
    @deprecated("0.2.0", thing="asides.lowlevel.StoreReader.commits", instead="asides.lowlevel.StoreReader.statistics().commits")
    def commits(self) -> int:
        """``statistics().commits``."""
        return self.__store.statistics().commits

    @property
    @deprecated(
        "0.2.0", thing="asides.lowlevel.StoreReader.caught_up_records", instead="asides.lowlevel.StoreReader.statistics().caught_up_records"
    )
    def caught_up_records(self) -> int:
        """``statistics().caught_up_records``."""
        return self.__store.statistics().caught_up_records

    # -- following other writers ----------------------------------------------------------------

    async def sync(self) -> None:
        """As ``Store.sync``: bring the reads up to every write committed before this call, by any
        process (nothing to do on a store one process owns)."""
        await self.__store.sync()

    async def catch_up(self) -> int:
        """As ``Store.catch_up``: read what other writers committed since the last read; returns
        how many records."""
        return await self.__store.catch_up()

    async def records(self) -> list[RowTuple]:
        """Every record as it is on disk, ``(id, branch, seq, kind, ref, body)`` in id order, all
        at once: :meth:`record_pages` reads them a page at a time."""
        return await self.__store.records()

    def record_pages(self, size: int = RECORD_PAGE) -> AbstractAsyncContextManager[RecordPages]:
        """As ``Store.record_pages``: every record as it is on disk, in id order, a page of at
        most ``size`` at a time (``async with store.record_pages() as pages: async for page in
        pages``), all from one snapshot taken as the block starts."""
        return self.__store.record_pages(size)

    async def owed_vacuum(self) -> OwedVacuum | None:
        """As ``PostgresStore.owed_vacuum``: the rewrite of the log that erasures still owe, or
        ``None`` when nothing is owed; always ``None`` on a store file, which owes none."""
        store = self.__store
        return await cast("PostgresStore", store).owed_vacuum() if store.shared else None

    # -- reads ----------------------------------------------------------------------------------

    def disclosures(self, message_id: str) -> tuple[Disclosure, ...]:
        """Every disclosure of a message, oldest first."""
        return self.__store.disclosures(message_id)

    def disclosures_to(self, reader: str | None) -> tuple[Disclosure, ...]:
        """Everything ``reader`` was shown, oldest first."""
        return self.__store.disclosures_to(reader)

    def disclosure_records(self) -> tuple[DisclosureRecord, ...]:
        """Every disclosure record, in record order."""
        return self.__store.disclosure_records()

    @property
    def audit_anchor(self) -> str | None:
        """The value the store keeps to anchor its audit exports (``None``: none yet)."""
        return self.__store.audit_anchor

    def erasures(self) -> tuple[Erasure, ...]:
        """Every erasure of the store, oldest first."""
        return self.__store.erasures()

    def tombstone(self, message_id: str) -> Tombstone | None:
        """What remains of an erased message (``None``: not erased)."""
        return self.__store.tombstone(message_id)

    def branches(self) -> tuple[BranchInfo, ...]:
        """Every branch."""
        return self.__store.branches()

    def branch_info(self, name: str) -> BranchInfo:
        """The branch ``name``; refuses an unknown one."""
        return self.__store.branch_info(name)

    def branch_meta(self, name: str) -> Mapping[str, Any]:
        """What was recorded with the branch ``name`` when it was made (a derivation, for
        example); refuses an unknown branch."""
        store = self.__store
        store.raise_if_failed()
        return store.model.branch_meta(name)

    def has_branch(self, name: str) -> bool:
        """Whether the branch ``name`` exists."""
        return self.__store.has_branch(name)

    def head(self, branch: str) -> int:
        """The sequence of the newest message visible on ``branch``."""
        return self.__store.head(branch)

    def length(self, branch: str) -> int:
        """How many messages are visible on ``branch``."""
        return self.__store.length(branch)

    def messages(self, branch: str, start: int = 0, stop: int | None = None) -> list[Message]:
        """The messages visible on ``branch``, positions ``start`` to ``stop``."""
        return self.__store.messages(branch, start, stop)

    def get_message(self, branch: str, message_id: str) -> Message | None:
        """The message ``message_id`` as ``branch`` sees it, or ``None``."""
        return self.__store.get_message(branch, message_id)

    def get_state(self, branch: str, key: str, default: Any = None) -> Any:
        """The state record under ``key`` on ``branch``; ``default`` when there is none."""
        return self.__store.get_state(branch, key, default)

    def state_items(self, branch: str, prefix: str = "") -> dict[str, Any]:
        """Every state record on ``branch`` whose key starts with ``prefix``."""
        return self.__store.state_items(branch, prefix)

    def state_keys(self, branch: str, prefix: str = "") -> list[str]:
        """Every key starting with ``prefix`` that has a state record on ``branch``, sorted."""
        return self.__store.state_keys(branch, prefix)

    def state_sequences(self, branch: str, prefix: str = "") -> dict[str, int]:
        """``{key: sequence}`` for every key starting with ``prefix`` that has a state record on
        ``branch``: the sequence its visible record was written at."""
        return self.__store.state_sequences(branch, prefix)

    def state_sequences_after(self, branch: str, prefix: str, sequence: int) -> tuple[int, dict[str, int]]:
        """How many keys starting with ``prefix`` have their state record on ``branch`` from at
        most ``sequence``, and ``{key: sequence}`` of those written after it."""
        return self.__store.state_sequences_after(branch, prefix, sequence)

    def state_keys_holding(self, branch: str, keys: Iterable[str], words: Sequence[str]) -> list[str]:
        """Those of ``keys`` with a state record on ``branch`` whose value may hold every one of
        ``words`` (a superset)."""
        return self.__store.state_keys_holding(branch, keys, words)

    def state_keys_matching(self, branch: str, prefix: str, words: Sequence[str]) -> list[str] | None:
        """The keys starting with ``prefix`` whose state record on ``branch`` may hold every one
        of ``words`` (a superset), found through the search index; ``None`` when the store
        cannot answer so (then list the keys)."""
        return self.__store.state_keys_matching(branch, prefix, words)

    def get_states(self, branch: str, keys: Iterable[str]) -> dict[str, Any]:
        """``{key: value}`` for each of ``keys`` that has a state record on ``branch``."""
        return self.__store.get_states(branch, keys)

    def may_hold_audience(self, branch: str) -> bool:
        """Whether a message visible on ``branch`` may carry an audience."""
        return self.__store.may_hold_audience(branch)
