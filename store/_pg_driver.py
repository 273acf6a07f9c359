"""The PostgreSQL connection of one store: psycopg 3's synchronous connection. Its commits of up
to :data:`HERE_ROWS` records, its announcements and its listening are driven from the event
loop's own thread, through libpq's non-blocking calls (``_pg_nonblocking``); everything else
(connecting, catch-ups, the locked commit, larger batches) runs in the store's worker thread.

Why not psycopg's ``AsyncConnection``: it runs on asyncio only. Under Trio it needs trio-asyncio,
which works only if trio-asyncio was imported before psycopg (psycopg binds asyncio's
``get_running_loop`` at import), which a library cannot promise. libpq's non-blocking calls, with
anyio waiting for the socket, work under both. Why not the worker thread for commits too: a
commit through the thread paid for two more wake-ups (the thread's, the event loop's), which on
a machine whose idle processors sleep cost more than the server's work (docs/postgres.md).

The synchronous methods of :class:`Connection` run in the worker thread, the ``async`` ones on
the event loop; never both at once (the committer runs one at a time). Each is one round trip
(statements are pipelined), and each either completes or raises a psycopg error, leaving no
transaction open behind it.

The same connection listens for other processes' commits (``LISTEN``): its own commits'
notifications come back on it, just after their answers, and are dropped, instead of waking a
second connection (and its server process) for every commit. While the store is idle, the event
loop waits on the connection's socket (:meth:`Connection.wait_for_notifications`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import string
from collections.abc import Iterable, Sequence
from typing import Any

import anyio

from ._compile_records import compile_rows_query
from ._disclosure import merged_runs
from ._key_numbers import key_number
from ._model import GAP_ROW
from ._pg_nonblocking import encode_params, prepare, run_prepared
from ._pg_schema import (
    CHANNEL,
    COUNTED_BITS,
    ID_KEY,
    PG_PARENT,
    PG_STORED_MADE,
    audit_anchor,
    build_search,
    build_states,
    may_name_a_reader,
    prepare_schema,
    search_state,
    states_from,
)
from ._pg_vacuum import VACUUM_LOCK_NAME, OwedVacuum, owed_mark, owed_vacuum, pay_owed_vacuum
from ._records import audience_groups
from ._seers import Seers

__all__ = ["Connection", "connect", "is_connection_error", "session_lock_key", "set_durability"]

log = logging.getLogger("asides.store")

RowTuple = tuple[int, str, int, str, str | None, str]

#: Records after an id, a page at a time. The limit makes the planner walk the primary key in
#: order: without it, on a log the server has not analysed yet, it expected nearly every row and
#: planned a sort behind a parallel scan, which cost milliseconds for the few rows a catch-up
#: reads (measured: 4.4 ms for 3 rows at 28,000 records; 4 writer processes then made 190
#: commits a second instead of 800).
_SELECT_AFTER = "SELECT id, branch, seq, kind, ref, body FROM asides_log WHERE id > %s ORDER BY id LIMIT %s"
#: As ``_SELECT_AFTER``, leaving out the body of every message that cannot name a reader (the
#: first test of ``body_may_hold_audience``, as a store file's open does): the open's replay.
_SELECT_AFTER_LEAVING_BODIES = (
    "SELECT id, branch, seq, kind, ref, CASE WHEN kind = 'compile' THEN NULL "
    "WHEN kind = 'message' AND position('\"audience\"' in body) = 0 "
    "AND position('\\u' in body) = 0 THEN NULL ELSE body END FROM asides_log WHERE id > %s ORDER BY id LIMIT %s"
)
PAGE_ROWS = 5000
#: At an open that leaves the messages in the database (``Connection.stored_open``): the records
#: other than messages, state, compile and disclosure records, how many gaps (edits, states) each
#: block of each branch holds, and where the messages stand whose body may name a reader (by the
#: same test as above), through the indexes ``PG_STORED_INDEXES`` makes. A state record's key
#: and versions are read when a read needs them (through ``asides_log_state_refs``), its value
#: when it is read, where it stands among the messages when a read reaches its block
#: (``StoredRows.gap_sequences``, through ``asides_log_gaps``).
_SELECT_RECORDS_AFTER = (
    "SELECT id, branch, seq, kind, ref, body FROM asides_log WHERE kind NOT IN ('message', 'compile', 'disclosure', 'state') "
    "AND id > %s ORDER BY id LIMIT %s"
)
_COUNT_GAPS = f"SELECT branch, seq >> %s::int, count(*) FROM asides_log WHERE {GAP_ROW} GROUP BY 1, 2"
#: The same for blocks of ``1 << COUNTED_BITS`` sequences: the counts the log's triggers keep.
_SELECT_GAP_BLOCKS = "SELECT branch, block, count FROM asides_log_gap_blocks WHERE count > 0"
_SELECT_GAPS = f"SELECT seq FROM asides_log WHERE branch = %s AND seq BETWEEN %s AND %s AND id < %s AND {GAP_ROW} ORDER BY seq"
#: The keys of a branch under a prefix ending in ``/`` written after a sequence, with their
#: newest sequence below an id (through ``asides_log_state_after``: those whose parent is the
#: prefix, then those whose parent is longer, none for the keys a strategy writes); and, keyed
#: ``NULL``, how many keys the parents from the prefix up to the next hold
#: (``asides_log_state_keys``), less those whose first record has an id from that bound on. Each
#: ``OFFSET 0`` fences the planner in: those records are read by id alone (the records the model
#: has not caught up with), never through an index of every state record under the prefix, and
#: the ``NOT EXISTS`` is a lookup a record (through ``asides_log_state_refs``), never a hash of
#: every state record's key.
_STATE_KEYS_AFTER = (
    f"SELECT ref, max(seq) FROM asides_log WHERE kind = 'state' AND branch = %(branch)s AND {PG_PARENT} = %(prefix)s "
    "AND seq > %(sequence)s AND id < %(before)s GROUP BY ref UNION ALL SELECT ref, max(seq) FROM asides_log "
    f"WHERE kind = 'state' AND branch = %(branch)s AND {PG_PARENT} > %(prefix)s AND {PG_PARENT} < %(upper)s "
    "AND seq > %(sequence)s AND id < %(before)s GROUP BY ref UNION ALL "
    "SELECT NULL, coalesce((SELECT sum(keys) FROM asides_log_state_keys WHERE branch = %(branch)s AND parent >= %(prefix)s "
    "AND parent < %(upper)s), 0) - (SELECT count(DISTINCT l.ref) FROM (SELECT kind, branch, ref FROM asides_log "
    "WHERE id >= %(before)s OFFSET 0) AS l WHERE l.kind = 'state' AND l.branch = %(branch)s AND l.ref LIKE %(like)s "
    "AND NOT EXISTS (SELECT 1 FROM asides_log AS e WHERE e.kind = 'state' AND e.ref = l.ref AND e.branch = l.branch "
    "AND e.id < %(before)s OFFSET 0))"
)
#: The versions of state records (``StoredRows.state_versions``): id, branch, sequence, key,
#: and whether an erasure blanked it.
_STATE_VERSIONS = "SELECT id, branch, seq, ref, body = 'null' FROM asides_log WHERE kind = 'state' AND id < %s AND "
#: The same without whether it was blanked: from the index alone (``asides_log_state_refs``).
_STATE_PLACES = "SELECT id, branch, seq, ref, false FROM asides_log WHERE kind = 'state' AND id < %s AND "
_MAY_NAME_A_READER = may_name_a_reader("")
#: A page of disclosure records, read when an audit asks (``DisclosureLog.read_from``).
_SELECT_DISCLOSURES_AFTER = (
    "SELECT id, body FROM asides_log WHERE kind = 'disclosure' AND id > %s ORDER BY id LIMIT %s"
)
#: The disclosure records some run of which holds a message id (``DisclosureLog.read_from``).
_SELECT_DISCLOSURES_HOLDING = (
    "SELECT id, body FROM asides_log WHERE id IN (SELECT record FROM asides_log_disclosure_spans WHERE span @> %s::bigint) "
    "AND kind = 'disclosure' ORDER BY id"
)
#: The lock a compaction of ``asides_log_disclosed`` holds (``Connection.compact_disclosed``).
COMPACTION_LOCK_NAME = "disclosed runs"
#: The runs of ids each (namespace, reader, via) was shown (``PG_DISCLOSED_TABLE``).
_SELECT_DISCLOSED = "SELECT namespace, reader, via, first, stop FROM asides_log_disclosed"
#: How many such messages each block of each branch holds (``seq >> n``), by the summary of who
#: sees them that their bodies record (``NULL``: none).
_COUNT_AUDIENCE = (
    "SELECT branch, seq >> %s::int, seers, count(*) FROM (SELECT branch, seq, asides_seers(body) AS seers "
    f"FROM asides_log WHERE {_MAY_NAME_A_READER}) AS found WHERE seers IS NOT NULL GROUP BY 1, 2, 3"
)
#: The others (no summary), with their bodies.
_SELECT_UNDECIDED = f"SELECT branch, seq, body FROM asides_log WHERE {_MAY_NAME_A_READER} AND asides_seers(body) IS NULL"
#: The same two, for blocks of ``1 << COUNTED_BITS`` sequences: the counts the log's triggers keep,
#: and the messages without a summary in the blocks that hold one.
_SELECT_COUNTED = "SELECT branch, block, seers, count FROM asides_log_seers_blocks WHERE seers <> '?'"
_SELECT_UNDECIDED_COUNTED = (
    "SELECT l.branch, l.seq, l.body FROM asides_log_seers_blocks AS b JOIN asides_log AS l ON l.branch = b.branch "
    f"AND l.seq BETWEEN b.block << {COUNTED_BITS} AND ((b.block + 1) << {COUNTED_BITS}) - 1 "
    f"WHERE b.seers = '?' AND {may_name_a_reader('l.')} "
    "AND asides_seers(l.body) IS NULL"
)
#: One block's such messages: sequence, summary, and the body of one without a summary.
_SELECT_AUDIENCE_ROWS = (
    "SELECT seq, seers, CASE WHEN seers IS NULL THEN body END FROM (SELECT seq, body, asides_seers(body) AS seers "
    f"FROM asides_log WHERE branch = %s AND seq BETWEEN %s AND %s AND {_MAY_NAME_A_READER}) AS found ORDER BY seq"
)
#: Append rows: one statement, so in autocommit mode one round trip commits it. Its records are
#: numbered after the newest record this process has seen; when another process committed
#: meanwhile, the first of those ids is taken, and the statement fails whole on the primary key
#: (:data:`ID_KEY`), writing nothing. The announcing form also notifies the other processes
#: (``NOTIFY asides_log, '<schema>:<newest id>'``, sent with the commit). A batch of up to
#: :data:`VALUES_ROWS` rows is sent as plain parameters (adapting six arrays costs more than the
#: statement's own work on the server); a larger one as six arrays.
#: What the index says of the state records under a prefix: a row saying from which record it
#: holds them (none: it was made before it held them), the rows it holds that match, and every
#: state record under the prefix from the first record it has not reached. The plan is spelled
#: out: the index's matches first (``MATERIALIZED``), then their records by id; the records not
#: reached by id from where it stands; ``kind || ''`` so that no index of state records by key is
#: walked instead (which would read every key under the prefix). ``COLLATE "C"``: the keys' code
#: point order, as SQLite's.
_STATES_MATCHING = (
    "WITH hits AS MATERIALIZED (SELECT id FROM asides_search WHERE words @@ to_tsquery('simple', %(query)s) "
    "AND message IS NULL), reached AS MATERIALIZED (SELECT value::bigint AS id FROM asides_meta WHERE key = 'search_next') "
    "SELECT 0, value::bigint, NULL, NULL FROM asides_meta WHERE key = 'search_states_from' UNION ALL "
    "SELECT 1, l.id, l.ref, NULL FROM hits JOIN asides_log l ON l.id = hits.id WHERE l.kind || '' = 'state' "
    "AND l.ref COLLATE \"C\" >= %(prefix)s AND l.ref COLLATE \"C\" < %(upper)s UNION ALL "
    "SELECT 2, l.id, l.ref, l.body FROM reached JOIN asides_log l ON l.id >= reached.id WHERE l.kind || '' = 'state' "
    "AND l.ref COLLATE \"C\" >= %(prefix)s AND l.ref COLLATE \"C\" < %(upper)s"
)
#: The log's tables in the store's schema (quoted): the log and those its triggers keep.
_LOG_TABLES = (
    "SELECT quote_ident(c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname LIKE 'asides\\_log%' ORDER BY 1"
)
_APPEND = "INSERT INTO asides_log (id, branch, seq, kind, ref, body) {rows}"
_ANNOUNCED = f"WITH appended AS ({_APPEND} RETURNING id) SELECT pg_notify('{CHANNEL}', current_schema() || ':' || max(id)) FROM appended"
_ANNOUNCE = f"SELECT pg_notify('{CHANNEL}', current_schema() || ':' || %s::bigint)"
_UNNEST = (
    "SELECT * FROM unnest(%(ids)s::bigint[], %(branches)s::text[], %(seqs)s::bigint[], %(kinds)s::text[], %(refs)s::text[], "
    "%(bodies)s::text[])"
)
VALUES_ROWS = 8
_VALUES_ROW = "(%s::bigint, %s::text, %s::bigint, %s::text, %s::text, %s::text)"


def _append_statement(rows: Sequence[RowTuple]) -> tuple[str, Any]:
    """The statement appending ``rows`` and announcing them, and its parameters."""
    if len(rows) > VALUES_ROWS:
        return _ANNOUNCED.replace("{rows}", _UNNEST), _columns(rows)
    return _ANNOUNCED.replace("{rows}", _values(len(rows))), tuple(value for row in rows for value in row)


def _values(n: int) -> str:
    return "VALUES " + ", ".join([_VALUES_ROW] * n)


def _numbered(statement: str) -> bytes:
    """``statement`` with libpq's numbered placeholders instead of psycopg's ``%s``."""
    parts = statement.split("%s")
    return "".join(part + (f"${i + 1}" if i < len(parts) - 1 else "") for i, part in enumerate(parts)).encode()


#: The most records a commit sends from the event loop (a prepared statement per count, made
#: when first used); a larger batch goes through the worker thread as six arrays.
HERE_ROWS = 64


def _prepared_statement(rows: int, announce: bool) -> tuple[bytes, bytes]:
    """The name and text of the prepared append of ``rows`` records, announcing or not."""
    if announce:
        return b"asides_append_%d" % rows, _numbered(_ANNOUNCED.replace("{rows}", _values(rows)))
    return b"asides_append_quietly_%d" % rows, _numbered(_APPEND.replace("{rows}", _values(rows)))


_ANNOUNCE_NAME = b"asides_announce"


def _taken(exc: BaseException) -> bool:
    """Whether ``exc`` says another process took the first id of the records being appended."""
    import psycopg

    return isinstance(exc, psycopg.errors.UniqueViolation) and exc.diag.constraint_name == ID_KEY


#: How long a session may sit inside a transaction (holding the write lock) before the server
#: ends it: a stalled process cannot stop every other writer for longer than this.
IDLE_IN_TRANSACTION_MS = 10_000
#: How long a commit waits for the write lock before it fails (writing nothing).
LOCK_TIMEOUT_MS = 30_000
#: Connection settings applied unless the URL sets them: over TCP, a silent peer (a network
#: partition, a host gone) is noticed in about half a minute instead of the system's hours.
CONNECTION_DEFAULTS = {
    "keepalives": "1",
    "keepalives_idle": "10",
    "keepalives_interval": "5",
    "keepalives_count": "3",
    "tcp_user_timeout": "30000",
}


#: Server-side settings of the store's sessions: the server probes an idle client every 10 s and
#: ends the session after 3 unanswered probes 5 s apart (or 30 s of unacknowledged data), so a
#: client host that vanished (a crash, a partition) has its session, and the session locks it
#: held (a compression lease), ended in about half a minute instead of the system's hours. A
#: client *process* that dies on a live host closes its socket, and the server ends its session
#: at once. (Ignored on a Unix socket, where a dead peer is always seen at once.)
SERVER_KEEPALIVES = {
    "tcp_keepalives_idle": 10,
    "tcp_keepalives_interval": 5,
    "tcp_keepalives_count": 3,
    "tcp_user_timeout": 30000,
}


def _set_server_keepalives(conn: Any) -> None:
    """Apply :data:`SERVER_KEEPALIVES` to the session, skipping a setting the server does not
    know (``tcp_user_timeout`` is PostgreSQL 12 and later)."""
    import psycopg

    for setting, value in SERVER_KEEPALIVES.items():
        try:
            conn.execute(f"SET {setting} = {value}")
        except psycopg.errors.UndefinedObject:
            log.debug("the server has no setting %s; its sessions go without it", setting)


def _open(url: str, connect_timeout: float) -> Any:
    """A psycopg connection in autocommit mode, with :data:`CONNECTION_DEFAULTS` for what the
    URL leaves unset, and an application name saying which process it is, for people reading
    ``pg_stat_activity`` (and a compression lease's holder, see :func:`read_session_lock_holders`),
    unless the URL names one."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    given = conninfo_to_dict(url)
    extra: dict[str, Any] = {key: value for key, value in CONNECTION_DEFAULTS.items() if key not in given}
    extra.setdefault("fallback_application_name", f"asides pid {os.getpid()}")
    if "connect_timeout" not in given:
        extra["connect_timeout"] = max(1, int(connect_timeout))
    return psycopg.connect(url, autocommit=True, **extra)


def _sets_synchronous_commit(url: str) -> bool:
    from psycopg.conninfo import conninfo_to_dict

    return "synchronous_commit" in str(conninfo_to_dict(url).get("options", ""))


def is_connection_error(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection is unusable (lost, refused, closed)."""
    import psycopg

    return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)


def _columns(rows: Sequence[RowTuple]) -> dict[str, list[Any]]:
    return {
        "ids": [r[0] for r in rows],
        "branches": [r[1] for r in rows],
        "seqs": [r[2] for r in rows],
        "kinds": [r[3] for r in rows],
        "refs": [r[4] for r in rows],
        "bodies": [r[5] for r in rows],
    }



def _starting_with(prefix: str) -> str:
    """The ``LIKE`` pattern of the keys that start with ``prefix`` (left-anchored, which the
    index's ``text_pattern_ops`` serve)."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class Connection:
    """A store's writing (and catching-up) connection."""

    def __init__(self, conn: Any, schema: str) -> None:
        self._conn = conn
        self.schema = schema
        self.in_transaction = False
        self._prepared: set[bytes] = set()
        self._own_pid = int(conn.info.backend_pid)
        self._prefix = schema + ":"
        #: The newest record id another process's commit announced on this connection (0: none).
        self.announced = 0
        #: Session locks (``pg_advisory_lock`` keys) this session holds on the server, and the
        #: names counting on each (two names whose keys collide share one lock). A new
        #: connection holds none: its session took none, and a lost session's locks are gone.
        self.session_locks: dict[int, set[str]] = {}
        conn.add_notify_handler(lambda notify: self._note(notify.pid, notify.payload))

    def _note(self, pid: int, payload: str) -> None:
        """Take a notification: another process committed up to the id it names (this store's
        own commits, and other stores' in the same database, are not news)."""
        if pid == self._own_pid or not payload.startswith(self._prefix):
            return
        newest = key_number(payload[len(self._prefix) :])
        if newest is not None:
            self.announced = max(self.announced, newest)

    def _take_notifications(self) -> None:
        """Take the notifications libpq has read and not handed out yet."""
        pgconn = self._conn.pgconn
        while (notify := pgconn.notifies()) is not None:
            self._note(notify.be_pid, notify.extra.decode("utf-8", "replace"))

    async def wait_for_notifications(self) -> None:
        """Return once the server sent something on this idle connection (notifications, now
        taken into :attr:`announced`). Raises ``psycopg.OperationalError`` when the connection
        is lost. Only while no other call uses the connection."""
        import psycopg

        pgconn = self._conn.pgconn
        before = self.announced
        self._take_notifications()
        if self.announced > before:  # read already, not handed out yet
            return
        await anyio.wait_readable(pgconn.socket)
        pgconn.consume_input()
        if pgconn.status != psycopg.pq.ConnStatus.OK:
            raise psycopg.OperationalError("the connection to the store was lost")
        self._take_notifications()

    @property
    def broken(self) -> bool:
        return bool(self._conn.closed or self._conn.broken)

    @property
    def backend_pid(self) -> int:
        """The server process of this connection (it signs the notifications of its commits)."""
        return int(self._conn.info.backend_pid)

    def search(self, query: Sequence[str]) -> tuple[list[int], int | None]:
        """The ids of the messages some version of which holds every word of ``query``, and
        the first record id the index has not reached (``None``: the store has no index), on a
        connection that commits nothing else."""
        reached = search_state(self._conn)
        if reached is None:
            return [], None
        rows = self._conn.execute(
            "SELECT DISTINCT message FROM asides_search WHERE words @@ to_tsquery('simple', %s)", (" & ".join(query),)
        ).fetchall()
        return [int(row[0]) for row in rows], reached

    def states_matching(
        self, prefix: str, upper: str, words: Sequence[str]
    ) -> tuple[list[tuple[int, str]], list[tuple[int, str, str]]] | None:
        """``StoredRows.states_matching`` for the keys from ``prefix`` up to ``upper``, in one
        statement (one snapshot); ``None`` unless the index holds every state record it reached."""
        try:
            rows = self._conn.execute(_STATES_MATCHING, {"query": " & ".join(words), "prefix": prefix, "upper": upper}).fetchall()
        except Exception as exc:
            if getattr(exc, "sqlstate", None) == "42P01":  # undefined_table: a store with no index (a read-only open's)
                return None
            raise
        if [i for part, i, _r, _body in rows if part == 0] != [1]:
            return None
        indexed = [(int(i), r) for part, i, r, _body in rows if part == 1]
        return indexed, [(int(i), r, body) for part, i, r, body in rows if part == 2]

    def audit_anchor(self) -> str | None:
        """The value anchoring the store's audit exports (``None``: none yet)."""
        return audit_anchor(self._conn)

    def search_state(self) -> int | None:
        """The first record id the index has not reached (``None``: the store has no index)."""
        return search_state(self._conn)

    def build_search(self, first: int, last: int) -> int:
        """One batch of the indexer (``_pg_schema.build_search``)."""
        return build_search(self._conn, first, last)

    def states_from(self) -> int | None:
        """The first record from which the index holds state records (``_pg_schema.states_from``)."""
        return states_from(self._conn)

    def build_states(self, first: int, last: int) -> int:
        """One batch of the indexer filling in earlier state records (``_pg_schema.build_states``)."""
        return build_states(self._conn, first, last)

    def compile_rows(self, namespace: str | None, before: int | None, limit: int) -> list[RowTuple]:
        """The newest ``limit`` compile records (of ``namespace`` when given) with ids below
        ``before`` (when given), newest first."""
        return self._conn.execute(*compile_rows_query("asides_log", "%s", namespace, before, limit)).fetchall()  # type: ignore[no-any-return]

    def rows_after(self, applied: int, *, leave_bodies: bool = False) -> list[RowTuple]:
        """Every record with an id above ``applied``, in id order (read a page at a time; the
        log only grows at its end, so the pages join up). With ``leave_bodies``, a message that
        cannot name a reader comes with no body (``None``), read when first asked
        (:meth:`bodies`)."""
        query = _SELECT_AFTER_LEAVING_BODIES if leave_bodies else _SELECT_AFTER
        return self._pages_from(self.page_after(applied, query=query), query)

    def page_after(self, after: int, size: int = PAGE_ROWS, query: str = _SELECT_AFTER) -> list[RowTuple]:
        """The first ``size`` records with an id above ``after`` that ``query`` reads, in id
        order (``_SELECT_AFTER``: bodies included)."""
        return self._conn.execute(query, (after, size)).fetchall()  # type: ignore[no-any-return]

    def begin_snapshot(self) -> None:
        """Begin a read-only transaction of repeatable read, which every later read of this
        connection sees as one snapshot, with no idle timeout (its reader sets the pace)."""
        self._conn.execute("SET idle_in_transaction_session_timeout = 0")
        self._conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        self.in_transaction = True

    def _pages_from(self, page: list[RowTuple], query: str = _SELECT_AFTER) -> list[RowTuple]:
        """``page`` and every record after it that ``query`` reads, when it is a full page."""
        rows = list(page)
        while len(page) == PAGE_ROWS:
            page = self.page_after(page[-1][0], query=query)
            rows.extend(page)
        return rows

    def has_stored_indexes(self) -> bool:
        row = self._conn.execute(PG_STORED_MADE).fetchone()
        return bool(row[0])

    def stored_open(
        self, bits: int
    ) -> tuple[list[RowTuple], dict[str, int], list[tuple[str, int, Seers | None, int]], list[tuple[Any, ...]], int, list[tuple[Any, ...]]]:
        """In one snapshot: every record other than messages, state, compile and disclosure
        records (in id order), each branch's newest sequence, how many messages whose body may
        name a reader each block of ``1 << bits`` sequences of each branch holds by the summary
        of who sees them that their bodies record (store/_seers.py), the runs of ids each
        ``(namespace, reader, via)`` was shown (store/_disclosure.py), the newest record id, and
        how many gaps each block of each branch holds (``LogModel.count_gaps``)."""
        with self._conn.transaction():
            self._conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            if bits == COUNTED_BITS:
                gaps = self._conn.execute(_SELECT_GAP_BLOCKS).fetchall()
            else:
                gaps = self._conn.execute(_COUNT_GAPS, (bits,)).fetchall()
            rows = self._pages_from(self.page_after(0, query=_SELECT_RECORDS_AFTER), _SELECT_RECORDS_AFTER)
            names = {"main", *(row[1] for row in rows if row[3] == "branch")}
            heads: dict[str, int] = {}
            for name in names:
                found = self._conn.execute("SELECT max(seq) FROM asides_log WHERE branch = %s", (name,)).fetchone()
                if found[0] is not None:
                    heads[name] = int(found[0])
            if bits == COUNTED_BITS:
                counted = self._conn.execute(_SELECT_COUNTED).fetchall()
                undecided = self._conn.execute(_SELECT_UNDECIDED_COUNTED).fetchall()
            else:
                counted = self._conn.execute(_COUNT_AUDIENCE, (bits,)).fetchall()
                undecided = self._conn.execute(_SELECT_UNDECIDED).fetchall()
            audience = audience_groups(counted, undecided, bits)
            disclosed = self._conn.execute(_SELECT_DISCLOSED).fetchall()
            newest = self._conn.execute("SELECT max(id) FROM asides_log").fetchone()[0]
        return rows, heads, audience, disclosed, int(newest or 0), gaps

    def disclosure_page(self, after: int, limit: int) -> list[tuple[int, str]]:
        return [(int(i), body) for i, body in self._conn.execute(_SELECT_DISCLOSURES_AFTER, (after, limit)).fetchall()]

    def disclosures_holding(self, message_id: int) -> list[tuple[int, str]]:
        return [(int(i), body) for i, body in self._conn.execute(_SELECT_DISCLOSURES_HOLDING, (message_id,)).fetchall()]

    def compact_disclosed(self) -> tuple[int, int]:
        """Merge the runs of ``asides_log_disclosed``, in one transaction that holds off every
        other process's compaction: the rows read are deleted by id, so a row another process
        commits meanwhile is kept. How many rows it deleted and how many it wrote."""
        with self._conn.transaction():
            self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (session_lock_key(self.schema, COMPACTION_LOCK_NAME),))
            rows = self._conn.execute("SELECT id, namespace, reader, via, first, stop FROM asides_log_disclosed").fetchall()
            if not rows:
                return 0, 0
            merged = merged_runs(row[1:] for row in rows)
            with self._conn.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO asides_log_disclosed (namespace, reader, via, first, stop) VALUES (%s, %s, %s, %s, %s)", merged
                )
            self._conn.execute("DELETE FROM asides_log_disclosed WHERE id = ANY(%s)", ([row[0] for row in rows],))
            return len(rows), len(merged)

    def message_rows(self, branch: str, first: int, last: int, bodies: bool) -> list[tuple[int, int, str | None]]:
        column = "body" if bodies else "NULL"
        query = f"SELECT id, seq, {column} FROM asides_log WHERE branch = %s AND seq BETWEEN %s AND %s AND kind = 'message'"  # noqa: S608 - a column
        return [(int(i), int(q), b) for i, q, b in self._conn.execute(query, (branch, first, last)).fetchall()]

    def gap_sequences(self, branch: str, first: int, last: int, before: int) -> list[int]:
        return [int(row[0]) for row in self._conn.execute(_SELECT_GAPS, (branch, first, last, before)).fetchall()]

    def audience_rows(self, branch: str, first: int, last: int) -> list[tuple[int, str | None, str | None]]:
        rows = self._conn.execute(_SELECT_AUDIENCE_ROWS, (branch, first, last)).fetchall()
        return [(int(q), summary, body) for q, summary, body in rows]

    def message_places(self, ids: Sequence[int]) -> list[tuple[int, str, int]]:
        rows = self._conn.execute("SELECT id, branch, seq FROM asides_log WHERE id = ANY(%s) AND kind = 'message'", (list(ids),))
        return [(int(i), str(b), int(q)) for i, b, q in rows.fetchall()]

    def message_page(self, after: int, limit: int) -> list[tuple[int, str, int, str | None]]:
        rows = self._conn.execute(
            "SELECT id, branch, seq, body FROM asides_log WHERE kind = 'message' AND id > %s ORDER BY id LIMIT %s", (after, limit)
        ).fetchall()
        return [(int(i), str(b), int(q), body if type(body) is str else None) for i, b, q, body in rows]

    def all_message_ids(self) -> list[int]:
        return [int(row[0]) for row in self._conn.execute("SELECT id FROM asides_log WHERE kind = 'message' ORDER BY id").fetchall()]

    def bodies(self, ids: Sequence[int]) -> dict[int, str]:
        """The bodies of these records, in one round trip (one statement)."""
        rows = self._conn.execute("SELECT id, body FROM asides_log WHERE id = ANY(%s)", (list(ids),)).fetchall()
        return {int(record_id): body for record_id, body in rows if type(body) is str}

    def state_versions(
        self,
        before: int,
        keys: Sequence[str] | None,
        prefix: str | None,
        suffix: str | None,
        containing: str | None,
        blanked: bool = True,
    ) -> list[tuple[int, str, int, str, bool]]:
        """``StoredRows.state_versions``, in one round trip."""
        parameters: list[Any]
        if keys is not None:
            where, parameters = "ref = ANY(%s)", [list(keys)]
        elif prefix:  # a left-anchored LIKE, which the index's text_pattern_ops serve
            where, parameters = "ref LIKE %s", [_starting_with(prefix)]
        elif suffix:
            where, parameters = "right(ref, %s) = %s", [len(suffix), suffix]
        elif containing:
            where, parameters = "strpos(ref, %s) > 0", [containing]
        else:
            where, parameters = "true", []
        rows = self._conn.execute((_STATE_VERSIONS if blanked else _STATE_PLACES) + where, [before, *parameters]).fetchall()
        return [(int(i), b, int(q), r, bool(n)) for i, b, q, r, n in rows]

    def state_sequences_after(self, before: int, branch: str, prefix: str, sequence: int) -> tuple[int, list[tuple[str, int]]]:
        """``StoredRows.state_sequences_after``: for a prefix ending in ``/``, one statement (one
        snapshot) reading a row a parent and a row a record written after ``sequence``
        (``_STATE_KEYS_AFTER``); otherwise two queries that read every key under the prefix."""
        if prefix.endswith("/"):
            upper = prefix[:-1] + chr(ord("/") + 1)  # the keys from ``prefix`` up to the next prefix
            like = _starting_with(prefix)
            named = {"branch": branch, "prefix": prefix, "upper": upper, "like": like, "sequence": sequence, "before": before}
            rows = self._conn.execute(_STATE_KEYS_AFTER, named).fetchall()
            after = [(key, int(seq)) for key, seq in rows if key is not None]
            (held,) = [int(seq) for key, seq in rows if key is None]
            return held - len(after), after
        grouped = "FROM asides_log WHERE kind = 'state' AND id < %s AND branch = %s AND ref LIKE %s GROUP BY ref HAVING max(seq) "
        parameters = [before, branch, _starting_with(prefix), sequence]
        row = self._conn.execute(f"SELECT count(*) FROM (SELECT ref {grouped}<= %s) AS counted", parameters).fetchone()
        after = self._conn.execute(f"SELECT ref, max(seq) {grouped}> %s", parameters).fetchall()
        return int(row[0]) if row else 0, [(key, int(seq)) for key, seq in after]

    def state_record_page(self, after: int, before: int, limit: int) -> list[tuple[int, str, str, str]]:
        rows = self._conn.execute(
            "SELECT id, branch, ref, body FROM asides_log WHERE kind = 'state' AND id > %s AND id < %s AND body <> 'null' "
            "ORDER BY id LIMIT %s",
            (after, before, limit),
        ).fetchall()
        return [(int(i), b, r, t) for i, b, r, t in rows]

    def records_holding(self, ids: Sequence[int], words: Sequence[str]) -> set[int]:
        """Those of these records whose body holds every one of ``words`` (lowercase ASCII) in any
        case, or holds a character past ASCII, in one round trip. ASCII letters are folded by
        ``translate``, not ``lower`` (which follows the database's locale)."""
        holds = " AND ".join("strpos(translate(body, %s, %s), %s) > 0" for _word in words)
        parameters: list[Any] = [list(ids)]
        for word in words:
            parameters.extend((string.ascii_uppercase, string.ascii_lowercase, word))
        query = f"SELECT id FROM asides_log WHERE id = ANY(%s) AND (octet_length(body) <> char_length(body) OR ({holds}))"  # noqa: S608
        return {int(row[0]) for row in self._conn.execute(query, parameters).fetchall()}

    def rows_with_ids(self, ids: list[int]) -> list[RowTuple]:
        return self._conn.execute(  # type: ignore[no-any-return]
            "SELECT id, branch, seq, kind, ref, body FROM asides_log WHERE id = ANY(%s) ORDER BY id", (ids,)
        ).fetchall()

    def append(self, rows: Sequence[RowTuple]) -> bool:
        """Commit ``rows``, numbered after the newest record this process has seen; ``False``
        when another process committed first (and nothing was written)."""
        try:
            self._conn.execute(*_append_statement(rows))
        except Exception as exc:
            if _taken(exc):
                return False
            raise
        return True

    async def append_here(self, rows: Sequence[RowTuple], *, announce: bool) -> bool | None:
        """:meth:`append`, run from the event loop's thread (``_pg_nonblocking``), announcing the
        commit only with ``announce``; ``None`` when these rows cannot go this way (too many, or
        a NUL character), and nothing was sent."""
        if not 0 < len(rows) <= HERE_ROWS:
            return None
        params = encode_params([value for row in rows for value in row])
        if params is None:
            return None
        try:
            await self._run_here(*_prepared_statement(len(rows), announce), params)
        except Exception as exc:
            if not _taken(exc):
                raise
            return False
        return True

    async def announce_here(self, newest: int) -> None:
        """Notify the other processes that records up to ``newest`` were committed (as an
        announcing append does), from the event loop's thread."""
        await self._run_here(_ANNOUNCE_NAME, _numbered(_ANNOUNCE), [b"%d" % newest])

    async def _run_here(self, name: bytes, statement: bytes, params: Sequence[bytes | None]) -> None:
        """Run ``statement`` prepared as ``name`` on this connection (preparing it first, once)."""
        pgconn = self._conn.pgconn
        if name not in self._prepared:
            await prepare(pgconn, name, statement)
            self._prepared.add(name)
        try:
            await run_prepared(pgconn, name, params)
        finally:
            if not self.broken:
                self._take_notifications()

    def try_session_lock(self, key: int) -> bool:
        """Take the session-level advisory lock ``key`` if no other session holds it (one round
        trip; it never waits); whether this session holds it now."""
        (taken,) = self._conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone() or (False,)
        if taken:
            self.session_locks.setdefault(key, set())
        return bool(taken)

    def session_unlock(self, key: int) -> None:
        """Give the session lock ``key`` back, if this session holds it and no name counts on it."""
        if key in self.session_locks and not self.session_locks[key]:
            del self.session_locks[key]
            self._conn.execute("SELECT pg_advisory_unlock(%s)", (key,))

    def session_lock_holders(self, keys: Iterable[int]) -> dict[int, str]:
        """Which server process holds each of the advisory locks ``keys``, in words (``server
        process 4242, 'asides pid 77' from 10.0.0.5``), read from ``pg_locks``; a key no session
        holds is left out."""
        wanted = set(keys)
        found: dict[int, str] = {}
        for key, pid, application, address in self._conn.execute(_SESSION_LOCK_HOLDERS).fetchall():
            if key in wanted:
                where = f" from {address}" if address else ""
                found[int(key)] = f"server process {pid}" + (f", {application!r}" if application else "") + where
        return found

    def lock(self, applied: int) -> tuple[int, list[RowTuple]]:
        """Begin a transaction holding the write lock, which no other commit passes (a commit
        without it waits, then finds its ids taken); returns the newest id and the records after
        ``applied``, the newest this process has seen. End it with :meth:`commit_locked` or
        :meth:`rollback`."""
        conn = self._conn
        self.in_transaction = True
        try:
            with conn.pipeline():
                conn.execute("BEGIN")
                conn.execute("LOCK TABLE asides_log IN SHARE ROW EXCLUSIVE MODE")
                after = conn.execute(_SELECT_AFTER, (applied, PAGE_ROWS))
            rows = self._pages_from(after.fetchall())
            return (rows[-1][0] if rows else applied), rows
        except BaseException:
            self.rollback()
            raise

    def append_locked(self, rows: Sequence[RowTuple]) -> None:
        """Append ``rows``, announcing nothing, in the transaction :meth:`lock` began, which goes
        on (:meth:`commit_locked` ends it, announcing them); a failure rolls it back and raises."""
        try:
            self._conn.execute(_APPEND.replace("{rows}", _UNNEST), _columns(rows))
        except BaseException:
            self.rollback()
            raise

    def commit_locked(self, rows: Sequence[RowTuple], *, announcing: int | None = None) -> None:
        """Append ``rows`` (announced) and commit the transaction :meth:`lock` began; with
        ``announcing``, first announce the records up to it (appended by :meth:`append_locked`)."""
        conn = self._conn
        try:
            with conn.pipeline():
                if rows:
                    conn.execute(*_append_statement(rows))
                if announcing is not None:
                    conn.execute(_ANNOUNCE, (announcing,))
                conn.execute("COMMIT")
        except BaseException:
            self.rollback()
            raise
        finally:
            self.in_transaction = False

    def analyze(self) -> None:
        """Refresh the planner's statistics of the log and of the tables its triggers keep
        (``ANALYZE``, which reads a sample of bounded size however long the table is), waiting
        for their locks no longer than the connection's lock timeout. Outside a transaction;
        raises psycopg's errors."""
        conn = self._conn
        tables = [name for (name,) in conn.execute(_LOG_TABLES).fetchall()]
        if tables:
            conn.execute("ANALYZE " + ", ".join(tables))

    def commit_erasure(
        self, rows: Sequence[RowTuple], message_ids: list[int], edit_refs: list[str], states: list[int], body: str, number: int
    ) -> None:
        """Append erasure ``number``'s record, overwrite the records it erases (store/_erasure.py)
        and record the rewrite of the log it owes (store/_pg_vacuum.py), then commit the
        transaction :meth:`lock` began. The erased bytes stay in the table's files until the
        rewrite (:meth:`pay_owed_vacuum`)."""
        conn = self._conn
        try:
            with conn.pipeline():
                conn.execute(*_append_statement(rows))
                conn.execute("UPDATE asides_log SET body = %s WHERE kind = 'message' AND id = ANY(%s)", (body, message_ids))
                conn.execute("UPDATE asides_log SET body = %s WHERE kind = 'edit' AND ref = ANY(%s)", (body, edit_refs))
                conn.execute("UPDATE asides_log SET body = 'null' WHERE kind = 'state' AND id = ANY(%s)", (states,))
                conn.execute(*owed_mark(number))
                conn.execute("COMMIT")
        except BaseException:
            self.rollback()
            raise
        finally:
            self.in_transaction = False

    def pay_owed_vacuum(self, wait_seconds: float, *, wait_for_lock: bool) -> OwedVacuum | None:
        """Rewrite the log for the erasures that owe it, unless a transaction older than them is
        still there after ``wait_seconds``; what is still owed (store/_pg_vacuum.py)."""
        return pay_owed_vacuum(self._conn, session_lock_key(self.schema, VACUUM_LOCK_NAME), wait_seconds, wait_for_lock=wait_for_lock)

    def owed_vacuum(self) -> OwedVacuum | None:
        """The rewrite erasures owe now, with who holds it back (``None``: none)."""
        return owed_vacuum(self._conn)

    def rollback(self) -> None:
        self.in_transaction = False
        if self.broken:
            return
        try:
            self._conn.execute("ROLLBACK")
        except Exception:  # the connection is going; closing it rolls back on the server
            self.close()

    def close(self) -> None:
        try:
            self._conn.close()
        except Exception:  # pragma: no cover - closing a broken connection
            pass


def session_lock_key(schema: str, name: str) -> int:
    """The ``pg_advisory_lock`` key of the session lock ``name`` of the store in ``schema``: the
    first 63 bits of a BLAKE2b hash of both (non-negative, so ``pg_locks`` shows it as
    ``classid = key >> 32``, ``objid = key & 0xFFFFFFFF``, ``objsubid = 1``). Two names whose keys
    collide (about one chance in 10^18 for a pair) share one lock: one waits while the other
    is held, and nothing else goes wrong."""
    digest = hashlib.blake2b(f"asides\0{schema}\0{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


#: The server processes holding advisory locks (the single-``bigint`` form) in this database,
#: with what ``pg_stat_activity`` shows of them (null where the role may not see them).
_SESSION_LOCK_HOLDERS = (
    "SELECT (l.classid::bigint << 32) | l.objid::bigint, l.pid, a.application_name, host(a.client_addr) "
    "FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
    "WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted "
    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)


def connect(url: str, where: str, *, create: bool, synchronous: str | None = None, connect_timeout: float = 5.0) -> Connection:
    """A new connection to the store at ``url`` (checking, or creating, its schema). Runs in a
    worker thread; raises psycopg's errors, or ``StoreFailedError`` for a schema it refuses.

    ``synchronous`` is the store's durability (:func:`set_durability`)."""
    conn = _open(url, connect_timeout)
    try:
        conn.execute(f"SET idle_in_transaction_session_timeout = {IDLE_IN_TRANSACTION_MS}")
        conn.execute(f"SET lock_timeout = {LOCK_TIMEOUT_MS}")
        # Every query a store makes reads a few index ranges; one whose estimate crosses the
        # server's jit_above_cost (a bound a parameter leaves unknown, estimated a third of the
        # table) would spend tens of milliseconds compiling what runs in a fraction of one.
        conn.execute("SET jit = off")
        _set_server_keepalives(conn)
        set_durability(conn, url, synchronous)
        schema = prepare_schema(conn, where, create=create)
        connection = Connection(conn, schema)
        conn.execute(f"LISTEN {CHANNEL}")  # before any catch-up, so that no commit falls between
        return connection
    except BaseException:
        conn.close()
        raise


def set_durability(conn: Any, url: str, synchronous: str | None) -> None:
    """Set the session's ``synchronous_commit`` for the store's durability ``synchronous``:

    * ``None`` (not given): the server's own setting, as its administrator configured it for
      the database and role: by default ``on``, a commit is acknowledged once its log is on the
      server's disk, and survives a crash of the server (and, configured so, waits for its
      synchronous standbys);
    * ``"FULL"``: the same, except that a configured ``off`` becomes ``on`` (every commit waits
      for the disk, whatever the configuration);
    * ``"NORMAL"``: ``off``: acknowledged once the server has it; survives a crash of any client
      process, and a crash of the server may lose the last fraction of a second of commits
      (whole, in commit order), as a power loss may with SQLite's ``NORMAL``.

    A URL whose ``options`` set ``synchronous_commit`` is followed as it is, whatever
    ``synchronous`` says."""
    if _sets_synchronous_commit(url):
        return
    if synchronous == "NORMAL":
        conn.execute("SET synchronous_commit = off")
    elif synchronous == "FULL":
        (setting,) = conn.execute("SELECT current_setting('synchronous_commit')").fetchone()
        if setting == "off":
            conn.execute("SET synchronous_commit = on")
