"""The durability setting a store commits with, on both backends (uses internals: a session
setting is readable only on the store's own connection).

``synchronous="NORMAL"`` (the default) survives a crash of the process; ``FULL`` also survives a
power loss (SQLite) or a crash of the database server (PostgreSQL, where NORMAL commits with
``synchronous_commit = off`` and FULL keeps the server's setting). A URL that sets
``synchronous_commit`` itself is followed.
"""

from __future__ import annotations

import urllib.parse

import pytest
import trio
from pg_cluster import pg_cluster_fixture, pg_url_fixture  # noqa: F401  (fixtures pg_cluster, pg_url)

from asides import InvalidArgumentError, open_runtime


async def _sqlite_setting(rt) -> int:
    return int((await rt.store._journal._driver.execute("PRAGMA synchronous"))[0][0])


async def _pg_setting(rt) -> str:
    """The setting a connection of the store gets: a new connection opened as the store opens
    its own (same URL, same setting), so that no query races the store's connection, which the
    store's committer alone uses (it watches its socket while idle)."""
    from asides.store._pg_driver import connect

    store = rt.store
    fresh = await trio.to_thread.run_sync(lambda: connect(store.url, store.path, create=False, synchronous=store._journal._synchronous))
    try:
        return str(fresh._conn.execute("SHOW synchronous_commit").fetchone()[0])
    finally:
        fresh.close()


async def test_open_runtime_passes_the_setting_to_a_store_file(tmp_path):
    path = str(tmp_path / "s.db")
    async with open_runtime(path) as rt:
        assert await _sqlite_setting(rt) == 1  # NORMAL
    async with open_runtime(path, synchronous="FULL") as rt:
        assert await _sqlite_setting(rt) == 2


async def test_an_unknown_setting_is_refused_before_anything_is_created(tmp_path):
    path = tmp_path / "never.db"
    with pytest.raises(InvalidArgumentError, match="synchronous"):
        async with open_runtime(str(path), synchronous="OFF"):
            pass
    assert not path.exists()


async def test_postgres_normal_commits_without_waiting_for_the_disk(pg_url):
    async with open_runtime(pg_url) as rt:
        assert await _pg_setting(rt) == "off"
    async with open_runtime(pg_url, synchronous="FULL") as rt:
        assert await _pg_setting(rt) == "on"  # the server's default


async def test_postgres_follows_a_url_that_sets_synchronous_commit(pg_url):
    head, _, options = pg_url.partition("options=")  # the test schema's search_path is set there
    assert options, "the premise: the test URL has options"
    url = head + "options=" + options + urllib.parse.quote(" -csynchronous_commit=local", safe="")
    async with open_runtime(url) as rt:
        assert await _pg_setting(rt) == "local"
