"""The PostgreSQL store on its own: schema, writes, reads, reopen, and two stores (as two
processes would) on one database. Skipped, saying why, where PostgreSQL is not available."""

from __future__ import annotations

from pg_cluster import pg_cluster_fixture, pg_url_fixture  # noqa: F401  (fixtures pg_cluster, pg_url)

from asides.store import open_store, text


async def test_a_new_store_is_created_and_reopened(pg_url):
    async with open_store(pg_url) as store:
        first = await store.append_message("main", "alice", (text("hello"),))
        more = await store.append_messages("main", [("bob", (text("a"),), None), ("bob", (text("b"),), {"k": 1})])
        assert [m.sequence for m in (first, *more)] == [1, 2, 3]
        assert more[1].metadata == {"k": 1}
    async with open_store(pg_url) as store:
        assert [m.content for m in store.messages("main")] == [(text("hello"),), (text("a"),), (text("b"),)]
        assert store.head("main") == 3
