"""The durability setting a store commits with, on both backends (uses internals: a session
setting is readable only on the store's own connection).

Not given, each backend's default: on a store file ``NORMAL``, which survives a crash of the
process (``FULL`` also a power loss); on PostgreSQL the server's own ``synchronous_commit`` (``on``
unless configured otherwise: a commit survives a crash of the server), with group commit sharing
the wait among concurrent writers; ``NORMAL`` opts out (``synchronous_commit = off``), and ``FULL``
turns a configured ``off`` on. A URL that sets ``synchronous_commit`` itself is followed.
"""

from __future__ import annotations

import urllib.parse
import uuid

import pytest
import trio
from pg_cluster import pg_cluster_fixture, pg_url_fixture  # noqa: F401  (fixtures pg_cluster, pg_url)

from asides import InvalidArgumentError, PassthroughStrategy, open_runtime, text
from tests.helpers import writable_store


async def _sqlite_setting(rt) -> int:
    return int((await writable_store(rt)._journal._driver.execute("PRAGMA synchronous"))[0][0])


async def _pg_setting(rt) -> str:
    """The setting a connection of the store gets: a new connection opened as the store opens
    its own (same URL, same setting), so that no query races the store's connection, which the
    store's committer alone uses (it watches its socket while idle)."""
    from asides.store._pg_driver import connect

    store = writable_store(rt)
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


async def test_open_runtime_on_a_store_file_defaults_to_normal(tmp_path):
    path = str(tmp_path / "s.db")
    async with open_runtime(path, synchronous=None) as rt:
        assert await _sqlite_setting(rt) == 1


async def test_postgres_commits_durably_by_default_and_normal_opts_out(pg_url):
    async with open_runtime(pg_url) as rt:
        assert await _pg_setting(rt) == "on"  # the server's default: a commit waits for its log on disk
    async with open_runtime(pg_url, synchronous="NORMAL") as rt:
        assert await _pg_setting(rt) == "off"
    async with open_runtime(pg_url, synchronous="FULL") as rt:
        assert await _pg_setting(rt) == "on"


async def test_postgres_default_follows_the_configured_setting_and_full_turns_off_on(pg_url, pg_cluster):
    """A role configured with ``synchronous_commit = off``: the default follows the server's
    configuration, ``FULL`` commits durably all the same."""
    import psycopg

    if pg_cluster.folder is None or not pg_url.startswith("postgresql://postgres@"):
        pytest.skip("a server of your own: the test makes a role of its own only on its throwaway cluster")
    role = "asides_off_" + uuid.uuid4().hex[:8]
    schema = urllib.parse.unquote(pg_url.rsplit("search_path%3D", 1)[1])
    with psycopg.connect(pg_cluster.url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"ALTER ROLE {role} SET synchronous_commit = off")
        conn.execute(f"GRANT USAGE, CREATE ON SCHEMA {schema} TO {role}")
    url = pg_url.replace("postgresql://postgres@", f"postgresql://{role}@", 1)
    try:
        async with open_runtime(url) as rt:
            assert await _pg_setting(rt) == "off"
        async with open_runtime(url, synchronous="FULL") as rt:
            assert await _pg_setting(rt) == "on"
            m = await rt.open_manager(strategy=PassthroughStrategy())
            await m.add_message("user", [text("kept")])
    finally:
        with psycopg.connect(pg_cluster.url, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")


async def test_postgres_concurrent_writers_share_durable_commits(pg_url):
    """Group commit shares the durable commit's wait: 16 writers awaiting one write at a time
    make far fewer commits than writes (counted, not timed), and every write is there."""
    writers, each = 16, 10
    async with open_runtime(pg_url) as rt:
        assert await _pg_setting(rt) == "on"
        managers = [await rt.open_manager(f"writer-{w}", strategy=PassthroughStrategy()) for w in range(writers)]
        before = rt.store.statistics().commits

        async def write(m) -> None:
            for i in range(each):
                await m.add_message("user", [text(f"{m.namespace} {i}")])

        async with trio.open_nursery() as nursery:
            for m in managers:
                nursery.start_soon(write, m)
        commits = rt.store.statistics().commits - before
    assert 0 < commits * 4 <= writers * each, f"{commits} commits for {writers * each} writes"
    async with open_runtime(pg_url, read_only=True) as rt:
        assert len(rt.store.messages("main")) == writers * each


async def test_postgres_follows_a_url_that_sets_synchronous_commit(pg_url):
    head, _, options = pg_url.partition("options=")  # the test schema's search_path is set there
    assert options, "the premise: the test URL has options"
    url = head + "options=" + options + urllib.parse.quote(" -csynchronous_commit=local", safe="")
    async with open_runtime(url) as rt:
        assert await _pg_setting(rt) == "local"
