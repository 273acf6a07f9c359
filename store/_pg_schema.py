"""The PostgreSQL schema of an asides store: created, recognised and versioned here.

Three tables, all in the connection's current schema (choose another with the URL's
``options=-csearch_path=...``):

* ``asides_meta(key, value)``: ``store = asides`` and ``format = <n>``. A database whose tables
  carry no such marker, or another format, is refused; nothing there is changed.
* ``asides_head``: one row holding the id of the newest record. Every commit locks it, which
  makes commits one total order across every process writing to the store.
* ``asides_log(id, branch, seq, kind, ref, body)``: the append-only record log, the same rows as
  the SQLite store's ``log`` table. ``(branch, seq)`` is unique.

A trigger on ``asides_head`` sends ``NOTIFY asides_log, '<schema>:<newest id>'`` with every
commit; the notification is delivered when the commit is.

Functions here are synchronous and take a psycopg connection in autocommit mode: the driver
runs them in its worker thread.
"""

from __future__ import annotations

from typing import Any

from ._errors import StoreFailedError

__all__ = ["FORMAT_VERSION", "CHANNEL", "prepare_schema"]

FORMAT_VERSION = 1
CHANNEL = "asides_log"
#: Serialises schema creation across processes racing to open a new store.
_CREATION_LOCK = 0x61736964  # "asid"

_TABLES = ("asides_meta", "asides_head", "asides_log")

_CREATE = [
    "CREATE TABLE asides_meta (key text PRIMARY KEY, value text NOT NULL)",
    f"INSERT INTO asides_meta (key, value) VALUES ('store', 'asides'), ('format', '{FORMAT_VERSION}')",
    "CREATE TABLE asides_head (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), last_id bigint NOT NULL)",
    "INSERT INTO asides_head (singleton, last_id) VALUES (true, 0)",
    """CREATE TABLE asides_log (
        id bigint PRIMARY KEY,
        branch text NOT NULL,
        seq bigint NOT NULL,
        kind text NOT NULL,
        ref text,
        body text NOT NULL,
        UNIQUE (branch, seq)
    )""",
    f"""CREATE FUNCTION asides_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify('{CHANNEL}', TG_TABLE_SCHEMA || ':' || NEW.last_id);
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER asides_head_notify AFTER UPDATE ON asides_head FOR EACH ROW EXECUTE FUNCTION asides_notify()",
]


def _existing_tables(conn: Any) -> set[str]:
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c WHERE c.relname = ANY(%s) AND c.relnamespace = current_schema()::regnamespace",
        (list(_TABLES),),
    ).fetchall()
    return {row[0] for row in rows}


def _check_marker(conn: Any, where: str) -> None:
    rows = dict(conn.execute("SELECT key, value FROM asides_meta WHERE key IN ('store', 'format')").fetchall())
    if rows.get("store") != "asides":
        raise StoreFailedError(f"{where} holds an asides_meta table that is not an asides store's; asides changes nothing there")
    if rows.get("format") != str(FORMAT_VERSION):
        raise StoreFailedError(
            f"{where} is an asides store of format {rows.get('format')!r}; this build reads format {FORMAT_VERSION}, "
            "so open it with the asides version that wrote it"
        )


def prepare_schema(conn: Any, where: str, *, create: bool) -> str:
    """Check (creating it if ``create`` and the schema holds none of asides's tables) the store
    in ``conn``'s current schema; returns the schema's name.

    Refuses with :class:`StoreFailedError`, changing nothing: a schema holding only some of the
    tables, a marker that is not asides's or names another format, and (without ``create``) a
    schema with no store. ``where`` names the store in messages (a URL without its password).
    """
    schema = conn.execute("SELECT current_schema()").fetchone()[0]
    if schema is None:
        raise StoreFailedError(f"{where}: the connection has no current schema to hold a store (check search_path)")
    found = _existing_tables(conn)
    if found == set(_TABLES):
        _check_marker(conn, where)
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
    return prepare_schema(conn, where, create=False)
