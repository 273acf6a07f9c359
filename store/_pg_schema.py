"""The PostgreSQL schema of an asides store: created, recognised and versioned here.

Two tables, both in the connection's current schema (choose another with the URL's
``options=-csearch_path=...``; a writing open creates that schema when it does not exist and the
role may):

* ``asides_meta(key, value)``: ``store = asides`` and ``format = <n>``. A database whose tables
  carry no such marker, or another format, is refused; nothing there is changed.
* ``asides_log(id, branch, seq, kind, ref, body)``: the append-only record log, the same rows as
  the SQLite store's ``log`` table. ``id`` is the primary key: a commit numbers its records
  after the newest one its process has seen, so of two processes numbering from the same record
  one finds its first id taken and writes nothing. ``(branch, seq)`` is unique too.

Every commit sends ``NOTIFY asides_log, '<schema>:<newest id>'`` in its own statement (see
``_pg_driver``); the notification is delivered when the commit is.

Format 1 (asides before this format) also had ``asides_head``, one row every commit updated, and
a trigger on it that notified. A format-1 store is refused like any other format; ``asides
dump`` it with the build that wrote it and ``asides restore`` the dump into a new store.

Functions here are synchronous and take a psycopg connection in autocommit mode: the driver
runs them in its worker thread.
"""

from __future__ import annotations

import secrets
from typing import Any, Final

from ._compile_records import compile_index
from ._errors import StoreFailedError
from ._model import GAP_ROW
from ._model_parts import LARGEST_AUDIENCE_BITS
from ._search import PG_BUILD_STATEMENT, PG_SEARCH_SCHEMA, PG_STATES_STATEMENT

__all__ = [
    "FORMAT_VERSION",
    "CHANNEL",
    "ID_KEY",
    "audit_anchor",
    "build_search",
    "prepare_schema",
    "prepare_search",
    "search_path_schemas",
    "search_state",
]

FORMAT_VERSION = 2
CHANNEL = "asides_log"
#: The constraint a commit runs into when another process took its first record id.
ID_KEY = "asides_log_pkey"
#: Serialises schema creation across processes racing to open a new store.
_CREATION_LOCK = 0x61736964  # "asid"

_TABLES = ("asides_meta", "asides_log")
#: Tables of asides's stores of any format (``asides_head``: format 1's).
_KNOWN_TABLES = (*_TABLES, "asides_head")

_CREATE = [
    "CREATE TABLE asides_meta (key text PRIMARY KEY, value text NOT NULL)",
    f"INSERT INTO asides_meta (key, value) VALUES ('store', 'asides'), ('format', '{FORMAT_VERSION}')",
    """CREATE TABLE asides_log (
        id bigint CONSTRAINT asides_log_pkey PRIMARY KEY,
        branch text NOT NULL,
        seq bigint NOT NULL,
        kind text NOT NULL,
        ref text,
        body text NOT NULL,
        UNIQUE (branch, seq)
    )""",
]


def _existing_tables(conn: Any) -> set[str]:
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relname = ANY(%s) AND n.nspname = current_schema()",  # (a cast to regnamespace folds case)
        (list(_KNOWN_TABLES),),
    ).fetchall()
    return {row[0] for row in rows}


def _check_marker(conn: Any, where: str) -> None:
    rows = dict(conn.execute("SELECT key, value FROM asides_meta WHERE key IN ('store', 'format')").fetchall())
    if rows.get("store") != "asides":
        raise StoreFailedError(f"{where} holds an asides_meta table that is not an asides store's; asides changes nothing there")
    if rows.get("format") != str(FORMAT_VERSION):
        raise StoreFailedError(
            f"{where} is an asides store of format {rows.get('format')!r}; this build reads format {FORMAT_VERSION}, "
            "so open it with the asides version that wrote it (to move it here: `asides dump` it with that version, "
            "then `asides restore` the dump into a new store with this one)"
        )


