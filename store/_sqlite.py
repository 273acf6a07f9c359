"""The journal of a store file: one SQLite file, one append-only table, group commit.

Every write (a message, an edit, a state record, a new branch) is one row of the ``log`` table.
Rows are never updated (an erasure's overwrites aside) or deleted, so a write's cost does not
depend on history length. One process holds the file (``store._file_checks``), so this journal
orders every write itself: a write handed to it is checked, numbered and applied to the model at
once, its listeners told, and its rows queued for their commit.

Writers share commits: a writer that finds no commit running commits its own rows in its own
task, and one that finds a commit running puts them in the pending batch and waits while one
committer task writes the whole batch as a single multi-row ``INSERT`` (one statement, which
SQLite runs as one implicit transaction; a batch too large for one statement is written inside
``BEGIN IMMEDIATE`` ... ``COMMIT`` and rolled back on failure). A write returns only after its
batch committed. If a commit fails, the journal stops: every later call on the store raises
:class:`StoreFailedError`, so memory and disk never disagree.

:class:`SqliteStore` is the store (``store._store.Store``) over this journal, with its one extra,
:meth:`SqliteStore.checkpoint_truncate`. The SQL lives in this module (the open's settings in
store._open). Connections sit behind the small ``Driver`` interface (``store._drivers``): under
Trio a dedicated thread owning a ``sqlite3`` connection (small ``NORMAL`` commits run on the
loop's thread), under asyncio aiosqlite.
"""

from __future__ import annotations

import functools
import logging
import os
import secrets
import sqlite3
import urllib.parse
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from itertools import chain
from typing import Any, Final

import anyio
import anyio.lowlevel

from ._compile_records import compile_index, compile_rows_query
from ._disclosure import merged_runs
from ._drivers import Driver, ImmutableCheck, _file_stamp, _read_only_target
from ._erasure import ERASURE, ERASURE_BRANCH, Erasure, erased_body
from ._errors import StoreCorruptError, StoreFailedError, StoreNotEmptyError
from ._events import BranchCreated, MessageEdited, MessagesAppended, MessagesErased, StatesWritten, StoreEvent
from ._file_checks import open_error
from ._journal import PageReader, Recheck, Serving, Tell, stopped
from ._model import DEFAULT_BODY_CACHE, GAP_ROW, LogModel, RecordTypeError
from ._model_parts import LARGEST_AUDIENCE_BITS, prefix_end
from ._records import audience_groups
from ._rows import PendingRow, RowTuple, apply_rows, number_rows, numbered_pages
from ._scheduling import Done, Parking, parking, scheduling_point
from ._search import (
    BUILD_BATCH,
    BUILD_STEP,
    INDEX_EVERY,
    MERGE_PAGES,
    SQLITE_SEARCH_SCHEMA,
    Candidates,
    sqlite_build_statement,
    sqlite_match_expression,
    sqlite_states_statement,
)
from ._store import RESTORE_PAGE, Store

__all__ = [
    "SqliteJournal",
    "SqliteStore",
    "StoreEvent",
    "MessagesAppended",
    "MessageEdited",
    "MessagesErased",
    "StatesWritten",
    "BranchCreated",
]

log = logging.getLogger("asides.store")

SCHEMA = """
CREATE TABLE IF NOT EXISTS log (
    id INTEGER PRIMARY KEY,
    branch TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    ref TEXT,
    body TEXT NOT NULL
)
"""
#: The indexes a store file's open reads instead of its messages (``SqliteJournal.replay``): each
#: message's place by branch and sequence, the records other than messages, state, compile and
#: disclosure records, and the other records that take a branch's sequence (edits, states:
#: gaps, which the open counts a block); the one an audit reads the disclosure records through;
#: and the one a state key's versions are read through. With
#: ``SEERS_TABLE`` and ``DISCLOSED_TABLE``, what a writing open makes (``make_stored_indexes``);
#: a file without them is read whole. (``log_records``, which held the disclosure records with
#: the others, made an open scan them all: it goes.)
STORED_INDEXES: Final = (
    # With the kind, a read of a stretch of a branch's message ids reads the index alone, never
    # the other records in that stretch (a drain writes its records in runs).
    "CREATE INDEX IF NOT EXISTS log_places ON log (branch, seq, kind)",
    "DROP INDEX IF EXISTS log_place",
    "CREATE INDEX IF NOT EXISTS log_open_records ON log (id) WHERE kind NOT IN ('message', 'compile', 'disclosure', 'state')",
    "DROP INDEX IF EXISTS log_other_records",
    f"CREATE INDEX IF NOT EXISTS log_gaps ON log (branch, seq) WHERE {GAP_ROW}",
    "CREATE INDEX IF NOT EXISTS log_disclosures ON log (id) WHERE kind = 'disclosure'",
    "CREATE INDEX IF NOT EXISTS log_state_refs ON log (ref, branch, seq, id) WHERE kind = 'state'",
    "DROP INDEX IF EXISTS log_records",
)


def _may_name_a_reader(row: str) -> str:
    """SQL: whether the log record ``row`` (``NEW``, or nothing for the row itself) is a message
    whose body may name a reader (the first test of ``body_may_hold_audience``)."""
    return f"({row}kind = 'message' AND (instr({row}body, '\"audience\"') > 0 OR instr({row}body, '\\u') > 0))"


def _summary_of(row: str) -> str:
    """SQL: the summary of who sees the message ``row`` that its body records (its JSON text,
    store/_seers.py), or ``'?'`` when it records none (it is decoded to be placed). A value
    that is no summary reads as none when read (``read_seers``), fail-closed."""
    body = f"{row}body"
    return f"CASE WHEN json_valid({body}) THEN coalesce(json_extract({body}, '$.seers'), '?') ELSE '?' END"


#: Sequences a row of ``log_seers_blocks`` counts (``seq >> COUNTED_BITS``): a model whose blocks
#: are this large (the default message cache) reads the counts; one with smaller blocks counts
#: from ``log_seers`` (``LogModel.audience_bits``).
COUNTED_BITS: Final = LARGEST_AUDIENCE_BITS
_OLD_BLOCK = f"branch = OLD.branch AND block = OLD.seq >> {COUNTED_BITS} AND seers = OLD.seers"
#: Where the messages whose body may name a reader stand, with the summary of who sees each that
#: its body records (``'?'``: none): a table the log's triggers keep, so that a view reads one
#: block's (``SqliteJournal.audience_rows``); and how many each block of ``1 << COUNTED_BITS``
#: sequences holds by summary, which that table's triggers keep, so that an open reads a row a
#: block. A writing open makes them, filled from the log, when the file has none.
SEERS_TABLE: Final = (
    "DROP INDEX IF EXISTS log_audience",
    "CREATE TABLE log_seers (branch TEXT NOT NULL, seq INTEGER NOT NULL, seers TEXT NOT NULL, PRIMARY KEY (branch, seq)) WITHOUT ROWID",
    "CREATE INDEX log_seers_undecided ON log_seers (branch, seq) WHERE seers = '?'",
    "CREATE TABLE log_seers_blocks (branch TEXT NOT NULL, block INTEGER NOT NULL, seers TEXT NOT NULL, count INTEGER NOT NULL, "
    "PRIMARY KEY (branch, block, seers)) WITHOUT ROWID",
    "CREATE TRIGGER log_seers_counted AFTER INSERT ON log_seers BEGIN "
    f"INSERT INTO log_seers_blocks (branch, block, seers, count) VALUES (NEW.branch, NEW.seq >> {COUNTED_BITS}, NEW.seers, 1) "
    "ON CONFLICT (branch, block, seers) DO UPDATE SET count = count + 1; END",
    "CREATE TRIGGER log_seers_uncounted AFTER DELETE ON log_seers BEGIN "
    f"UPDATE log_seers_blocks SET count = count - 1 WHERE {_OLD_BLOCK}; "
    f"DELETE FROM log_seers_blocks WHERE {_OLD_BLOCK} AND count <= 0; END",
    f"CREATE TRIGGER log_seers_written AFTER INSERT ON log WHEN {_may_name_a_reader('NEW.')} BEGIN "
    f"INSERT INTO log_seers (branch, seq, seers) VALUES (NEW.branch, NEW.seq, {_summary_of('NEW.')}); END",
    f"CREATE TRIGGER log_seers_rewritten AFTER UPDATE ON log WHEN {_may_name_a_reader('OLD.')} OR {_may_name_a_reader('NEW.')} BEGIN "
    "DELETE FROM log_seers WHERE branch = OLD.branch AND seq = OLD.seq; "
    f"INSERT INTO log_seers (branch, seq, seers) SELECT NEW.branch, NEW.seq, {_summary_of('NEW.')} "
    f"WHERE {_may_name_a_reader('NEW.')}; END",
    f"CREATE TRIGGER log_seers_removed AFTER DELETE ON log WHEN {_may_name_a_reader('OLD.')} BEGIN "
    "DELETE FROM log_seers WHERE branch = OLD.branch AND seq = OLD.seq; END",
    f"INSERT INTO log_seers (branch, seq, seers) SELECT branch, seq, {_summary_of('')} FROM log WHERE {_may_name_a_reader('')}",
)


