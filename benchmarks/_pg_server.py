"""The PostgreSQL server the ``postgres`` part measures on, and schemas of its own on it.

The server is the one ``ASIDES_TEST_POSTGRES_URL`` names, or else a throwaway cluster on a Unix
socket in a temporary folder, started (as the ``postgres`` system user when run as root) and
removed afterwards by the tests' own starter, ``tests/pg_cluster.py``, loaded here by path (the
benchmarks live beside the package, as the tests do; that file needs no pytest when loaded so).
Every store of a run is a schema of its own, dropped at the end of the run, so a server of your
own is left as it was.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER_FILE = os.path.join(ROOT, "tests", "pg_cluster.py")


def cluster_module() -> ModuleType:
    """``tests/pg_cluster.py``: the one the tests imported, if they did, else loaded from its path.
    Raises ``OSError`` when the file is not there (the benchmarks run from a checkout)."""
    loaded = sys.modules.get("pg_cluster")
    if loaded is not None and getattr(loaded, "__file__", None) == CLUSTER_FILE:
        return loaded
    spec = importlib.util.spec_from_file_location("_asides_bench_pg_cluster", CLUSTER_FILE)
    if spec is None or spec.loader is None or not os.path.exists(CLUSTER_FILE):
        raise FileNotFoundError(CLUSTER_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def why_unavailable() -> str | None:
    """Why no server can be had here, or ``None`` when one can."""
    try:
        return cluster_module().why_unavailable()  # type: ignore[no-any-return]
    except OSError:
        return f"{os.path.relpath(CLUSTER_FILE, ROOT)} is missing (run the benchmarks from a checkout)"


@contextmanager
def server() -> Iterator[tuple[str, str]]:
    """A server for the block: ``(url, where)``, ``where`` saying which server it is."""
    module = cluster_module()
    cluster = module.Cluster.start()
    try:
        where = "a throwaway cluster on a Unix socket" if cluster.folder is not None else f"the server of {module.ENV_URL}"
        yield cluster.url, where
    finally:
        cluster.stop()


def describe(url: str) -> str:
    """The server at ``url``: ``PostgreSQL <version>`` and its durability settings."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        settings = [conn.execute(f"SHOW {name}").fetchone() for name in ("server_version", "synchronous_commit", "fsync")]
    version, synchronous_commit, fsync = (row[0] if row else "?" for row in settings)
    return (
        f"PostgreSQL {version} (server: synchronous_commit={synchronous_commit}, fsync={fsync}; asides' stores and "
        "LangGraph's saver commit with the server's setting by default; asides with synchronous=NORMAL, with off)"
    )


class Schemas:
    """Schemas made on one server for one run, a store (or a LangGraph saver) in each."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.names: list[str] = []

    def fresh(self, label: str) -> str:
        """The URL of a new, empty schema ``asides_bench_<label>_<random>``."""
        import psycopg

        name = f"asides_bench_{label}_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        self.names.append(name)
        return cluster_module().with_search_path(self.url, name)  # type: ignore[no-any-return]

    def drop_all(self) -> None:
        """Drop every schema made here (with what it holds)."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            for name in self.names:
                conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
        self.names.clear()