def search_path_schemas(setting: str) -> list[str]:
    """The schema names a ``search_path`` setting lists, in order, as PostgreSQL reads them:
    unquoted names in lower case, quoted ones as written (two double quotes in one stand for a
    double quote), ``$user`` left as it is. ``My_Store, public`` lists ``my_store`` and
    ``public``."""
    names: list[str] = []
    index, length = 0, len(setting)
    while index < length:
        while index < length and setting[index] in " \t\n,":
            index += 1
        if index >= length:
            break
        if setting[index] == '"':
            index += 1
            name = []
            while index < length:
                if setting[index] == '"':
                    if setting[index + 1 : index + 2] == '"':
                        name.append('"')
                        index += 2
                        continue
                    index += 1
                    break
                name.append(setting[index])
                index += 1
            names.append("".join(name))
        else:
            start = index
            while index < length and setting[index] != ",":
                index += 1
            names.append(setting[start:index].strip().lower())
    return [name for name in names if name]


def _make_missing_schema(conn: Any, where: str, *, create: bool) -> str:
    """The connection's ``search_path`` names no schema that exists: create the first one it
    names (``$user`` aside) when ``create`` and the role may, and return its name; else refuse
    with :class:`StoreFailedError` naming the schema and the statement that creates it."""
    from psycopg import errors, sql

    setting = conn.execute("SELECT current_setting('search_path')").fetchone()[0] or ""
    wanted = [name for name in search_path_schemas(setting) if name != "$user"]
    if not wanted:
        raise StoreFailedError(
            f"{where}: the connection's search_path ({setting!r}) names no schema to hold a store; name one in the "
            "URL: ?options=-csearch_path%3Dmy_store"
        )
    name = wanted[0]
    if conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (name,)).fetchone() is not None:
        raise StoreFailedError(
            f"{where}: schema {name!r}, which the connection's search_path names, exists but this role may not use "
            "it; have its owner grant this role USAGE and CREATE on it"
        )
    statement = sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(name))
    shown = statement.as_string(conn)
    if not create:
        raise StoreFailedError(
            f"{where}: schema {name!r}, which the connection's search_path names, does not exist, so it holds no "
            f"asides store; a read-only open creates nothing (a writing open creates it, or run {shown})"
        )
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATION_LOCK,))
            conn.execute(statement)
    except errors.InsufficientPrivilege:
        raise StoreFailedError(
            f"{where}: schema {name!r}, which the connection's search_path names, does not exist, and this role may "
            f"not create it; have its owner run {shown} and grant this role CREATE and USAGE on it"
        ) from None
    schema = conn.execute("SELECT current_schema()").fetchone()[0]
    if schema is None:  # pragma: no cover - a schema this role just created is its own to use
        raise StoreFailedError(f"{where}: schema {name!r} was created, yet the connection has no current schema")
    return str(schema)


def prepare_schema(conn: Any, where: str, *, create: bool) -> str:
    """Check (creating it if ``create`` and the schema holds none of asides's tables) the store
    in ``conn``'s current schema; returns the schema's name.

    Refuses with :class:`StoreFailedError`, changing nothing: a schema holding only some of the
    tables, a marker that is not asides's or names another format, and (without ``create``) a
    schema with no store. ``where`` names the store in messages (a URL without its password).

    When the schema the connection's ``search_path`` names does not exist, ``create`` creates it
    (``CREATE SCHEMA IF NOT EXISTS``, where the role may); without ``create``, or without the
    privilege, the refusal names the schema and the statement that creates it.
    """
    schema = conn.execute("SELECT current_schema()").fetchone()[0]
    if schema is None:
        schema = _make_missing_schema(conn, where, create=create)
    found = _existing_tables(conn)
    if "asides_meta" in found:
        _check_marker(conn, where)  # another format (format 1's tables included) is refused here
    if found == set(_TABLES):
        if create:
            prepare_search(conn)
        return str(schema)
    if found:
        raise StoreFailedError(
            f"{where}: schema {schema!r} holds {', '.join(sorted(found))} but not {', '.join(sorted(set(_TABLES) - found))}, "
            "so it is not an asides store (or a damaged one); asides changes nothing there"
        )
    if not create:
        raise StoreFailedError(f"{where}: schema {schema!r} holds no asides store; a read-only open creates nothing")
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATION_LOCK,))
        found = _existing_tables(conn)  # another process may have created it meanwhile
        if not found:
            for statement in _CREATE:
                conn.execute(statement)
            _make_search(conn)
    return prepare_schema(conn, where, create=False)