#: How many gaps (the records other than messages that take a branch's sequence: edits, states)
#: each block of ``1 << COUNTED_BITS`` sequences of a branch holds: a table the log's triggers
#: keep (the store never deletes a record, nor moves one; the delete trigger keeps a file edited
#: by hand counted), so that an open reads a row a block instead of a row a gap. A model with
#: smaller blocks counts them from ``log_gaps``. A writing open makes it, filled from the log,
#: when the file has none.
GAP_BLOCKS_TABLE: Final = (
    "CREATE TABLE log_gap_blocks (branch TEXT NOT NULL, block INTEGER NOT NULL, count INTEGER NOT NULL, "
    "PRIMARY KEY (branch, block)) WITHOUT ROWID",
    f"CREATE TRIGGER log_gaps_counted AFTER INSERT ON log WHEN NEW.{GAP_ROW} BEGIN "
    f"INSERT INTO log_gap_blocks (branch, block, count) VALUES (NEW.branch, NEW.seq >> {COUNTED_BITS}, 1) "
    "ON CONFLICT (branch, block) DO UPDATE SET count = count + 1; END",
    f"CREATE TRIGGER log_gaps_uncounted AFTER DELETE ON log WHEN OLD.{GAP_ROW} BEGIN "
    f"UPDATE log_gap_blocks SET count = count - 1 WHERE branch = OLD.branch AND block = OLD.seq >> {COUNTED_BITS}; "
    f"DELETE FROM log_gap_blocks WHERE branch = OLD.branch AND block = OLD.seq >> {COUNTED_BITS} AND count <= 0; END",
    f"INSERT INTO log_gap_blocks (branch, block, count) SELECT branch, seq >> {COUNTED_BITS}, count(*) FROM log "
    f"WHERE {GAP_ROW} GROUP BY 1, 2",
)


def _parent_of(row: str) -> str:
    """SQL: what the state key of the log record ``row`` (``NEW.``, ``OLD.``, or nothing for the
    row itself) spells up to its last ``/``, its *parent* (``a/chunk/`` of ``a/chunk/12``; ``''``
    for a key without one), as ``STATE_KEYS_TABLE`` and its queries spell it (an index on an
    expression serves a query that spells it the same)."""
    return f"rtrim({row}ref, replace({row}ref, '/', ''))"


def _other_record_of_key(row: str, bound: str) -> str:
    """SQL: a state record of the same key and branch as the log record ``row`` whose id is
    ``bound`` (a comparison: ``'< NEW.id'``, ``'<> OLD.id'``), through ``log_state_refs``."""
    return f"SELECT 1 FROM log AS e WHERE e.kind = 'state' AND e.ref = {row}ref AND e.branch = {row}branch AND e.id {bound}"


_PARENT = _parent_of("")
#: How many keys each parent holds on each branch (a row for each parent, not each key: the log's
#: triggers keep it, counting a key at its first record), and the state records by branch,
#: parent and sequence (``log_state_after``), so that a count of a namespace's keys and a
#: listing of those written after a sequence read a row a parent and a row a record written
#: after it (``SqliteJournal.state_sequences_after``). A writing open makes them, filled from the
#: log, when the file has none.
STATE_KEYS_TABLE: Final = (
    f"CREATE INDEX IF NOT EXISTS log_state_after ON log (branch, {_PARENT}, seq) WHERE kind = 'state'",
    "CREATE TABLE log_state_keys (branch TEXT NOT NULL, parent TEXT NOT NULL, keys INTEGER NOT NULL, "
    "PRIMARY KEY (branch, parent)) WITHOUT ROWID",
    f"CREATE TRIGGER log_state_keys_counted AFTER INSERT ON log WHEN NEW.kind = 'state' "
    f"AND NOT EXISTS ({_other_record_of_key('NEW.', '< NEW.id')}) BEGIN "
    f"INSERT INTO log_state_keys (branch, parent, keys) VALUES (NEW.branch, {_parent_of('NEW.')}, 1) "
    "ON CONFLICT (branch, parent) DO UPDATE SET keys = keys + 1; END",
    f"CREATE TRIGGER log_state_keys_uncounted AFTER DELETE ON log WHEN OLD.kind = 'state' "
    f"AND NOT EXISTS ({_other_record_of_key('OLD.', '<> OLD.id')}) BEGIN "
    f"UPDATE log_state_keys SET keys = keys - 1 WHERE branch = OLD.branch AND parent = {_parent_of('OLD.')}; "
    f"DELETE FROM log_state_keys WHERE branch = OLD.branch AND parent = {_parent_of('OLD.')} AND keys <= 0; END",
    f"INSERT INTO log_state_keys (branch, parent, keys) SELECT branch, {_PARENT}, count(DISTINCT ref) FROM log "
    "WHERE kind = 'state' GROUP BY 1, 2",
)


def _runs_of(row: str, columns: str, tables: str = "") -> str:
    """SQL: ``columns`` for each run of ids of the disclosure record ``row`` (``NEW.``, or
    ``records.`` with ``tables`` naming that table first in the ``FROM`` clause: ``'records, '``),
    from a valid JSON body: ``a.value`` is the run's first id, ``b.value`` how many
    (store/_disclosure.py)."""
    body = f"{row}body"
    return (
        f"SELECT {columns} FROM {tables}json_each({body}, '$.ids') AS a JOIN json_each({body}, '$.ids') AS b ON b.key = a.key + 1 "
        "WHERE a.key % 2 = 0 AND a.type = 'integer' AND b.type = 'integer' AND a.value >= 0 AND b.value > 0"
    )


def _disclosed(row: str, tables: str = "") -> str:
    """SQL: the rows of ``log_disclosed`` the disclosure record ``row`` makes."""
    body = f"{row}body"
    ids = "a.value, a.value + b.value"
    return _runs_of(row, f"json_extract({body}, '$.ns'), json_extract({body}, '$.r'), json_extract({body}, '$.v'), {ids}", tables)


def _spans(row: str, tables: str = "") -> str:
    """SQL: the rows of ``log_disclosure_spans`` the disclosure record ``row`` makes."""
    return _runs_of(row, f"a.value, a.value + b.value - 1, {row}id", tables)


#: The R*Tree of disclosure runs, and what stands in for it where SQLite was built without the
#: R*Tree module: a table with the same columns, which answers the same query by a scan.
SPANS_RTREE: Final = "CREATE VIRTUAL TABLE log_disclosure_spans USING rtree(id, lo, hi, +record INTEGER)"
SPANS_TABLE: Final = "CREATE TABLE log_disclosure_spans (id INTEGER PRIMARY KEY, lo INTEGER, hi INTEGER, record INTEGER)"
_DISCLOSURE_RECORDS = "WITH records AS MATERIALIZED (SELECT id, body FROM log WHERE kind = 'disclosure' AND json_valid(body)) "
#: The runs of ids each ``(namespace, reader, via)`` was shown (store/_disclosure.py): a row a
#: run of each disclosure record, made by a trigger on the log, merged now and then
#: (``SqliteJournal.compact_disclosed``), so that an open reads them instead of the records;
#: and, never merged, each record's runs in an R*Tree (``log_disclosure_spans``: ``lo`` to ``hi``,
#: both included, and the record's id), so that an audit of one message reads the records that
#: name it, not all of them (its 32-bit float bounds are widened outward, so it finds a few
#: neighbours too, which the record's own runs rule out). A writing open makes them, filled from
#: the log, when the file has not both (made again whole: a file may hold the first alone).
DISCLOSED_TABLE: Final = (
    "DROP TRIGGER IF EXISTS log_disclosed_written",
    "DROP TABLE IF EXISTS log_disclosed",
    "DROP TABLE IF EXISTS log_disclosure_spans",
    "CREATE TABLE log_disclosed (id INTEGER PRIMARY KEY, namespace TEXT, reader TEXT, via TEXT, first INTEGER, stop INTEGER)",
    SPANS_RTREE,
    "CREATE TRIGGER log_disclosed_written AFTER INSERT ON log WHEN NEW.kind = 'disclosure' AND json_valid(NEW.body) BEGIN "
    f"INSERT INTO log_disclosed (namespace, reader, via, first, stop) {_disclosed('NEW.')}; "
    f"INSERT INTO log_disclosure_spans (lo, hi, record) {_spans('NEW.')}; END",
    f"INSERT INTO log_disclosed (namespace, reader, via, first, stop) {_DISCLOSURE_RECORDS}"
    f"{_disclosed('records.', tables='records, ')} ORDER BY records.id",
    f"INSERT INTO log_disclosure_spans (lo, hi, record) {_DISCLOSURE_RECORDS}{_spans('records.', tables='records, ')}",
)
#: The names ``STORED_INDEXES``, ``SEERS_TABLE``, ``GAP_BLOCKS_TABLE``, ``STATE_KEYS_TABLE`` and
#: ``DISCLOSED_TABLE`` make: a file with all of them is opened without reading its messages.
STORED_NAMES: Final = (
    "log_places",
    "log_open_records",
    "log_gaps",
    "log_disclosures",
    "log_state_refs",
    "log_seers",
    "log_seers_written",
    "log_seers_rewritten",
    "log_seers_removed",
    "log_seers_undecided",
    "log_seers_blocks",
    "log_seers_counted",
    "log_seers_uncounted",
    "log_gap_blocks",
    "log_gaps_counted",
    "log_gaps_uncounted",
    "log_state_after",
    "log_state_keys",
    "log_state_keys_counted",
    "log_state_keys_uncounted",
    "log_disclosed",
    "log_disclosure_spans",
    "log_disclosed_written",
)


