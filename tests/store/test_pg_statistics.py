"""A PostgreSQL store written in bulk (a restore, an import, a build) leaves the planner's
statistics describing what it wrote, so that its lookups of one key do not read every gap until
autovacuum gets to the table; a host writing at its usual pace leaves them to autovacuum. Read
from the server: ``pg_stat_user_tables.analyze_count`` counts the refreshes a session asked for
(autovacuum's are counted apart), and ``pg_class.reltuples`` is what the planner believes."""

from __future__ import annotations

from asides.lowlevel import open_store
from asides.store import text
from asides.store._postgres import ANALYZE_AFTER_RECORDS


def _statistics(url: str) -> dict[str, tuple[int, float]]:
    """Each of the log's tables: how many times a session analyzed it, and the rows the planner
    believes it holds."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        found = conn.execute(
            "SELECT s.relname, s.analyze_count, c.reltuples FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid "
            "WHERE s.schemaname = current_schema() AND s.relname LIKE 'asides\\_log%'"
        ).fetchall()
    return {name: (count, tuples) for name, count, tuples in found}


def _messages(count: int, start: int = 0) -> list[tuple]:
    return [("host", (text(f"message {i}"),), None) for i in range(start, start + count)]


async def test_a_restore_leaves_the_statistics_describing_what_it_restored(pg_url, tmp_path):
    async with open_store(str(tmp_path / "source.db")) as source:
        await source.append_messages("main", _messages(300))
        await source.set_states("main", {f"ns/key{i}": i for i in range(200)})
        backup = await source.records()
    async with open_store(pg_url) as store:
        assert _statistics(pg_url)["asides_log"][0] == 0
        await store.restore_records(backup)
        found = _statistics(pg_url)
    assert found["asides_log"] == (1, len(backup))
    # and the tables its triggers keep (where the gaps and the state keys are counted)
    assert {name for name, (count, _) in found.items() if count == 1} >= {"asides_log_gap_blocks", "asides_log_state_keys"}


async def test_a_bulk_write_refreshes_the_statistics_each_time_it_doubles_the_log(pg_url):
    batch = ANALYZE_AFTER_RECORDS // 4
    async with open_store(pg_url) as store:
        for i in range(3):
            await store.append_messages("main", _messages(batch, i * batch))
        assert _statistics(pg_url)["asides_log"][0] == 0
        await store.append_messages("main", _messages(batch, 3 * batch))  # the first 10,000
        assert _statistics(pg_url)["asides_log"] == (1, ANALYZE_AFTER_RECORDS)
        for i in range(4, 7):
            await store.append_messages("main", _messages(batch, i * batch))
        assert _statistics(pg_url)["asides_log"][0] == 1  # 17,500: not yet twice what it held
        await store.append_messages("main", _messages(batch, 7 * batch))
        assert _statistics(pg_url)["asides_log"] == (2, 2 * ANALYZE_AFTER_RECORDS)
    # A process opening the log of 20,000 counts from what it holds: writing a few hundred
    # records, as a host does between autovacuum's visits, it leaves the statistics alone.
    async with open_store(pg_url) as store:
        for i in range(3):
            await store.append_messages("main", _messages(100, 8 * batch + i * 100))
            await store.set_state("main", f"ns/key{i}", i)
        assert store.length("main") == 2 * ANALYZE_AFTER_RECORDS + 300
    assert _statistics(pg_url)["asides_log"][0] == 2


async def test_a_write_of_fewer_records_than_the_bound_leaves_the_statistics_alone(pg_url):
    async with open_store(pg_url) as store:
        await store.append_messages("main", _messages(ANALYZE_AFTER_RECORDS - 1))
    assert _statistics(pg_url)["asides_log"][0] == 0


async def test_a_refresh_that_fails_is_logged_and_the_restore_stands(pg_url, tmp_path, monkeypatch, caplog):
    """A refresh that cannot be made (here: the server refuses it) is a warning naming the
    store; the restore it followed is written and the store goes on."""
    from asides.store._pg_driver import Connection

    def refused(self: Connection) -> None:
        raise RuntimeError("ANALYZE refused")

    monkeypatch.setattr(Connection, "analyze", refused)
    async with open_store(str(tmp_path / "source.db")) as source:
        await source.append_messages("main", _messages(20))
        backup = await source.records()
    async with open_store(pg_url) as store:
        with caplog.at_level("WARNING", logger="asides.store"):
            await store.restore_records(backup)
        said = [r.getMessage() for r in caplog.records]
        assert any("could not refresh the planner's statistics" in m and "ANALYZE refused" in m for m in said), said
        await store.append_message("main", "host", (text("after"),))
    assert _statistics(pg_url)["asides_log"][0] == 0
    async with open_store(pg_url, read_only=True) as reopened:
        assert reopened.length("main") == 21