#: Finds a namespace's compile records, newest first, without reading the log.
PG_COMPILE_INDEX = compile_index("asides_log")
#: Sequences a row of ``asides_log_seers_blocks`` counts (``seq >> COUNTED_BITS``), as in a store file.
COUNTED_BITS: Final = LARGEST_AUDIENCE_BITS


def parent_of(row: str) -> str:
    """SQL: what the state key of the log record ``row`` (``NEW.``, ``OLD.``, or nothing for the
    row itself) spells up to its last ``/``, its *parent*, in code point order, as the index
    ``asides_log_state_after`` and the queries through it spell it."""
    return f"regexp_replace({row}ref, '[^/]*$', '') COLLATE \"C\""


PG_PARENT: Final = parent_of("")


def other_state_record(row: str, bound: str) -> str:
    """SQL: a state record of the same key and branch as the log record ``row`` whose id is
    ``bound`` (a comparison: ``'< NEW.id'``, ``'<> OLD.id'``), through ``asides_log_state_refs``
    (the key's records). The branch is compared as ``branch || ''``, which no index holds: a
    trigger's plan is made once for any key and branch, and with the branch an index column
    the planner took ``asides_log_state_after`` (every state record of the branch, read for each
    row written: a batch's cost grew with the branch's state records)."""
    return f"SELECT 1 FROM asides_log AS e WHERE e.kind = 'state' AND e.ref = {row}ref AND (e.branch || '') = {row}branch AND e.id {bound}"


def may_name_a_reader(row: str) -> str:
    """SQL: whether the log record ``row`` (``NEW.``, ``OLD.``, or nothing for the row itself) is
    a message whose body may name a reader (the first test of ``body_may_hold_audience``)."""
    return f"({row}kind = 'message' AND (position('\"audience\"' in {row}body) > 0 OR position('\\u' in {row}body) > 0))"