async def make_stored_indexes(driver: Driver) -> None:
    """A writing open, once the ``log`` table is there: make what an open reads instead of the
    messages, when the file lacks it (each table filled from the log in one transaction)."""
    for statement in STORED_INDEXES:
        await driver.execute(statement)
    made = (
        ("log_seers", SEERS_TABLE),
        ("log_gap_blocks", GAP_BLOCKS_TABLE),
        ("log_state_keys", STATE_KEYS_TABLE),
        ("log_disclosure_spans", DISCLOSED_TABLE),
    )
    for table, statements in made:
        if (await driver.execute("SELECT count(*) FROM sqlite_master WHERE name = ?", (table,)))[0][0]:
            continue
        await driver.execute("BEGIN IMMEDIATE")
        try:
            for statement in statements:
                try:
                    await driver.execute(statement)
                except sqlite3.OperationalError as exc:
                    if statement != SPANS_RTREE or "no such module" not in str(exc):
                        raise
                    log.warning("SQLite here has no R*Tree module: an audit of one message scans the disclosure runs (%s)", exc)
                    await driver.execute(SPANS_TABLE)
            await driver.execute("COMMIT")
        except BaseException:
            with anyio.CancelScope(shield=True):
                await driver.execute("ROLLBACK")
            raise
#: What an erasure rewrites in a store file so that no file keeps the erased bytes (its
#: receipt: ``Erasure.rewrites``), all by the time ``erase`` returns.
REWRITES: Final = (
    "the log's records: overwritten in the erasure's own transaction, under secure_delete (freed pages zeroed)",
    "the search index: the records' entries deleted in that transaction, and its segments merged (FTS5 optimize)",
    "the write-ahead log: truncated right after that commit (a reader in another process may delay it: logged)",
)
_DISCLOSURE_RECORDS_READ = "the disclosure records (for an audit)"
_INSERT_DISCLOSED = "INSERT INTO log_disclosed (namespace, reader, via, first, stop) VALUES "
#: Rows per INSERT statement; SQLite allows 32766 bound variables per statement.
_ROWS_PER_STATEMENT = 2000
#: A lone write lets other tasks run before its commit at least once in this many writes.
LONE_WRITES_PER_YIELD = 16


# -- the store ---------------------------------------------------------------------------------


class _Batch:
    """The rows of one commit, and how its writers learn that it ended."""

    __slots__ = ("rows", "writes", "erasures", "error", "ended")

    def __init__(self, parking: Callable[[], Parking]) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.writes = 0  # how many writes put their rows in it
        #: Statements overwriting erased records, run after the batch's inserts in its transaction.
        self.erasures: list[tuple[str, list[Any]]] = []
        self.error: BaseException | None = None
        self.ended = Done(parking)  # its waiters parked only when one waits (a lone writer never does)

    def add(self, rows: Sequence[tuple[Any, ...]], erasures: Sequence[tuple[str, list[Any]]]) -> None:
        """One write's rows, and its erasure's overwrites."""
        self.rows.extend(rows)
        self.writes += 1
        if erasures:
            self.erasures.extend(erasures)

    def end(self, error: BaseException | None = None) -> None:
        """The commit ended (``error``: it failed); wake every writer waiting for it."""
        if error is not None:
            self.error = error
        self.ended.set()

    async def wait(self) -> None:
        """Wait, with no cancellation cutting it short, until the commit ended (so a cancelled
        writer still waits for it)."""
        await self.ended.wait()


