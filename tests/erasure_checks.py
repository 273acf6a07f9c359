"""Helpers for the erasure tests: where erased bytes could still be, looked for everywhere.

``store_files(path)`` lists the files a store keeps: the SQLite file with its ``-wal`` and
``-shm`` files, or, for PostgreSQL, the data files of every relation of the store's schema (its
tables, their TOAST tables and every index) after a server ``CHECKPOINT``.
"""

from __future__ import annotations

import os
import urllib.parse
from typing import Any

__all__ = ["data_dir", "files_holding", "hold_a_snapshot", "store_files", "text_everywhere"]


def _pg_schema(url: str) -> str:
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    options = query.get("options", [""])[0]
    return options.split("search_path=", 1)[1]


def data_dir(store_path: str, request: Any) -> str | None:
    """The data directory of the throwaway cluster holding the store at ``store_path`` (``None``
    for a store file); skips the test on a server of your own, whose directory is not known."""
    import pytest

    if not store_path.startswith("postgresql://"):
        return None
    cluster = request.getfixturevalue("pg_cluster")
    if cluster.folder is None:
        pytest.skip("a server of your own: its data directory is not known here")
    return str(cluster.folder) + "/data"


def hold_a_snapshot(url: str) -> Any:
    """A connection of the database at ``url`` inside a transaction holding a snapshot, as an
    autovacuum's ``ANALYZE`` or a long report does (whichever schema it reads)."""
    import psycopg

    holder = psycopg.connect(url)
    holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    holder.execute("SELECT 1").fetchall()
    return holder


def store_files(path: str, data_dir: str | None = None) -> list[str]:
    """Every file holding a page of the store at ``path`` (see the module docstring)."""
    if not path.startswith("postgresql://"):
        return [p for p in (path, path + "-wal", path + "-shm", path + "-journal") if os.path.exists(p)]
    import psycopg

    assert data_dir is not None, "PostgreSQL: the cluster's data directory is needed"
    schema = _pg_schema(path)
    with psycopg.connect(path, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        rows = conn.execute(
            """
            WITH own AS (SELECT c.oid, c.reltoastrelid FROM pg_class c WHERE c.relnamespace = %s::regnamespace),
                 toast AS (SELECT reltoastrelid AS oid FROM own WHERE reltoastrelid <> 0),
                 toast_index AS (SELECT i.indexrelid AS oid FROM pg_index i JOIN toast t ON i.indrelid = t.oid)
            SELECT pg_relation_filepath(oid) FROM (SELECT oid FROM own UNION SELECT oid FROM toast UNION SELECT oid FROM toast_index) r
            """,
            (schema,),
        ).fetchall()
    files = []
    for (relative,) in rows:
        if relative is None:
            continue
        base = os.path.join(data_dir, relative)
        for candidate in [base, base + "_fsm", base + "_vm"] + [f"{base}.{i}" for i in range(1, 8)]:
            if os.path.exists(candidate):
                files.append(candidate)
    assert files, f"no relation files found for schema {schema}"
    return files


def files_holding(needle: str, path: str, data_dir: str | None = None) -> list[str]:
    """The store files holding ``needle``'s UTF-8 bytes."""
    raw = needle.encode()
    found = []
    for name in store_files(path, data_dir):
        try:
            with open(name, "rb") as f:
                if raw in f.read():
                    found.append(name)
        except PermissionError:  # a PostgreSQL file of another user: read it as that user
            import subprocess

            result = subprocess.run(["grep", "-c", "-F", needle, name], capture_output=True, check=False)
            if result.stdout.strip() not in (b"", b"0"):
                found.append(name)
    return found


def text_everywhere(*values: Any) -> str:
    """Everything reachable from ``values`` as one string (repr of each), to look a marker up in."""
    return "\n".join(repr(v) for v in values)