#: What an open reads instead of the messages (``Connection.stored_open``): the records other
#: than messages and compile records, and the messages whose body may name a reader. (Where a
#: message stands, by branch and sequence, is the log's own unique index.)
PG_STORED_INDEXES = (
    # Who sees something of a message, as its body records it (store/_seers.py), or NULL.
    """CREATE OR REPLACE FUNCTION asides_seers(body text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
    BEGIN
        IF jsonb_typeof(body::jsonb -> 'seers') = 'array' THEN
            RETURN (body::jsonb -> 'seers')::text;
        END IF;
        RETURN NULL;
    EXCEPTION WHEN others THEN
        RETURN NULL;
    END $$""",
    # The records an open reads, and, apart, the disclosure records an audit reads (an index of
    # both, ``asides_log_records``, made an open scan every disclosure record: it goes; one
    # holding the state records, ``asides_log_other_records``, made it read every one: it goes);
    # and the other records that take a branch's sequence (edits, states: gaps), which an open
    # counts a block and a read reaching a block reads (with their ids, from the index alone).
    "CREATE INDEX IF NOT EXISTS asides_log_open_records ON asides_log (id) WHERE kind NOT IN ('message', 'compile', 'disclosure', 'state')",
    "DROP INDEX IF EXISTS asides_log_other_records",
    f"CREATE INDEX IF NOT EXISTS asides_log_gaps ON asides_log (branch, seq, id) WHERE {GAP_ROW}",
    "CREATE INDEX IF NOT EXISTS asides_log_disclosures ON asides_log (id) WHERE kind = 'disclosure'",
    "CREATE INDEX IF NOT EXISTS asides_log_state_refs ON asides_log (ref text_pattern_ops, branch, seq, id) WHERE kind = 'state'",
    "DROP INDEX IF EXISTS asides_log_records",
    "CREATE INDEX IF NOT EXISTS asides_log_audience ON asides_log (branch, seq) WHERE kind = 'message' "
    "AND (position('\"audience\"' in body) > 0 OR position('\\u' in body) > 0)",
    # How many messages whose body may name a reader each block of ``1 << COUNTED_BITS`` sequences
    # of a branch holds, by the summary of who sees them (``'?'``: none), kept by triggers on the
    # log (an insert, an erasure's rewrite, a delete), so that an open reads a row a block.
    "CREATE TABLE IF NOT EXISTS asides_log_seers_blocks (branch text NOT NULL, block bigint NOT NULL, seers text NOT NULL, "
    "count bigint NOT NULL, PRIMARY KEY (branch, block, seers))",
    f"""CREATE OR REPLACE FUNCTION asides_count_seers() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP <> 'INSERT' AND {may_name_a_reader("OLD.")} THEN
            UPDATE asides_log_seers_blocks SET count = count - 1
                WHERE branch = OLD.branch AND block = OLD.seq >> {COUNTED_BITS} AND seers = coalesce(asides_seers(OLD.body), '?');
            DELETE FROM asides_log_seers_blocks
                WHERE branch = OLD.branch AND block = OLD.seq >> {COUNTED_BITS} AND seers = coalesce(asides_seers(OLD.body), '?')
                AND count <= 0;
        END IF;
        IF TG_OP <> 'DELETE' AND {may_name_a_reader("NEW.")} THEN
            INSERT INTO asides_log_seers_blocks (branch, block, seers, count)
                VALUES (NEW.branch, NEW.seq >> {COUNTED_BITS}, coalesce(asides_seers(NEW.body), '?'), 1)
                ON CONFLICT (branch, block, seers) DO UPDATE SET count = asides_log_seers_blocks.count + 1;
        END IF;
        RETURN NULL;
    END $$""",
    f"CREATE OR REPLACE TRIGGER asides_seers_written AFTER INSERT ON asides_log FOR EACH ROW WHEN ({may_name_a_reader('NEW.')}) "
    "EXECUTE FUNCTION asides_count_seers()",
    "CREATE OR REPLACE TRIGGER asides_seers_rewritten AFTER UPDATE OF body OR DELETE ON asides_log FOR EACH ROW "
    "EXECUTE FUNCTION asides_count_seers()",
    # How many gaps (edits, states: the records other than messages that take a branch's
    # sequence) each block of ``1 << COUNTED_BITS`` sequences of a branch holds, kept by
    # triggers on the log (the store never deletes a record nor moves one; the delete keeps a
    # store edited by hand counted), so that an open reads a row a block, not a row a gap.
    "CREATE TABLE IF NOT EXISTS asides_log_gap_blocks (branch text NOT NULL, block bigint NOT NULL, count bigint NOT NULL, "
    "PRIMARY KEY (branch, block))",
    f"""CREATE OR REPLACE FUNCTION asides_count_gaps() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN
            UPDATE asides_log_gap_blocks SET count = count - 1 WHERE branch = OLD.branch AND block = OLD.seq >> {COUNTED_BITS};
            DELETE FROM asides_log_gap_blocks WHERE branch = OLD.branch AND block = OLD.seq >> {COUNTED_BITS} AND count <= 0;
        ELSE
            INSERT INTO asides_log_gap_blocks (branch, block, count) VALUES (NEW.branch, NEW.seq >> {COUNTED_BITS}, 1)
                ON CONFLICT (branch, block) DO UPDATE SET count = asides_log_gap_blocks.count + 1;
        END IF;
        RETURN NULL;
    END $$""",
    f"CREATE OR REPLACE TRIGGER asides_gaps_written AFTER INSERT ON asides_log FOR EACH ROW WHEN (NEW.{GAP_ROW}) "
    "EXECUTE FUNCTION asides_count_gaps()",
    f"CREATE OR REPLACE TRIGGER asides_gaps_removed AFTER DELETE ON asides_log FOR EACH ROW WHEN (OLD.{GAP_ROW}) "
    "EXECUTE FUNCTION asides_count_gaps()",
    # How many keys each parent (what a key spells up to its last ``/``) holds on each branch,
    # a row a parent, kept by triggers on the log (a key counted at its first record: the one
    # with no record of the same key and branch before it, which in one statement's rows is
    # the first), and the state records by branch, parent and sequence, so that a count of a
    # namespace's keys and a listing of those written after a sequence read a row a parent and
    # a row a record written after it (``Connection.state_sequences_after``).
    f"CREATE INDEX IF NOT EXISTS asides_log_state_after ON asides_log (branch, ({PG_PARENT}), seq) WHERE kind = 'state'",
    "CREATE TABLE IF NOT EXISTS asides_log_state_keys (branch text NOT NULL, parent text COLLATE \"C\" NOT NULL, "
    "keys bigint NOT NULL, PRIMARY KEY (branch, parent))",
    f"""CREATE OR REPLACE FUNCTION asides_state_key_counts() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN
            IF NOT EXISTS ({other_state_record("OLD.", "<> OLD.id")}) THEN
                UPDATE asides_log_state_keys SET keys = keys - 1
                    WHERE branch = OLD.branch AND parent = {parent_of("OLD.")};
                DELETE FROM asides_log_state_keys
                    WHERE branch = OLD.branch AND parent = {parent_of("OLD.")} AND keys <= 0;
            END IF;
        ELSIF NOT EXISTS ({other_state_record("NEW.", "< NEW.id")}) THEN
            INSERT INTO asides_log_state_keys (branch, parent, keys) VALUES (NEW.branch, {parent_of("NEW.")}, 1)
                ON CONFLICT (branch, parent) DO UPDATE SET keys = asides_log_state_keys.keys + 1;
        END IF;
        RETURN NULL;
    END $$""",
    "CREATE OR REPLACE TRIGGER asides_state_keys_written AFTER INSERT ON asides_log FOR EACH ROW WHEN (NEW.kind = 'state') "
    "EXECUTE FUNCTION asides_state_key_counts()",
    "CREATE OR REPLACE TRIGGER asides_state_keys_removed AFTER DELETE ON asides_log FOR EACH ROW WHEN (OLD.kind = 'state') "
    "EXECUTE FUNCTION asides_state_key_counts()",
    "DROP FUNCTION IF EXISTS asides_count_state_keys()",  # the function of a store made before, replaced above
    # A store made before the tables: their counts, once (the triggers, made above in this
    # same transaction, hold off other writers until it commits).
    f"INSERT INTO asides_log_state_keys (branch, parent, keys) SELECT branch, {PG_PARENT}, count(DISTINCT ref) "
    "FROM asides_log WHERE kind = 'state' GROUP BY 1, 2 ON CONFLICT (branch, parent) DO NOTHING",
    f"INSERT INTO asides_log_gap_blocks (branch, block, count) SELECT branch, seq >> {COUNTED_BITS}, count(*) "
    f"FROM asides_log WHERE {GAP_ROW} GROUP BY 1, 2 ON CONFLICT (branch, block) DO NOTHING",
    f"INSERT INTO asides_log_seers_blocks (branch, block, seers, count) SELECT branch, seq >> {COUNTED_BITS}, "
    f"coalesce(asides_seers(body), '?'), count(*) FROM asides_log WHERE {may_name_a_reader('')} GROUP BY 1, 2, 3 "
    "ON CONFLICT (branch, block, seers) DO NOTHING",
)