class SqliteJournal:
    """The journal of a store file (or ``:memory:``): see the module docstring."""

    shared = False
    #: One process writes a store file: no commit finds another process's first.
    contended_commits = 0

    def __init__(
        self,
        path: str,
        driver: Driver,
        model: LogModel,
        *,
        read_only: bool = False,
        has_log: bool = True,
        body_cache: int = DEFAULT_BODY_CACHE,
    ) -> None:
        self.path = path
        self.read_only = read_only
        self._driver = driver
        self._model = model
        self._scheduling_point = scheduling_point()
        self._parking = parking()
        self._batch: _Batch | None = None
        self._wakeup = anyio.Event()
        self._committing = False  # a commit (the committer's, or a lone writer's) is running
        #: Set when the running commit ends, made only while a paged write waits for it.
        self._commit_ended: anyio.Event | None = None
        self._shared_leads = 0  # leads that still gather a batch since a commit last held more than one write
        self._unyielded = 0  # lone writes committed since a lone write last let other tasks run
        self.failure: BaseException | None = None
        #: What ``statistics()`` reports (``store._store.StoreStatistics``): commits made, and
        #: records a read-only open read after its open (:meth:`catch_up`).
        self.commits = 0
        self.caught_up_records = 0
        #: Whether the file had a ``log`` table at the open (a writable open makes one).
        self._has_log = has_log
        #: Its life: whether it serves, is closing or closed, and whom it tells.
        self._life = Serving(self._committer, self._wake_committer)
        #: The connection that reads message bodies left in the file at open (made when first needed).
        self._body_reader: sqlite3.Connection | None = None
        self._absolute_path = os.path.abspath(path) if path != ":memory:" else path
        self._body_cache = body_cache
        #: A read-only open's target and file stamp (``_read_only_target``), taken at the open.
        self._body_target: tuple[str, tuple[int, ...] | None] | None = None
        #: The random value anchoring the file's audit exports (``None``: none yet).
        self.audit_anchor: str | None = None
        #: Whether the file holds the search index (store/_search.py), the first record it has
        #: not reached, and the indexer's wake-up, lock and statement.
        self._indexed = False
        self._index_reached = 1
        #: The first record from which the index holds state records (1: every one; ``None``:
        #: no index): an index made before it held them is filled in backwards (:meth:`_index`).
        self._states_from: int | None = None
        self._index_wanted = anyio.Event()
        self._index_lock = anyio.Lock()
        self._compact_lock = anyio.Lock()
        self._build_statement = sqlite_build_statement()
        self._states_statement = sqlite_states_statement()
        #: The newest committed record (commits are made in id order): the indexer reads no further.
        self._committed_to = 0
        #: Set once the paged write under way (a restore, an import: :meth:`_write_pages`) is over; writes wait for it.
        self._paged_writing: anyio.Event | None = None

    # -- opening and closing -----------------------------------------------------------------

    async def replay(self) -> None:
        """Read the file's records into the model (``StoreCorruptError`` for a record of the
        wrong types)."""
        if not self._has_log:
            return
        lazy = self.path != ":memory:"  # a file can be read again; memory cannot
        if lazy and await self._has_stored_indexes():
            await self._replay_stored()
            return
        if lazy:
            if self.read_only:  # as the open's own connection: immutable while no writer holds the file
                self._body_target = _read_only_target(self._absolute_path)
            self._model.read_bodies_with(self._read_bodies, self._body_cache)
        # A page at a time, in one read transaction (one snapshot, as one statement would be):
        # the open holds one page of rows at once, not the whole log.
        async with self._open_read():
            self._model.opened_records += await self._replay_pages(SELECT_PAGE_LEAVING_BODIES if lazy else SELECT_PAGE)

    @asynccontextmanager
    async def _open_read(self) -> AsyncIterator[None]:
        """One read transaction of an open: a damaged file is ``open_error``, a record of the
        wrong types ``StoreCorruptError``."""
        try:
            await self._driver.execute("BEGIN")
            try:
                yield
            finally:
                await self._driver.execute("COMMIT")
        except sqlite3.Error as exc:
            raise open_error(self.path, exc) from exc
        except RecordTypeError as exc:
            raise StoreCorruptError(self.path, str(exc)) from None
        except (TypeError, ValueError) as exc:
            raise StoreCorruptError(self.path, f"a record of the wrong types: {exc}") from None

    async def _replay_pages(self, query: str) -> int:
        """Replay what ``query`` reads (records after an id, at most a page of them), a page at a
        time, in the read transaction the caller holds; how many records it replayed."""
        after = replayed = 0
        while True:
            rows = await self._driver.execute(query, (after, REPLAY_PAGE))
            self._model.replay(rows)
            replayed += len(rows)
            if len(rows) < REPLAY_PAGE:
                return replayed
            after = rows[-1][0]

    async def _has_stored_indexes(self) -> bool:
        marks = ",".join("?" * len(STORED_NAMES))
        try:
            rows = await self._driver.execute(f"SELECT count(*) FROM sqlite_master WHERE name IN ({marks})", STORED_NAMES)  # noqa: S608
        except sqlite3.Error as exc:
            raise open_error(self.path, exc) from exc
        return bool(rows[0][0] == len(STORED_NAMES))

    async def _replay_stored(self) -> None:
        """An open that leaves the messages in the file: the records other than messages, each
        branch's head, how many messages that may name a reader each block of sequences holds
        by who sees them, and the next record id, through the file's indexes
        (``STORED_INDEXES``, ``SEERS_TABLE``), in one read transaction."""
        if self.read_only:
            self._body_target = _read_only_target(self._absolute_path)
        self._model.read_rows_from(self, self._body_cache)
        async with self._open_read():
            newest = await self._driver.execute("SELECT max(id) FROM log")
            if self._model.gap_bits == COUNTED_BITS:
                gaps = await self._driver.execute(SELECT_GAP_BLOCKS)
            else:
                gaps = await self._driver.execute(COUNT_GAPS, (self._model.gap_bits,))
            self._model.count_gaps(gaps, int(newest[0][0] or 0) + 1)
            self._model.opened_records += await self._replay_pages(SELECT_RECORDS_PAGE)
            heads: dict[str, int] = {}
            for info in self._model.branches():
                found = await self._driver.execute("SELECT max(seq) FROM log WHERE branch = ?", (info.name,))
                if found and found[0][0] is not None:
                    heads[info.name] = int(found[0][0])
            bits = self._model.audience_bits
            if bits == COUNTED_BITS:
                counted = await self._driver.execute(SELECT_COUNTED)
            else:
                counted = await self._driver.execute(COUNT_AUDIENCE, (bits,))
            audience = audience_groups(counted, await self._driver.execute(SELECT_UNDECIDED), bits)
            disclosed = await self._driver.execute(SELECT_DISCLOSED)
        self._model.end_stored_open(heads, audience, int(newest[0][0] or 0) + 1, disclosed=disclosed)

    @property
    def closed(self) -> bool:
        """Whether the journal is closing or closed."""
        return self._life.closed

    @asynccontextmanager
    async def serving(self, tell: Tell) -> AsyncIterator[None]:
        """Commit for the block (``Journal.serving``), the search index following the log
        meanwhile (a writing open's indexer)."""
        async with self._life.serving(tell), anyio.create_task_group() as background:
            if self._indexed and not self.read_only:
                background.start_soon(self._index)
            try:
                yield
            finally:
                background.cancel_scope.cancel()

    # -- the search index (store/_search.py) ---------------------------------------------------

    async def prepare_index(self) -> None:
        """A writing open: make the search index when the file has none (the indexer then
        starts at the first record), and read how far it got."""
        try:
            found = await self._driver.execute("SELECT count(*) FROM sqlite_master WHERE name = 'search_build'")
            if not found[0][0]:
                await self._driver.execute("BEGIN IMMEDIATE")
                try:
                    for statement in SQLITE_SEARCH_SCHEMA:
                        await self._driver.execute(statement)
                    await self._driver.execute("INSERT INTO search_build (next_id) VALUES (1)")
                    await self._driver.execute("DELETE FROM search_states")
                    await self._driver.execute("INSERT INTO search_states (first_id) VALUES (1)")
                    await self._driver.execute("COMMIT")
                except BaseException:
                    await self._driver.execute("ROLLBACK")
                    raise
            # An index made before it held state records holds those from the first record it
            # has not reached (once, before the indexer starts; it then adds the earlier ones).
            await self._driver.execute("CREATE TABLE IF NOT EXISTS search_states (first_id INTEGER NOT NULL)")
            await self._driver.execute(
                "INSERT INTO search_states (first_id) SELECT next_id FROM search_build WHERE NOT EXISTS (SELECT 1 FROM search_states)"
            )
            await self._driver.execute(compile_index("log"))
            await self._driver.execute("CREATE TABLE IF NOT EXISTS audit_anchor (value TEXT NOT NULL)")
            await self._driver.execute(
                "INSERT INTO audit_anchor (value) SELECT ? WHERE NOT EXISTS (SELECT 1 FROM audit_anchor)", (secrets.token_hex(32),)
            )
        except sqlite3.Error as exc:
            raise open_error(self.path, exc) from exc
        await self.read_index_state()

    async def read_index_state(self) -> None:
        """Read whether the file holds the search index and the first record it has not reached
        (a file without one: none is reached, and each search reads every record)."""
        try:
            found = await self._driver.execute("SELECT count(*) FROM sqlite_master WHERE name = 'search_build'")
            rows = await self._driver.execute("SELECT next_id FROM search_build") if found[0][0] else []
        except sqlite3.Error as exc:
            raise open_error(self.path, exc) from exc
        self._indexed = bool(rows)
        self._index_reached = int(rows[0][0]) if rows else 1
        try:
            found = await self._driver.execute("SELECT count(*) FROM sqlite_master WHERE name = 'search_states'")
            states = await self._driver.execute("SELECT first_id FROM search_states") if found[0][0] else []
        except sqlite3.Error as exc:
            raise open_error(self.path, exc) from exc
        self._states_from = int(states[0][0]) if rows and states else None
        try:
            found = await self._driver.execute("SELECT count(*) FROM sqlite_master WHERE name = 'audit_anchor'")
            anchors = await self._driver.execute("SELECT value FROM audit_anchor") if found[0][0] else []
        except sqlite3.Error as exc:
            raise open_error(self.path, exc) from exc
        self.audit_anchor = str(anchors[0][0]) if anchors else None
        self._committed_to = self._model.next_id - 1  # what the open replayed is committed

    def _note_commit(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Note the newest record committed (commits are made in id order), and wake the
        indexer once enough records wait for it."""
        if rows:
            self._committed_to = max(self._committed_to, int(rows[-1][0]))
            self._model.committed(self._committed_to)
        if self._committed_to + 1 - self._index_reached >= INDEX_EVERY:
            self._index_wanted.set()

    async def _index(self) -> None:
        """The indexer: index the committed records after the last one indexed, whenever
        enough of them wait, keeping its progress in the file. Each statement runs between two
        commits, or inside one (a failed commit stops the store, and the batch with it). A
        backlog (a store made before the index, or one reopened far behind) is worked through
        in steps of :data:`BUILD_STEP` records, each about the cost of a commit or two, letting
        other tasks run between them, so a write waits for one step at most; the records a
        writer adds are indexed :data:`BUILD_BATCH` at a time, which costs a record about half
        as much."""
        while self.failure is None:
            waiting = self._committed_to + 1 - self._index_reached
            if waiting < INDEX_EVERY and not self._states_owed():
                await self._index_wanted.wait()
                self._index_wanted = anyio.Event()
                continue
            try:
                if waiting < INDEX_EVERY:
                    await self._index_earlier_states()
                else:
                    await self._index_batch(BUILD_STEP if waiting > 2 * INDEX_EVERY else BUILD_BATCH)
            except sqlite3.Error as exc:  # searches read what it has not reached: nothing waits for it
                log.warning("the search index of %r could not be brought up to date (it stops here): %s", self.path, exc)
                return
            await anyio.lowlevel.checkpoint()

    async def _index_batch(self, size: int = BUILD_BATCH) -> None:
        """Index the next ``size`` committed records the index has not reached, noting the
        progress in the file at least every :data:`BUILD_BATCH` records (a step run again
        after a crash indexes nothing twice)."""
        async with self._index_lock:
            first = self._index_reached
            last = min(self._committed_to, first + size - 1)
            if last < first:
                return
            await self._driver.execute(self._build_statement, (first, last, first, last))
            await self._driver.execute("INSERT INTO search (search, rank) VALUES ('merge', ?)", (MERGE_PAGES,))
            self._index_reached = last + 1
            if last // BUILD_BATCH != (first - 1) // BUILD_BATCH or last == self._committed_to:
                await self._driver.execute("UPDATE search_build SET next_id = max(next_id, ?)", (last + 1,))

    def _states_owed(self) -> bool:
        """Whether the index lacks state records before the first it holds (made before it
        held them), which a writing open adds."""
        return not self.read_only and self._states_from is not None and self._states_from > 1

    async def _index_earlier_states(self) -> None:
        """Add to an index made before it held state records those of the :data:`BUILD_BATCH`
        records below the first it holds, noting how far down it got (a step run again after a
        crash adds nothing twice); once it gets to the first record, the index holds them all."""
        async with self._index_lock:
            assert self._states_from is not None
            last = self._states_from - 1
            first = max(1, last - BUILD_BATCH + 1)
            await self._driver.execute(self._states_statement, (first, last, first, last))
            await self._driver.execute("INSERT INTO search (search, rank) VALUES ('merge', ?)", (MERGE_PAGES,))
            await self._driver.execute("UPDATE search_states SET first_id = min(first_id, ?)", (first,))
            self._states_from = first

    async def index_search(self) -> int:
        """Index now every committed record the index has not reached, and the state records an
        index made before it held them lacks (a writing open; the indexer does it in the
        background); returns how many records that was (read, not only indexed)."""
        if self.read_only or not self._indexed:
            return 0
        if self.failure is not None:
            raise stopped(self.path, self.failure)
        start, states = self._index_reached, self._states_from or 1
        try:
            while self._index_reached <= self._committed_to:
                await self._index_batch()
            while self._states_owed():
                await self._index_earlier_states()
        except sqlite3.Error as exc:
            raise StoreFailedError(f"the search index of {self.path!r} could not be written: {exc}") from exc
        return self._index_reached - start + states - (self._states_from or 1)

    async def search_candidates(self, query: Sequence[str]) -> Candidates:
        """The messages some version of which holds every word of ``query``, and the records
        the index has not reached (``Candidates``)."""
        if self.failure is not None:
            raise stopped(self.path, self.failure)
        unindexed = range(self._index_reached, self._model.next_id)
        if not self._indexed:
            return Candidates(self._model.edited_since(unindexed.start), unindexed)
        try:
            rows = await self._driver.execute(
                "SELECT DISTINCT message FROM search WHERE search MATCH ? AND message IS NOT NULL", (sqlite_match_expression(query),)
            )
        except sqlite3.Error as exc:
            raise StoreFailedError(f"the search index of {self.path!r} could not be read: {exc}") from exc
        return Candidates(frozenset(int(row[0]) for row in rows) | self._model.edited_since(unindexed.start), unindexed)

    def _wake_committer(self) -> None:
        self._wakeup.set()

    def log_made(self) -> None:
        """A writable open made the ``log`` table and its indexes (after :meth:`replay`). A file
        with no record yet leaves its messages in the file from now on, as a later open would
        (a file read whole, made before the indexes, stays so until it is opened again)."""
        self._has_log = True
        if self.path != ":memory:" and not self._model.holds_records:
            self._model.read_rows_from(self, self._body_cache)
            self._model.end_stored_open({}, [], 1)

    async def close(self) -> None:
        """Give back the connection that read bodies; the driver is its opener's (``open_driver``
        closes it)."""
        self._life.close()
        reader, self._body_reader = self._body_reader, None
        if reader is not None:
            reader.close()

    def _read_bodies(self, record_ids: Sequence[int]) -> dict[int, str]:
        """The bodies of committed message records, read synchronously (``LogModel.read_bodies_with``)
        through a read-only connection of its own, made at the first read: a point query by
        record id, which no commit blocks (WAL). A body the file does not hold is left out."""
        marks = ",".join("?" * len(record_ids))
        rows = self._read(f"SELECT id, body FROM log WHERE id IN ({marks})", list(record_ids))  # noqa: S608 - placeholders
        return {record_id: body for record_id, body in rows if type(body) is str}

    # What a model whose messages stay in the file reads (``store._model_parts.StoredRows``).

    def record_bodies(self, record_ids: Sequence[int]) -> dict[int, str]:
        return self._read_bodies(record_ids)

    def state_versions(
        self,
        before: int,
        *,
        keys: Sequence[str] | None = None,
        prefix: str | None = None,
        suffix: str | None = None,
        containing: str | None = None,
        blanked: bool = True,
    ) -> list[tuple[int, str, int, str, bool]]:
        found: list[Any] = []
        select = _STATE_VERSIONS if blanked else _STATE_PLACES
        if keys is not None:
            for start in range(0, len(keys), 900):
                chunk = list(keys[start : start + 900])
                marks = ",".join("?" * len(chunk))
                found += self._read(f"{select}ref IN ({marks})", [before, *chunk], "the state records")
        elif prefix:
            upper = prefix_end(prefix)
            if upper is not None:  # the keys from ``prefix`` up to the next prefix, in the index's (code point) order
                found = self._read(f"{select}ref >= ? AND ref < ?", [before, prefix, upper], "the state records")
            else:
                found = self._read(f"{select}substr(ref, 1, ?) = ?", [before, len(prefix), prefix], "the state records")
        elif suffix:
            found = self._read(f"{select}substr(ref, -?) = ?", [before, len(suffix), suffix], "the state records")
        elif containing:
            found = self._read(f"{select}instr(ref, ?) > 0", [before, containing], "the state records")
        else:
            found = self._read(f"{select}1", [before], "the state records")
        return [(int(i), b, int(q), r, bool(n)) for i, b, q, r, n in found]

    def state_sequences_after(self, before: int, branch: str, prefix: str, sequence: int) -> tuple[int, list[tuple[str, int]]]:
        upper = prefix_end(prefix)
        keys: list[Any]
        if upper is not None:  # the keys from ``prefix`` up to the next prefix, in the index's (code point) order
            where, keys = "ref >= ? AND ref < ?", [prefix, upper]
            if prefix.endswith("/"):  # every key under it has a parent from ``prefix`` up to the next prefix
                return self._state_sequences_after_by_parent(before, branch, keys, sequence)
        else:
            where, keys = "substr(ref, 1, ?) = ?", [len(prefix), prefix]
        # ``+branch``: through the index of state records by key, never the branch's index of every record
        grouped = f"FROM log WHERE kind = 'state' AND id < ? AND +branch = ? AND {where} GROUP BY ref HAVING max(seq) "
        parameters = [before, branch, *keys, sequence]
        ((count,),) = self._read(f"SELECT count(*) FROM (SELECT ref {grouped}<= ?)", parameters, "the state records")
        after = self._read(f"SELECT ref, max(seq) {grouped}> ?", parameters, "the state records")
        return int(count), [(key, int(seq)) for key, seq in after]

    def _state_sequences_after_by_parent(
        self, before: int, branch: str, keys: list[Any], sequence: int
    ) -> tuple[int, list[tuple[str, int]]]:
        """``state_sequences_after`` for the keys from ``keys[0]`` (a prefix ending in ``/``) up to
        ``keys[1]``: the keys the parents under it hold, less those whose first record has an id
        from ``before`` and those written after ``sequence``, which are listed; in one statement
        (one snapshot), reading a row a parent and a row a record written after ``sequence``."""
        prefix, upper = keys
        named = {"branch": branch, "prefix": prefix, "upper": upper, "sequence": sequence, "before": before}
        rows = self._read(_STATE_KEYS_AFTER, named, "the state records")
        after = [(key, int(seq)) for key, seq in rows if key is not None]
        (held,) = [int(seq) for key, seq in rows if key is None]
        return held - len(after), after

    def state_record_page(self, after: int, before: int, limit: int) -> list[tuple[int, str, str, str]]:
        query = "SELECT id, branch, ref, body FROM log WHERE kind = 'state' AND id > ? AND id < ? AND body <> 'null' ORDER BY id LIMIT ?"
        return [(int(i), b, r, t) for i, b, r, t in self._read(query, [after, before, limit], "the state records")]

    def records_holding(self, record_ids: Sequence[int], words: Sequence[str]) -> set[int]:
        # A body of ASCII alone has as many bytes as characters; lower() folds ASCII letters.
        marks = ",".join("?" * len(record_ids))
        holds = " AND ".join("instr(lower(body), ?) > 0" for _word in words)
        query = f"SELECT id FROM log WHERE id IN ({marks}) AND (length(CAST(body AS BLOB)) <> length(body) OR ({holds}))"  # noqa: S608
        return {int(row[0]) for row in self._read(query, [*record_ids, *words], "the state records")}

    def states_matching(
        self, prefix: str, upper: str, words: Sequence[str]
    ) -> tuple[list[tuple[int, str]], list[tuple[int, str, str]]] | None:
        if self._states_from != 1 and self.read_only and self._indexed:
            self._states_from = self._states_from_in_file()  # a writer may have filled it in since the open
        if self._states_from != 1:
            return None
        # One statement, one snapshot: the rows the index holds, and every state record under
        # the prefix from the first record it has not reached as that snapshot says (``+ref``:
        # through the ids, never the index of every key).
        rows = self._read(
            "SELECT log.id, log.ref, NULL FROM search JOIN log ON log.id = search.rowid WHERE search MATCH ? "
            "AND search.message IS NULL AND log.kind = 'state' AND log.ref >= ? AND log.ref < ? UNION ALL "
            "SELECT id, ref, body FROM log WHERE id >= (SELECT next_id FROM search_build) AND kind = 'state' "
            "AND +ref >= ? AND +ref < ?",
            [sqlite_match_expression(words), prefix, upper, prefix, upper],
            "the search index",
        )
        indexed = [(int(i), r) for i, r, body in rows if body is None]
        return indexed, [(int(i), r, body) for i, r, body in rows if body is not None]

    def _states_from_in_file(self) -> int | None:
        """The first record from which the file's index holds state records, as it says now
        (``None``: it does not say); read by a read-only open, whose writer fills the index in."""
        if not self._read("SELECT 1 FROM sqlite_master WHERE name = 'search_states'", (), "the search index"):
            return None
        rows = self._read("SELECT first_id FROM search_states", (), "the search index")
        return int(rows[0][0]) if rows and rows[0][0] is not None else None

    def message_rows(self, branch: str, first: int, last: int, bodies: bool) -> list[tuple[int, int, str | None]]:
        column = "body" if bodies else "NULL"
        rows = self._read(
            f"SELECT id, seq, {column} FROM log WHERE branch = ? AND seq BETWEEN ? AND ? AND kind = 'message'",  # noqa: S608 - a column
            (branch, first, last),
        )
        return [(int(i), int(q), b) for i, q, b in rows]

    def gap_sequences(self, branch: str, first: int, last: int, before: int) -> list[int]:
        rows = self._read(SELECT_GAPS, (branch, first, last, before), "where the records other than messages stand")
        return [int(row[0]) for row in rows]

    def message_places(self, record_ids: Sequence[int]) -> list[tuple[int, str, int]]:
        found: list[tuple[int, str, int]] = []
        for start in range(0, len(record_ids), 900):
            chunk = list(record_ids[start : start + 900])
            marks = ",".join("?" * len(chunk))
            rows = self._read(f"SELECT id, branch, seq FROM log WHERE id IN ({marks}) AND kind = 'message'", chunk)  # noqa: S608
            found.extend((int(i), str(b), int(q)) for i, b, q in rows)
        return found

    def audience_rows(self, branch: str, first: int, last: int) -> list[tuple[int, str | None, str | None]]:
        return [(int(q), summary, body) for q, summary, body in self._read(SELECT_AUDIENCE_ROWS, (branch, first, last))]

    def message_page(self, after: int, limit: int) -> list[tuple[int, str, int, str | None]]:
        rows = self._read("SELECT id, branch, seq, body FROM log WHERE kind = 'message' AND id > ? ORDER BY id LIMIT ?", (after, limit))
        return [(int(i), str(b), int(q), body if type(body) is str else None) for i, b, q, body in rows]

    def all_message_ids(self) -> list[int]:
        return [int(row[0]) for row in self._read("SELECT id FROM log WHERE kind = 'message' ORDER BY id", ())]

    def disclosure_page(self, after: int, limit: int) -> list[tuple[int, str]]:
        return [(int(i), body) for i, body in self._read(SELECT_DISCLOSURES_PAGE, (after, limit), _DISCLOSURE_RECORDS_READ)]

    def disclosures_holding(self, message_id: int) -> list[tuple[int, str]]:
        rows = self._read(SELECT_DISCLOSURES_HOLDING, (message_id, message_id), _DISCLOSURE_RECORDS_READ)
        return [(int(i), body) for i, body in rows]

    async def compact_disclosed(self) -> tuple[int, int]:
        """Merge the runs of ``log_disclosed`` (``DISCLOSED_TABLE``): the merged rows written,
        then the rows read deleted (a row written later takes a higher id), each statement
        between two commits or inside one (a crash between them leaves runs twice, which changes
        no answer). Returns how many rows it deleted and how many it wrote. Waits first for the
        commit of the writes queued (a commit under way may still be adding its rows: they
        are left for the next merge)."""
        async with self._compact_lock:
            await self._queued_committed()
            rows = await self._driver.execute("SELECT id, namespace, reader, via, first, stop FROM log_disclosed")
            if not rows:
                return 0, 0
            merged = merged_runs(row[1:] for row in rows)
            for start in range(0, len(merged), _ROWS_PER_STATEMENT):
                chunk = merged[start : start + _ROWS_PER_STATEMENT]
                values = [v for run in chunk for v in run]
                await self._driver.execute(_INSERT_DISCLOSED + ",".join(["(?,?,?,?,?)"] * len(chunk)), values)
            await self._driver.execute("DELETE FROM log_disclosed WHERE id <= ?", (max(row[0] for row in rows),))
            return len(rows), len(merged)

    def _reader_uri(self) -> str:
        """The URI a connection that reads committed records opens: the file, read-only (a
        read-only open's target, as its open read it). ``StoreFailedError`` for a file opened
        with no writer (immutable mode) and written since, which such a connection would
        misread."""
        uri, stamp = self._body_target or (f"file:{urllib.parse.quote(self._absolute_path)}?mode=ro", None)
        if stamp is not None and _file_stamp(self._absolute_path) != stamp:
            raise StoreFailedError(
                f"the store {self.path!r} was opened with no writer (immutable mode) and written since; open it again to read more"
            )
        return uri

    def _read(self, query: str, parameters: Sequence[Any] | Mapping[str, Any], what: str = "the messages") -> list[Any]:
        """Rows of a read of committed records, synchronously, on the connection that reads what
        the open left in the file (made at the first read); a failure is a ``StoreFailedError``
        saying that ``what`` could not be read."""
        reader, transient = self._body_reader, False
        try:
            uri = self._reader_uri()  # checked at every read: an immutable file may have changed since the last
            if reader is None:
                reader = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
                if self._life.closed:
                    transient = True  # a read after the close: nothing keeps the connection
                else:
                    self._body_reader = reader
            rows: list[Any] = reader.execute(query, parameters).fetchall()
        except (sqlite3.Error, OSError) as exc:
            raise StoreFailedError(f"{what} could not be read from {self.path!r}: {exc}") from exc
        finally:
            if transient and reader is not None:
                reader.close()
        return rows

    # -- the committer -----------------------------------------------------------------------

    async def _committer(self) -> None:
        while True:
            if self.failure is not None:
                raise StoreFailedError(f"a commit to {self.path!r} failed; the store stopped") from self.failure
            batch = self._batch
            if batch is None or self._committing:
                if self._life.closing and batch is None and not self._committing:
                    return
                await self._wakeup.wait()
                self._wakeup = anyio.Event()
                continue
            self._batch = None
            self._committing = True
            try:
                with anyio.CancelScope(shield=True):
                    try:
                        await self._commit_rows(batch.rows, batch.erasures)
                    except BaseException as exc:
                        self._stop(exc, len(batch.rows), batch)
                        raise StoreFailedError(f"a commit to {self.path!r} failed; the store stopped") from exc
            finally:
                self._end_commit()
            self.commits += 1
            self._note_commit(batch.rows)
            self._note_shared(batch.writes, 1)
            batch.end()

    def _note_shared(self, writes: int, leads: int) -> None:
        """A commit of ``writes`` writes ended. One that held several makes at least the next
        ``leads`` leads gather a batch: :data:`LONE_WRITES_PER_YIELD` after a batch a lead
        gathered (writers were ready at its yield: writers in a loop), one after a batch that
        queued behind a running commit (a slow commit, not writers about). Each lead that
        gathers no other writer counts one down, so writers that wait on something else for a
        turn still find a batch to join, and a lone writer soon commits without yielding again."""
        if writes > 1:
            self._shared_leads = max(self._shared_leads, leads)
        elif self._shared_leads:
            self._shared_leads -= 1

    def _stop(self, exc: BaseException, records: int, batch: _Batch | None) -> None:
        """Fail-stop after a failed commit: fail ``batch`` and the one filling behind it, so
        nothing waits forever, and wake the committer, which ends the opener's block."""
        self.failure = exc
        for failed in (batch, self._batch):
            if failed is not None:
                failed.end(exc)
        self._batch = None
        self._wakeup.set()
        log.critical("commit of %d record(s) to %r failed; the store stops: %r", records, self.path, exc)

    async def _lead(self, rows: Sequence[tuple[Any, ...]], erasures: Sequence[tuple[str, list[Any]]], events: Sequence[StoreEvent]) -> None:
        """A writer that finds no commit running commits its rows itself, in its own task, so a
        lone write involves no other task. Before the commit it lets other tasks run, its rows in
        a batch that writers that are ready join (group commit): for a while after a commit that
        was shared (writers are about: :meth:`_note_shared`), and otherwise once in
        :data:`LONE_WRITES_PER_YIELD` writes (a task writing in a loop still lets the others run,
        and writers that appear find it). Writers wait for their batch's commit on its ``Done``,
        which no cancellation cuts short. Writes
        that arrive during the commit queue in the next batch, which the committer takes when this
        one is done. Listeners hear of the write once its rows are queued (:meth:`_queue`)."""
        self._committing = True
        batch: _Batch | None = None  # none when no other task runs before the commit: nothing can join it
        try:
            if self._shared_leads or self._unyielded >= LONE_WRITES_PER_YIELD - 1:
                self._unyielded = 0
                batch = self._batch = _Batch(self._parking)
                batch.add(rows, erasures)
            else:
                self._unyielded += 1
            for event in events:
                self._life.tell(event)
            if batch is not None:
                await self._scheduling_point()
                if self._batch is batch:
                    self._batch = None
                rows, erasures = batch.rows, batch.erasures
            try:
                # Not cancellable: a statement sent to a driver always finishes before its caller
                # goes on (``Driver``), and nothing else here awaits.
                await self._commit_rows(rows, erasures)
            except BaseException as exc:
                self._stop(exc, len(rows), batch)
                raise StoreFailedError(f"the commit holding this write to {self.path!r} failed; the store stopped") from exc
            self.commits += 1
            self._note_commit(rows)
            self._note_shared(0 if batch is None else batch.writes, LONE_WRITES_PER_YIELD)
            if batch is not None:
                batch.end()
        finally:
            self._end_commit()
            if self._batch is not None or self._life.closing:
                self._wakeup.set()

    def _end_commit(self) -> None:
        """A commit ended: wake whoever waits for it (:meth:`_after_commits`)."""
        self._committing = False
        ended, self._commit_ended = self._commit_ended, None
        if ended is not None:
            ended.set()

    async def _after_paged_write(self) -> None:
        """Return once no paged write (:meth:`_write_pages`) runs."""
        while self._paged_writing is not None:
            await self._paged_writing.wait()

    async def _after_commits(self) -> None:
        """Return once no commit of this process runs or waits (``StoreFailedError`` if one
        failed); a paged write holds new ones back first."""
        while True:
            await self._queued_committed()
            if not self._committing:
                return
            if self._commit_ended is None:
                self._commit_ended = anyio.Event()
            await self._commit_ended.wait()

    async def _commit_rows(self, rows: Sequence[tuple[Any, ...]], erasures: Sequence[tuple[str, list[Any]]]) -> None:
        """Commit rows: with an erasure's overwrites, in a transaction of their own (:meth:`_erase_rows`)."""
        if erasures:
            await self._erase_rows(rows, erasures)
        elif len(rows) <= _ROWS_PER_STATEMENT:  # one statement: SQLite runs it as one transaction
            await self._driver.execute(_insert_sql(len(rows)), rows[0] if len(rows) == 1 else tuple(chain.from_iterable(rows)))
        else:
            await self._insert_in_transaction(rows)

    async def _insert_in_transaction(self, rows: Sequence[tuple[Any, ...]]) -> None:
        await self._driver.execute("BEGIN IMMEDIATE")
        try:
            await self._insert(rows)
            await self._driver.execute("COMMIT")
        except BaseException:
            await self._driver.execute("ROLLBACK")
            raise

    async def _insert(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert ``rows`` in the transaction the caller holds, as many a statement as SQLite's
        bound variables allow."""
        for start in range(0, len(rows), _ROWS_PER_STATEMENT):
            chunk = rows[start : start + _ROWS_PER_STATEMENT]
            await self._driver.execute(_insert_sql(len(chunk)), [v for row in chunk for v in row])

    async def _erase_rows(self, rows: Sequence[tuple[Any, ...]], erasures: Sequence[tuple[str, list[Any]]]) -> None:
        """Commit a batch holding an erasure: its inserts and overwrites in one transaction, with
        ``secure_delete`` (freed space is zeroed), then a truncating checkpoint, so the erased
        bytes are in neither the database file nor its write-ahead log once this returns."""
        await self._driver.execute("PRAGMA secure_delete=ON")
        await self._driver.execute("BEGIN IMMEDIATE")
        try:
            await self._insert(rows)
            for sql, params in erasures:
                await self._driver.execute(sql, params)
            if self._indexed:  # merge the index's segments, so no erased word stays in one
                await self._driver.execute("INSERT INTO search (search) VALUES ('optimize')")
            await self._driver.execute("COMMIT")
        except BaseException:
            await self._driver.execute("ROLLBACK")
            raise
        await self.checkpoint_truncate()

    async def checkpoint_truncate(self) -> bool:
        """Copy the write-ahead log into the database file and empty it (``TRUNCATE``); whether
        it could (a reader in another process holding an old snapshot stops it). Logged when not."""
        for _attempt in range(3):
            busy, _log, _done = (await self._driver.execute("PRAGMA wal_checkpoint(TRUNCATE)"))[0]
            if not busy:
                return True
        log.warning(
            "the write-ahead log of %r could not be emptied (a reader holds it); erased bytes stay in it until the next checkpoint",
            self.path,
        )
        return False

    # -- writes ------------------------------------------------------------------------------

    async def commit(
        self,
        rows: list[PendingRow],
        *,
        guard: Callable[[], None] | None = None,
        recheck: Recheck | None = None,
        durable: bool = True,
    ) -> range:
        """Check, number and apply the write now (this process orders every write of the file),
        tell the listeners, then queue its rows and wait for their commit (not when not
        ``durable``: the committer starts it at once), after a paged write under way. Once queued,
        the write is certain: the committer commits it whatever a listener or the caller does
        next, and a cancelled caller still waits for its commit and returns normally."""
        if self._paged_writing is not None:  # (a check, not a call, on every write)
            await self._after_paged_write()
        model = self._model
        if recheck is not None:
            recheck(model)
        if guard is not None:
            guard()
        first = model.next_id
        numbered, encoded = number_rows(model, first, (rows,))
        events = apply_rows(model, numbered, encoded=encoded)
        await self._queue(numbered, events=events, durable=durable)
        return range(first, first + len(numbered))

    async def erase(self, message_ids: Sequence[str], reason: str, at: float) -> Erasure | None:
        if self._paged_writing is not None:  # (a check, not a call, on every write)
            await self._after_paged_write()
        plan = self._model.plan_erasure(message_ids, reason, at, REWRITES)
        if plan is None:
            return None
        erasure, body, states = plan
        record_id = self._model.next_id
        events = apply_rows(self._model, [(record_id, ERASURE_BRANCH, record_id, ERASURE, None, body)])
        await self._queue([(record_id, ERASURE_BRANCH, record_id, ERASURE, None, body)], _erase_statements(erasure, states), events=events)
        return erasure

    async def restore(self, pages: Iterable[Sequence[RowTuple]]) -> None:
        """:meth:`_write_pages` of a backup's pages into a file with no record, telling no
        listener."""
        await self._write_pages(lambda _first: pages, empty_only=True, tell=False)

    async def append_pages(self, branch: str, pages: Iterable[Sequence[PendingRow]]) -> range:
        """:meth:`_write_pages` of messages to append to ``branch``, numbered after every record
        before them; the listeners hear of them a page at a time, once committed."""
        return await self._write_pages(functools.partial(numbered_pages, self._model, branch, pages), empty_only=False, tell=True)

    async def _write_pages(
        self, pages_from: Callable[[int], Iterable[Sequence[RowTuple]]], *, empty_only: bool, tell: bool
    ) -> range:
        """Insert the pages ``pages_from(first id)`` gives in one transaction (``BEGIN
        IMMEDIATE``: the file's write lock, which a page drawn meanwhile keeps), commit, then
        apply the records to the model from the file a page at a time (each page committed, so
        it may leave the message cache), telling the listeners when ``tell``. Writes of this
        process wait for it (:meth:`commit` and :meth:`erase`), once those already made are
        committed. ``empty_only``: refuses (``StoreNotEmptyError``) a file that holds a record.
        A page that cannot be drawn or inserted rolls the transaction back, writing and
        applying nothing; a failed commit stops the store. Returns the ids written."""
        if self._paged_writing is not None:
            await self._after_paged_write()
        if empty_only and self._model.next_id != 1:
            raise StoreNotEmptyError(self.path)
        writing = self._paged_writing = anyio.Event()
        try:
            await self._after_commits()
            self._committing = True
            first, newest = self._model.next_id, self._model.next_id - 1
            # The indexer's and the merge's statements run between commits or inside one; a
            # transaction that may roll back takes them back too, so none runs inside this one.
            async with self._index_lock, self._compact_lock:
                await self._driver.execute("BEGIN IMMEDIATE")
                try:
                    for page in pages_from(first):
                        await self._insert(page)
                        newest = page[-1][0] if page else newest
                except BaseException:
                    with anyio.CancelScope(shield=True):
                        await self._driver.execute("ROLLBACK")
                    raise
                try:
                    with anyio.CancelScope(shield=True):
                        await self._driver.execute("COMMIT")
                except BaseException as exc:
                    self._stop(exc, newest + 1 - first, None)
                    raise StoreFailedError(f"the commit of a paged write to {self.path!r} failed; the store stopped") from exc
            self.commits += 1
            with anyio.CancelScope(shield=True):  # committed: the model reads it whatever happens
                async with self._open_read():
                    after = first - 1
                    while rows := await self._driver.execute(SELECT_PAGE, (after, RESTORE_PAGE)):
                        if tell:
                            events = apply_rows(self._model, rows)
                        else:
                            self._model.replay(rows)
                            events = []
                        self._note_commit(rows)  # committed: the page may leave memory
                        for event in events:
                            self._life.tell(event)
                        after = rows[-1][0]
            return range(first, newest + 1)
        finally:
            self._end_commit()
            self._paged_writing = None
            writing.set()
            if self._batch is not None or self._life.closing:
                self._wakeup.set()

    async def _queue(
        self,
        rows: Sequence[tuple[Any, ...]],
        erasures: Sequence[tuple[str, list[Any]]] = (),
        *,
        events: Sequence[StoreEvent] = (),
        durable: bool = True,
    ) -> None:
        """Queue rows already in memory, with an erasure's overwrites committed in the same
        transaction, tell the listeners of ``events``, then wait for the commit (``durable``)
        or have the committer start it."""
        batch = self._batch
        if batch is None and durable and not self._committing and not self._life.closing:
            await self._lead(rows, erasures, events)
            return
        if batch is None:
            batch = self._batch = _Batch(self._parking)
        batch.add(rows, erasures)
        for event in events:
            self._life.tell(event)
        if not durable:
            self._wakeup.set()
            return
        if not self._committing:
            self._wakeup.set()  # a running commit wakes the committer when it is done
        await batch.wait()
        if batch.error is not None:
            raise StoreFailedError(f"the commit holding this write to {self.path!r} failed; the store stopped") from batch.error

    # -- reads -------------------------------------------------------------------------------

    async def sync(self) -> None:
        """Nothing to do: one process owns the file, and this one wrote all it holds."""

    async def compile_rows(self, namespace: str | None, before: int | None, limit: int) -> list[RowTuple]:
        """The newest ``limit`` compile records (of ``namespace`` when given) with ids below
        ``before`` (when given), newest first, after the commit of every write already queued."""
        await self._queued_committed()
        if not self._has_log:
            return []
        try:
            rows = await self._driver.execute(*compile_rows_query("log", "?", namespace, before, limit))
        except sqlite3.Error as exc:
            raise open_error(self.path, exc) from exc
        return [tuple(row) for row in rows]

    async def _queued_committed(self) -> None:
        """Return once every write already queued is committed (``StoreFailedError`` if that
        commit failed)."""
        pending = self._batch
        if pending is not None:
            await pending.wait()
            if self.failure is not None:
                raise stopped(self.path, self.failure)

    @asynccontextmanager
    async def record_pages(self, size: int) -> AsyncIterator[PageReader]:
        """``Journal.record_pages``: one ``SELECT`` over the log (one statement, one snapshot)
        on a read-only connection of its own, a page fetched at a time in a worker thread;
        a file in memory, which no other connection reads, is read whole (a file with no log
        holds no record)."""
        await self._queued_committed()
        if not self._has_log or self.path == ":memory:":
            try:
                rows = [tuple(row) for row in await self._driver.execute(SELECT_ROWS)] if self._has_log else []
            except sqlite3.Error as exc:
                raise open_error(self.path, exc) from exc
            pages = iter([rows[start : start + size] for start in range(0, len(rows), size)])

            async def next_in_memory() -> list[RowTuple]:
                return next(pages, [])

            yield next_in_memory
            return
        what = "the records"

        def start() -> tuple[sqlite3.Connection, sqlite3.Cursor]:
            connection = sqlite3.connect(self._reader_uri(), uri=True, isolation_level=None, check_same_thread=False)
            try:
                return connection, connection.execute(SELECT_ROWS)
            except BaseException:
                connection.close()
                raise

        try:
            connection, cursor = await anyio.to_thread.run_sync(start)
        except (sqlite3.Error, OSError) as exc:
            raise StoreFailedError(f"{what} could not be read from {self.path!r}: {exc}") from exc

        async def next_page() -> list[RowTuple]:
            try:
                return [tuple(row) for row in await anyio.to_thread.run_sync(cursor.fetchmany, size)]
            except sqlite3.Error as exc:
                raise StoreFailedError(f"{what} could not be read from {self.path!r}: {exc}") from exc

        try:
            yield next_page
        finally:
            connection.close()

    async def catch_up(self) -> int:
        """A read-only open only: the records committed to the file since the newest one the
        model holds, in one ``SELECT`` (one read transaction: a commit is read whole or not at
        all), replayed with ``apply_rows`` and told as ``...Elsewhere`` events, as a shared
        journal does with other processes' commits.

        Raises :class:`StoreFailedError` when the file cannot be caught up with: opened while no
        writer held it (``immutable`` mode, which reads no later commit) and written since, or
        without a ``log`` table at the open; open it again instead. :class:`StoreCorruptError`
        for a record of the wrong types."""
        if not self.read_only:
            raise StoreFailedError(f"the store {self.path!r} is open for writing; catch_up is for read-only opens")
        if self._life.closed:
            raise StoreFailedError(f"the store {self.path!r} is closed")
        if not self._has_log:
            raise StoreFailedError(f"the store {self.path!r} had no log at its read-only open; open it again to read one")
        if isinstance(self._driver, ImmutableCheck):
            raise StoreFailedError(f"the store {self.path!r} was opened with no writer (immutable mode); open it again to read more")
        try:
            rows = [tuple(row) for row in await self._driver.execute(SELECT_ROWS_AFTER, (self._model.next_id - 1,))]
        except sqlite3.Error as exc:
            raise open_error(self.path, exc) from exc
        if not rows:
            return 0
        try:
            events = apply_rows(self._model, rows, elsewhere=True)
        except RecordTypeError as exc:
            raise StoreCorruptError(self.path, str(exc)) from None
        self._model.committed(int(rows[-1][0]))
        self.caught_up_records += len(rows)
        for event in events:
            self._life.tell(event)
        return len(rows)


class SqliteStore(Store):
    """A store file (or ``:memory:``): branches, message logs and state records, one process at
    a time (:class:`~store._store.Store` over a :class:`SqliteJournal`).

    Reads are synchronous and served from memory. Writes are async and durable when they return.
    Listeners registered with :meth:`add_listener` hear of every write synchronously, after the
    in-memory model changed and the write was queued for its commit, before the commit is
    awaited, in write order; a listener's exception is logged, never raised (:meth:`_tell`).
    """

    def __init__(self, journal: SqliteJournal, model: LogModel) -> None:
        super().__init__(journal, model)
        self._file = journal

    async def checkpoint_truncate(self) -> bool:
        """Copy the write-ahead log into the database file and empty it (``TRUNCATE``); whether
        it could (a reader in another process holding an old snapshot stops it). Logged when not."""
        return await self._file.checkpoint_truncate()


SELECT_ROWS = "SELECT id, branch, seq, kind, ref, body FROM log ORDER BY id"
# At the open of a file: a message's body is left in the file (NULL here) when it cannot name a
# reader, by the test ``store._records.body_may_hold_audience`` starts with (no ``"audience"``,
# no ``\u`` escape that could spell it); it is read when the message is (``_read_bodies``).
SELECT_PAGE_LEAVING_BODIES = (
    "SELECT id, branch, seq, kind, ref, CASE WHEN kind = 'compile' THEN NULL WHEN kind = 'message' AND typeof(body) = 'text' "
    "AND instr(body, '\"audience\"') = 0 AND instr(body, '\\u') = 0 THEN NULL ELSE body END FROM log WHERE id > ? ORDER BY id LIMIT ?"
)
SELECT_PAGE = "SELECT id, branch, seq, kind, ref, body FROM log WHERE id > ? ORDER BY id LIMIT ?"
# At the open of a file with ``STORED_INDEXES``: the records other than messages, state, compile
# and disclosure records (through ``log_open_records``). A state record's key and versions are
# read when a read needs them (``LogModel.read_rows_from``, through ``log_state_refs``), its value
# when it is read, and where it stands among its branch's messages when a read reaches its block
# (``GapBlocks``): the open reads how many gaps each block holds (``log_gap_blocks``; through
# ``log_gaps`` for a model with smaller blocks).
SELECT_RECORDS_PAGE = (
    "SELECT id, branch, seq, kind, ref, body FROM log WHERE kind NOT IN ('message', 'compile', 'disclosure', 'state') AND id > ? "
    "ORDER BY id LIMIT ?"
)
COUNT_GAPS = f"SELECT branch, seq >> ?, count(*) FROM log WHERE {GAP_ROW} GROUP BY 1, 2"
SELECT_GAP_BLOCKS = "SELECT branch, block, count FROM log_gap_blocks WHERE count > 0"
# The keys of a branch under a prefix ending in ``/`` written after a sequence, with their newest
# sequence (below an id): through ``log_state_after``, those whose parent is the prefix, then
# those whose parent is longer (none, for the keys a strategy writes); and, keyed ``NULL``, how
# many keys the parents from the prefix up to the next hold (``log_state_keys``), less those
# whose first record has an id from that bound on (read by id: the unary ``+`` keeps the planner
# off the indexes by key and by place, which would read every record under the prefix).
_STATE_KEYS_AFTER = (
    f"SELECT ref, max(seq) FROM log WHERE kind = 'state' AND branch = :branch AND {_PARENT} = :prefix AND seq > :sequence "
    f"AND id < :before GROUP BY ref UNION ALL SELECT ref, max(seq) FROM log WHERE kind = 'state' AND branch = :branch "
    f"AND {_PARENT} > :prefix AND {_PARENT} < :upper AND seq > :sequence AND id < :before GROUP BY ref UNION ALL "
    "SELECT NULL, coalesce((SELECT sum(keys) FROM log_state_keys WHERE branch = :branch AND parent >= :prefix "
    "AND parent < :upper), 0) - (SELECT count(DISTINCT l.ref) FROM log AS l WHERE l.id >= :before AND +l.kind = 'state' "
    f"AND +l.branch = :branch AND +l.ref >= :prefix AND +l.ref < :upper AND NOT EXISTS ({_other_record_of_key('l.', '< :before')}))"
)
SELECT_GAPS = f"SELECT seq FROM log WHERE branch = ? AND seq BETWEEN ? AND ? AND id < ? AND {GAP_ROW} ORDER BY seq"
# The versions of state records (``StoredRows.state_versions``): id, branch, sequence, key, and
# whether an erasure blanked it.
_STATE_VERSIONS = "SELECT id, branch, seq, ref, body = 'null' FROM log WHERE kind = 'state' AND id < ? AND "
# The same without whether it was blanked: from the index alone (``log_state_refs``).
_STATE_PLACES = "SELECT id, branch, seq, ref, 0 FROM log WHERE kind = 'state' AND id < ? AND "
# The disclosure records some run of which may hold a message id (``DisclosureLog.read_from``).
SELECT_DISCLOSURES_HOLDING = (
    "SELECT id, body FROM log WHERE id IN (SELECT record FROM log_disclosure_spans WHERE lo <= ? AND hi >= ?) "
    "AND kind = 'disclosure' ORDER BY id"
)
# A page of disclosure records, read when an audit asks (``DisclosureLog.read_from``).
SELECT_DISCLOSURES_PAGE = (
    "SELECT id, body FROM log WHERE kind = 'disclosure' AND id > ? ORDER BY id LIMIT ?"
)
# The runs of ids each (namespace, reader, via) was shown, as ``log_disclosed`` holds them.
SELECT_DISCLOSED = "SELECT namespace, reader, via, first, stop FROM log_disclosed"
# How many messages that may name a reader each block of each branch holds (``seq >> ?``), by the
# summary of who sees them, from the index of ``log_seers`` alone; and those with no summary.
COUNT_AUDIENCE = "SELECT branch, seq >> ?, seers, count(*) FROM log_seers WHERE seers != '?' GROUP BY 1, 2, 3"
SELECT_COUNTED = "SELECT branch, block, seers, count FROM log_seers_blocks WHERE seers != '?'"
_BODY_OF_SEERS_ROW = "(SELECT body FROM log WHERE log.branch = log_seers.branch AND log.seq = log_seers.seq AND kind = 'message')"
SELECT_UNDECIDED = f"SELECT branch, seq, {_BODY_OF_SEERS_ROW} FROM log_seers WHERE seers = '?'"
# One block's such messages: sequence, summary, and the body of one without a summary.
SELECT_AUDIENCE_ROWS = (
    f"SELECT seq, NULLIF(seers, '?'), CASE WHEN seers = '?' THEN {_BODY_OF_SEERS_ROW} END "
    "FROM log_seers WHERE branch = ? AND seq BETWEEN ? AND ? ORDER BY seq"
)
#: Records an open reads in one statement (a page of the replay).
REPLAY_PAGE = 50_000
SELECT_ROWS_AFTER = "SELECT id, branch, seq, kind, ref, body FROM log WHERE id > ? ORDER BY id"


def _erase_statements(erasure: Erasure, states: Sequence[int]) -> list[tuple[str, list[Any]]]:
    """The overwrites of an erasure (see store/_erasure.py), in statements of at most 900 ids."""
    body = erased_body(erasure.number)
    statements: list[tuple[str, list[Any]]] = []
    ids = list(erasure.message_ids)
    for start in range(0, len(ids), 900):
        chunk = ids[start : start + 900]
        marks = ",".join("?" * len(chunk))
        statements.append((f"UPDATE log SET body = ? WHERE kind = 'message' AND id IN ({marks})", [body, *(int(m) for m in chunk)]))
        statements.append((f"UPDATE log SET body = ? WHERE kind = 'edit' AND ref IN ({marks})", [body, *chunk]))
    for start in range(0, len(states), 900):
        records: list[Any] = list(states[start : start + 900])
        statements.append((f"UPDATE log SET body = 'null' WHERE kind = 'state' AND id IN ({','.join('?' * len(records))})", records))
    return statements


@functools.lru_cache(maxsize=64)
def _insert_sql(count: int) -> str:
    return "INSERT INTO log (id, branch, seq, kind, ref, body) VALUES " + ",".join(["(?,?,?,?,?,?)"] * count)