#: The runs of ids each ``(namespace, reader, via)`` was shown (store/_disclosure.py): a row a
#: run of each disclosure record, made by a trigger on the log, merged now and then
#: (``Connection.compact_disclosed``), so that an open reads them instead of the records; and,
#: never merged, each record's runs as ranges under a GiST index (``asides_log_disclosure_spans``),
#: so that an audit of one message reads the records that name it, not all of them.
PG_DISCLOSED_TABLE = (
    # Made again whole (a store may hold the first table alone).
    "DROP TRIGGER IF EXISTS asides_disclosed_written ON asides_log",
    "DROP TABLE IF EXISTS asides_log_disclosed",
    "DROP TABLE IF EXISTS asides_log_disclosure_spans",
    "CREATE TABLE asides_log_disclosed (id bigserial PRIMARY KEY, namespace text, reader text, via text, "
    "first bigint, stop bigint)",
    "CREATE TABLE asides_log_disclosure_spans (record bigint NOT NULL, span int8range NOT NULL)",
    "CREATE INDEX asides_log_disclosure_spans_span ON asides_log_disclosure_spans USING gist (span)",
    # A disclosure record's runs, or none when its body is not one a store writes.
    """CREATE OR REPLACE FUNCTION asides_disclosed_runs(body text)
    RETURNS TABLE (namespace text, reader text, via text, first bigint, stop bigint) LANGUAGE plpgsql IMMUTABLE AS $$
    DECLARE
        doc jsonb;
    BEGIN
        doc := body::jsonb;
        IF jsonb_typeof(doc -> 'ids') <> 'array' THEN
            RETURN;
        END IF;
        RETURN QUERY SELECT doc ->> 'ns', doc ->> 'r', doc ->> 'v', (a.v)::bigint, (a.v)::bigint + (b.v)::bigint
            FROM jsonb_array_elements(doc -> 'ids') WITH ORDINALITY AS a(v, n)
            JOIN jsonb_array_elements(doc -> 'ids') WITH ORDINALITY AS b(v, n) ON b.n = a.n + 1
            WHERE a.n % 2 = 1 AND (a.v)::text ~ '^[0-9]+$' AND (b.v)::text ~ '^[0-9]+$' AND (b.v)::bigint > 0;
    EXCEPTION WHEN others THEN
        RETURN;
    END $$""",
    """CREATE OR REPLACE FUNCTION asides_note_disclosed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        WITH runs AS (SELECT * FROM asides_disclosed_runs(NEW.body)),
            noted AS (INSERT INTO asides_log_disclosed (namespace, reader, via, first, stop) SELECT * FROM runs)
        INSERT INTO asides_log_disclosure_spans (record, span) SELECT NEW.id, int8range(runs.first, runs.stop) FROM runs;
        RETURN NULL;
    END $$""",
    "CREATE OR REPLACE TRIGGER asides_disclosed_written AFTER INSERT ON asides_log FOR EACH ROW WHEN (NEW.kind = 'disclosure') "
    "EXECUTE FUNCTION asides_note_disclosed()",
    # A store made before the table: its records' runs, once (the trigger, made above in this
    # same transaction, holds off other writers until it commits).
    "INSERT INTO asides_log_disclosed (namespace, reader, via, first, stop) SELECT d.* FROM asides_log AS l, "
    "asides_disclosed_runs(l.body) AS d WHERE l.kind = 'disclosure' ORDER BY l.id",
    "INSERT INTO asides_log_disclosure_spans (record, span) SELECT l.id, int8range(d.first, d.stop) FROM asides_log AS l, "
    "asides_disclosed_runs(l.body) AS d WHERE l.kind = 'disclosure'",
)

#: Whether the store has everything ``PG_STORED_INDEXES`` and ``PG_DISCLOSED_TABLE`` make: then
#: an open reads through it, and a writing open makes none of it again.
PG_STORED_MADE: Final = (
    "SELECT to_regclass('asides_log_open_records') IS NOT NULL AND to_regclass('asides_log_gaps') IS NOT NULL "
    "AND to_regclass('asides_log_disclosures') IS NOT NULL "
    "AND to_regclass('asides_log_audience') IS NOT NULL AND to_regclass('asides_log_state_refs') IS NOT NULL "
    "AND to_regprocedure('asides_seers(text)') IS NOT NULL AND to_regclass('asides_log_seers_blocks') IS NOT NULL "
    "AND to_regclass('asides_log_gap_blocks') IS NOT NULL AND to_regclass('asides_log_state_keys') IS NOT NULL "
    "AND to_regclass('asides_log_state_after') IS NOT NULL AND to_regprocedure('asides_state_key_counts()') IS NOT NULL "
    "AND to_regclass('asides_log_disclosed') IS NOT NULL AND to_regclass('asides_log_disclosure_spans_span') IS NOT NULL"
)


def _make_disclosed(conn: Any) -> None:
    """Make ``PG_DISCLOSED_TABLE``, filled from the log, when the store has not all of it (in the
    connection's transaction, which holds the creation lock)."""
    if not conn.execute("SELECT to_regclass('asides_log_disclosure_spans_span') IS NOT NULL").fetchone()[0]:
        for statement in PG_DISCLOSED_TABLE:
            conn.execute(statement)


def _make_search(conn: Any) -> None:
    """Make the search index (store/_search.py) in the connection's transaction, with nothing
    indexed yet (the indexer starts at the first record)."""
    for statement in PG_SEARCH_SCHEMA:
        conn.execute(statement)
    conn.execute(PG_COMPILE_INDEX)
    for statement in PG_STORED_INDEXES:
        conn.execute(statement)
    _make_disclosed(conn)
    conn.execute("INSERT INTO asides_meta (key, value) VALUES ('search_next', '1') ON CONFLICT (key) DO NOTHING")
    conn.execute("INSERT INTO asides_meta (key, value) VALUES ('search_states_from', '1') ON CONFLICT (key) DO UPDATE SET value = '1'")
    conn.execute(
        "INSERT INTO asides_meta (key, value) VALUES ('audit_anchor', %s) ON CONFLICT (key) DO NOTHING", (secrets.token_hex(32),)
    )


#: The first record from which an index made before it held state records holds them: where it
#: stands when it is brought up to hold them (store/_search.py; a new index holds them from 1).
_STATES_FROM_NEXT = (
    "INSERT INTO asides_meta (key, value) SELECT 'search_states_from', value FROM asides_meta WHERE key = 'search_next' "
    "ON CONFLICT (key) DO NOTHING"
)


def prepare_search(conn: Any) -> None:
    """A writing open: make the search index and the index of compile records when the store
    has none (once, whichever process comes first), and the random value that anchors the
    store's audit exports."""
    conn.execute(
        "INSERT INTO asides_meta (key, value) VALUES ('audit_anchor', %s) ON CONFLICT (key) DO NOTHING", (secrets.token_hex(32),)
    )
    if not conn.execute("SELECT to_regclass('asides_log_compiles') IS NOT NULL").fetchone()[0]:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATION_LOCK,))
            conn.execute(PG_COMPILE_INDEX)
    if not conn.execute(PG_STORED_MADE).fetchone()[0]:
        with conn.transaction():  # a store made before them: made once, by its first writing open
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATION_LOCK,))
            _make_disclosed(conn)
            for statement in PG_STORED_INDEXES:
                conn.execute(statement)
    if search_state(conn) is not None:
        if conn.execute("SELECT 1 FROM asides_meta WHERE key = 'search_states_from'").fetchone() is None:
            with conn.transaction():  # an index made before it held state records: brought up once
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATION_LOCK,))
                for statement in PG_SEARCH_SCHEMA:
                    conn.execute(statement)
                conn.execute(_STATES_FROM_NEXT)
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATION_LOCK,))
        if search_state(conn) is None:
            _make_search(conn)


def search_state(conn: Any) -> int | None:
    """The first record id the index has not reached, or ``None`` when the store has no index."""
    row = conn.execute("SELECT value FROM asides_meta WHERE key = 'search_next'").fetchone()
    return None if row is None else int(row[0])


def build_search(conn: Any, first: int, last: int) -> int:
    """Index the records with ids in ``[first, last]`` not indexed yet, and note the progress
    (idempotent: processes indexing at once index nothing twice); returns the first record id
    the index has not reached."""
    with conn.transaction():
        conn.execute(PG_BUILD_STATEMENT, (first, last))
        row = conn.execute(
            "UPDATE asides_meta SET value = greatest(value::bigint, %s)::text WHERE key = 'search_next' RETURNING value",
            (last + 1,),
        ).fetchone()
    return int(row[0])


def states_from(conn: Any) -> int | None:
    """The first record from which the index holds state records (1: every one), or ``None``
    when the store has no index."""
    row = conn.execute("SELECT value FROM asides_meta WHERE key = 'search_states_from'").fetchone()
    return None if row is None else int(row[0])


def build_states(conn: Any, first: int, last: int) -> int:
    """Add the state records with ids in ``[first, last]`` that an index made before it held
    them lacks, and note how far down it got (idempotent: processes adding them at once add
    nothing twice); returns the first record from which the index now holds them."""
    with conn.transaction():
        conn.execute(PG_STATES_STATEMENT, (first, last))
        row = conn.execute(
            "UPDATE asides_meta SET value = least(value::bigint, %s)::text WHERE key = 'search_states_from' RETURNING value",
            (first,),
        ).fetchone()
    return int(row[0])


def audit_anchor(conn: Any) -> str | None:
    """The value anchoring the store's audit exports, or ``None`` when it has none yet."""
    row = conn.execute("SELECT value FROM asides_meta WHERE key = 'audit_anchor'").fetchone()
    return None if row is None else str(row[0])
