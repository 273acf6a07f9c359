"""The PostgreSQL store on its own: schema, writes, reads, reopen, and several stores on one
database in one test (each with its own connections, as separate processes have). Skipped,
saying why, where PostgreSQL is not available."""

from __future__ import annotations

import pytest
import trio
from helpers import make_deaf
from pg_checks import check_sequences, execute, rows

from asides.lowlevel import open_store
from asides.store import (
    BranchExistsError,
    InvalidArgumentError,
    InvalidNameError,
    StoreFailedError,
    StoreNotEmptyError,
    StoreReadOnlyError,
    UnknownBranchError,
    UnknownMessageError,
    _pg_notices,
    text,
)
from asides.store import _pg_commit as postgres_commits
from asides.store._pg_driver import Connection
from asides.store._postgres import PostgresStore, redact_url
from asides.store._rows import FromElsewhere
from asides.store._sqlite import MessagesAppended, SqliteStore, StatesWritten
from asides.store._store import Store


def _rows(url: str) -> list[tuple]:
    return rows(url)


_execute = execute


# -- one store ---------------------------------------------------------------------------------


async def test_a_new_store_is_created_and_reopened(pg_url):
    async with open_store(pg_url) as store:
        assert isinstance(store, PostgresStore) and isinstance(store, Store) and not isinstance(store, SqliteStore)
        first = await store.append_message("main", "alice", (text("hello"),))
        more = await store.append_messages("main", [("bob", (text("a"),), None), ("bob", (text("b"),), {"k": 1})])
        assert [m.sequence for m in (first, *more)] == [1, 2, 3]
        assert more[1].metadata == {"k": 1}
        head = await store.set_states("main", {"ns/reader": "alice", "ns/x": [1, 2]})
        assert head == 5
        edited = await store.edit_message("main", first.id, (text("hello!"),))
        assert (edited.id, edited.sequence, edited.content) == (first.id, 1, (text("hello!"),))
        side = await store.create_branch("side", "main", meta={"why": "test"})
        assert (side.parent, side.fork_sequence) == ("main", 6)
        on_side = await store.append_message("side", "carol", (text("c"),))
        assert on_side.sequence == 7
    async with open_store(pg_url) as store:
        assert [m.content for m in store.messages("main")] == [(text("hello!"),), (text("a"),), (text("b"),)]
        assert store.head("main") == 6
        assert store.get_state("main", "ns/x") == [1, 2]
        assert [m.id for m in store.messages("side")][-1] == on_side.id
        assert store.model.branch_meta("side")["why"] == "test"
    check_sequences(_rows(pg_url))


async def test_refused_writes_leave_the_database_as_it_was(pg_url):
    async with open_store(pg_url) as store:
        await store.append_message("main", "alice", (text("hello"),))
        before = _rows(pg_url)
        with pytest.raises(UnknownBranchError):
            await store.append_message("nowhere", "alice", (text("x"),))
        with pytest.raises(InvalidNameError):
            await store.set_states("main", {"": 1})
        with pytest.raises(ValueError):
            await store.set_states("main", {"k": float("nan")})
        with pytest.raises(UnknownMessageError):
            await store.edit_message("main", "999", (text("x"),))
        with pytest.raises(BranchExistsError):
            await store.create_branch("main", "main")
        with pytest.raises(InvalidArgumentError):
            await store.create_branch("b", "main", 99)
        with pytest.raises(InvalidNameError):
            await store.create_branch("bad\x00name", "main")
        assert _rows(pg_url) == before


async def test_a_foreign_or_other_format_schema_is_refused_and_left_alone(pg_cluster):
    foreign = pg_cluster.fresh_url()
    _execute(foreign, "CREATE TABLE asides_log (x int)")
    with pytest.raises(StoreFailedError, match="not an asides store"):
        async with open_store(foreign):
            pass
    newer = pg_cluster.fresh_url()
    async with open_store(newer):
        pass
    _execute(newer, "UPDATE asides_meta SET value = '7' WHERE key = 'format'")
    with pytest.raises(StoreFailedError, match="format '7'; this build reads format 2"):
        async with open_store(newer):
            pass
    stranger = pg_cluster.fresh_url()
    async with open_store(stranger):
        pass
    _execute(stranger, "UPDATE asides_meta SET value = 'something else' WHERE key = 'store'")
    with pytest.raises(StoreFailedError, match="not an asides store"):
        async with open_store(stranger):
            pass
    import psycopg

    with psycopg.connect(foreign, autocommit=True) as conn:
        tables = {row[0] for row in conn.execute("SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace")}
    assert tables == {"asides_log"}  # nothing was created next to the foreign table


async def test_a_format_1_store_is_refused_naming_the_way_to_move_it(pg_cluster):
    """Format 1 (a head row and a notifying trigger) is refused, read-only too, and left as it was."""
    old = pg_cluster.fresh_url()
    for statement in (
        "CREATE TABLE asides_meta (key text PRIMARY KEY, value text NOT NULL)",
        "INSERT INTO asides_meta VALUES ('store', 'asides'), ('format', '1')",
        "CREATE TABLE asides_head (singleton boolean PRIMARY KEY, last_id bigint NOT NULL)",
        "INSERT INTO asides_head VALUES (true, 1)",
        "CREATE TABLE asides_log (id bigint PRIMARY KEY, branch text, seq bigint, kind text, ref text, body text)",
        "INSERT INTO asides_log VALUES (1, 'main', 1, 'state', 'k', '1')",
    ):
        _execute(old, statement)
    for read_only in (False, True):
        with pytest.raises(StoreFailedError, match="format '1'; this build reads format 2.*asides dump.*asides restore"):
            async with open_store(old, read_only=read_only):
                pass
    assert _rows(old) == [(1, "main", 1, "state", "k", "1")]
    import psycopg

    with psycopg.connect(old, autocommit=True) as conn:
        assert conn.execute("SELECT last_id FROM asides_head").fetchall() == [(1,)]


async def test_a_commit_that_finds_its_first_id_taken_writes_nothing_and_goes_after_it(pg_url, monkeypatch):
    """Two stores numbering from the same newest record: the second to commit finds its id taken
    (the primary key decides), catches up and commits after the first, without the write lock."""
    make_deaf(monkeypatch)
    async with open_store(pg_url) as late, open_store(pg_url) as early:
        await early.append_message("main", "early", (text("first"),))
        message = await late.append_message("main", "late", (text("second"),))  # late had not heard of "first"
        assert (message.id, message.sequence) == ("2", 2)
        assert late.statistics().contended_commits == 0  # its second try, still without the lock
        assert [m.participant for m in late.messages("main")] == ["early", "late"]
    assert [row[:3] for row in _rows(pg_url)] == [(1, "main", 1), (2, "main", 2)]


async def test_a_read_only_open_creates_nothing_and_refuses_writes(pg_cluster):
    empty = pg_cluster.fresh_url()
    with pytest.raises(StoreFailedError, match="holds no asides store"):
        async with open_store(empty, read_only=True):
            pass
    async with open_store(empty) as store:
        await store.append_message("main", "alice", (text("hello"),))
    async with open_store(empty, read_only=True) as store:
        assert len(store.messages("main")) == 1
        with pytest.raises(StoreReadOnlyError):
            await store.append_message("main", "alice", (text("x"),))


async def test_racing_opens_of_a_new_store_create_it_once(pg_url):
    opened = []

    async def open_one() -> None:
        async with open_store(pg_url) as store:
            opened.append(store.head("main"))

    async with trio.open_nursery() as nursery:
        for _ in range(6):
            nursery.start_soon(open_one)
    assert opened == [0] * 6


def test_a_password_never_shows_in_the_store_path():
    assert redact_url("postgresql://me:secret@db.example/asides") == "postgresql://me:***@db.example/asides"
    assert "secret" not in redact_url("postgresql://db.example/asides?user=me&password=secret&sslmode=require")
    assert redact_url("postgresql://me@/asides?host=/tmp") == "postgresql://me@/asides?host=/tmp"


async def test_records_reads_the_database(pg_url):
    async with open_store(pg_url) as store:
        await store.append_message("main", "alice", (text("hello"),))
        await store.set_state("main", "k", 1)
        assert [tuple(r) for r in await store.records()] == _rows(pg_url)


# -- several stores on one database ------------------------------------------------------------


def _announcements(url: str) -> tuple[list[str], object]:
    """A connection listening like a store's: the payloads it has received so far (read them
    with ``pump()``), and that pump."""
    import psycopg

    conn = psycopg.connect(url, autocommit=True)
    payloads: list[str] = []
    conn.add_notify_handler(lambda notify: payloads.append(notify.payload))
    conn.execute("LISTEN asides_log")

    def pump() -> None:
        conn.execute("SELECT 1")  # reads every notification that arrived before it

    return payloads, pump


def _hearing(store, count: int) -> trio.Event:
    """An event set once ``store`` holds ``count`` messages on main, heard from elsewhere."""
    heard = trio.Event()

    def listener(event: object) -> None:
        if isinstance(event, FromElsewhere) and len(store.messages("main")) >= count:
            heard.set()

    store.add_listener(listener)
    return heard


async def test_a_burst_of_commits_is_announced_by_its_first_commit_and_once_after_it(pg_url, monkeypatch):
    """Within NOTICE_GAP of an announcement, commits do not announce themselves; the newest is
    announced once the gap has passed, and another process hears every commit from it."""
    monkeypatch.setattr(_pg_notices, "NOTICE_GAP", 1.0)
    payloads, pump = _announcements(pg_url)
    async with open_store(pg_url) as writer, open_store(pg_url) as other:
        schema = writer._journal._schema
        heard = _hearing(other, 20)
        for n in range(20):
            await writer.append_message("main", "alice", (text(f"m{n}"),))
        with trio.fail_after(10):
            await heard.wait()  # no sync: announcements alone brought them
            while f"{schema}:20" not in payloads:  # the trailing one comes a second after the first
                await trio.sleep(0.05)
                pump()
        assert payloads == [f"{schema}:1", f"{schema}:20"]
        assert [m.content[0].text for m in other.messages("main")] == [f"m{n}" for n in range(20)]


async def test_an_announcement_owed_when_a_store_closes_is_made_as_it_closes(pg_url, monkeypatch):
    monkeypatch.setattr(_pg_notices, "NOTICE_GAP", 3600.0)
    async with open_store(pg_url) as other:
        heard = _hearing(other, 2)
        async with open_store(pg_url) as writer:
            await writer.append_message("main", "alice", (text("announced"),))
            await writer.append_message("main", "alice", (text("owed"),))
        with trio.fail_after(10):
            await heard.wait()
        assert [m.content[0].text for m in other.messages("main")] == ["announced", "owed"]


async def test_a_commit_elsewhere_reaches_this_store_by_notification_and_by_sync(pg_url):
    async with open_store(pg_url) as a, open_store(pg_url) as b:
        heard = trio.Event()
        seen: list[object] = []

        def listener(event: object) -> None:
            seen.append(event)
            if isinstance(event, MessagesAppended):
                heard.set()

        b.add_listener(listener)
        sent = await a.append_message("main", "alice", (text("hello"),))
        with trio.fail_after(10):
            await heard.wait()  # no sync: the notification alone brought it
        assert [m.id for m in seen[0].messages] == [sent.id]
        assert isinstance(seen[0], FromElsewhere)
        assert b.get_message("main", sent.id) == sent
        # sync: every commit made before it is in the model when it returns
        await a.set_state("main", "k", "v")
        await b.sync()
        assert b.get_state("main", "k") == "v"
        assert any(isinstance(e, StatesWritten) and e.keys == ("k",) for e in seen)
        mine: list[object] = []
        a.add_listener(mine.append)
        await a.append_message("main", "alice", (text("mine"),))
        assert [type(e) for e in mine] == [MessagesAppended]  # a process's own writes are not "elsewhere"


@pytest.mark.parametrize("optimistic_attempts", [postgres_commits.OPTIMISTIC_ATTEMPTS, 0], ids=["optimistic-first", "always-locking"])
async def test_concurrent_writers_in_several_stores_get_gap_free_sequences(pg_url, monkeypatch, optimistic_attempts):
    """Both ways a commit is made: appended if the head has not moved (after catching up), or
    under the write lock (after a few failed tries; ``always-locking`` takes the lock at once)."""
    monkeypatch.setattr(postgres_commits, "OPTIMISTIC_ATTEMPTS", optimistic_attempts)
    locked = []
    stores = 4
    per_task = 25
    returned: dict[str, int] = {}
    async with open_store(pg_url) as first:
        await first.create_branch("side", "main")

    async def writer(store: PostgresStore, name: str) -> None:
        for n in range(per_task):
            branch = "side" if n % 3 == 0 else "main"
            if n % 5 == 0:
                items = [(name, (text(f"{name} {n}.{i}"),), None) for i in range(3)]
                for message in await store.append_messages(branch, items):
                    returned[message.id] = message.sequence
            else:
                message = await store.append_message(branch, name, (text(f"{name} {n}"),))
                returned[message.id] = message.sequence
            if n % 7 == 0:
                await store.set_state(branch, f"{name}/n", n)

    async def run_store(index: int) -> None:
        async with open_store(pg_url) as store:
            async with trio.open_nursery() as nursery:
                for task in range(3):
                    nursery.start_soon(writer, store, f"s{index}t{task}")
            await store.sync()
            assert store.head("main") == store.model.head("main")
            locked.append(store.statistics().contended_commits)

    async with trio.open_nursery() as nursery:
        for index in range(stores):
            nursery.start_soon(run_store, index)
    if optimistic_attempts == 0:
        assert sum(locked) > 0, "the premise: commits took the write lock"
    rows = _rows(pg_url)
    check_sequences(rows)
    stored = {str(row[0]): row[2] for row in rows if row[3] == "message"}
    assert stored == returned  # every acknowledged message, with the sequence it was returned with
    async with open_store(pg_url) as reopened:
        found = {m.id: m.sequence for branch in ("main", "side") for m in reopened.model.slice(branch, 0) if m.id in stored}
        assert found == returned


async def test_a_guard_runs_after_every_earlier_commit_and_its_refusal_writes_nothing(pg_url):
    async with open_store(pg_url) as a, open_store(pg_url) as b:
        await a.set_state("main", "ns/reader", "alice")
        # b may not have heard of it yet: its guard runs after a's commit is in b's model anyway

        def only_if_unclaimed() -> None:
            recorded = b.get_state("main", "ns/reader")
            if recorded is not None:
                raise LookupError(f"claimed by {recorded}")

        before = _rows(pg_url)
        with pytest.raises(LookupError, match="claimed by alice"):
            await b.set_state("main", "ns/reader", "bob", guard=only_if_unclaimed)
        assert _rows(pg_url) == before
        # a write batched with the refused one still commits
        await b.set_state("main", "other", 1)
        assert b.get_state("main", "other") == 1


async def test_racing_branch_creations_across_stores_make_one_branch(pg_url):
    outcomes: list[str] = []

    async def create(store: PostgresStore) -> None:
        try:
            await store.create_branch("feature", "main")
            outcomes.append("made")
        except BranchExistsError:
            outcomes.append("refused")

    async with open_store(pg_url) as a, open_store(pg_url) as b, open_store(pg_url) as c:
        async with trio.open_nursery() as nursery:
            for store in (a, b, c):
                nursery.start_soon(create, store)
    assert sorted(outcomes) == ["made", "refused", "refused"]
    assert [row[1] for row in _rows(pg_url) if row[3] == "branch"] == ["feature"]


# -- losing the database -----------------------------------------------------------------------


async def test_a_killed_connection_is_replaced_for_the_next_call(pg_url):
    async with open_store(pg_url) as store:
        await store.append_message("main", "alice", (text("one"),))
        pid = store._journal._writer_pid()
        _execute(pg_url, f"SELECT pg_terminate_backend({pid})")
        second = await store.append_message("main", "alice", (text("two"),))
        assert second.sequence == 2
        assert store._journal._writer_pid() != pid
    check_sequences(_rows(pg_url))


async def test_an_idle_store_whose_connection_was_killed_reconnects_and_hears_commits_made_since(pg_url):
    """No call of its own: the idle store notices the lost connection, reconnects by itself and
    catches up, so another process's commit made meanwhile still reaches it."""
    async with open_store(pg_url) as idle, open_store(pg_url) as other:
        heard = _hearing(idle, 1)
        pid = idle._journal._writer_pid()
        _execute(pg_url, f"SELECT pg_terminate_backend({pid})")
        await other.append_message("main", "bob", (text("while it was gone"),))
        with trio.fail_after(10):
            await heard.wait()
        assert [m.content[0].text for m in idle.messages("main")] == ["while it was gone"]
        assert idle._journal._writer_pid() not in (None, pid)


async def test_an_unreachable_database_fails_the_calls_it_affects_then_recovers(pg_url, monkeypatch):
    import asides.store._postgres as module

    async with open_store(pg_url) as store:
        await store.append_message("main", "alice", (text("one"),))
        before = _rows(pg_url)
        store._journal._drop_connection()

        def refuse(*args, **kwargs):
            import psycopg

            raise psycopg.OperationalError("connection refused (test)")

        monkeypatch.setattr(module, "connect", refuse)
        monkeypatch.setattr(module, "RECONNECT_DELAYS", (0.0, 0.01))
        with pytest.raises(StoreFailedError, match="cannot reach"):
            await store.append_message("main", "alice", (text("lost"),))
        with pytest.raises(StoreFailedError):
            await store.sync()
        assert _rows(pg_url) == before
        assert [m.content for m in store.messages("main")] == [(text("one"),)]  # reads still answer
        monkeypatch.undo()
        again = await store.append_message("main", "alice", (text("two"),))
        assert again.sequence == 2
    check_sequences(_rows(pg_url))


@pytest.mark.parametrize("happened", [True, False])
async def test_a_commit_whose_answer_was_lost_is_settled_by_looking(pg_url, monkeypatch, happened):
    """The connection drops with a commit out: the store reconnects and looks. Written: the
    write returns normally, once. Not written: it is retried once; lost again, it fails."""
    original = Connection.append_here
    calls = []

    async def lose_the_answer(self, rows, *, announce):
        calls.append(rows)
        if happened:
            assert await original(self, rows, announce=announce)
        self._conn.close()
        import psycopg

        raise psycopg.OperationalError("server closed the connection unexpectedly (test)")

    async with open_store(pg_url) as store:
        await store.append_message("main", "alice", (text("one"),))
        monkeypatch.setattr(Connection, "append_here", lose_the_answer)
        if happened:
            message = await store.append_message("main", "alice", (text("two"),))
            assert message.sequence == 2
            assert len(calls) == 1
        else:
            with pytest.raises(StoreFailedError, match="nothing of it was written"):
                await store.append_message("main", "alice", (text("two"),))
            assert len(calls) == 2
        monkeypatch.undo()
        await store.append_message("main", "alice", (text("three"),))
        expected = ["one", "two", "three"] if happened else ["one", "three"]
        assert [m.content[0].text for m in store.messages("main")] == expected
    check_sequences(_rows(pg_url))


# -- backups -----------------------------------------------------------------------------------


async def test_a_backup_restores_into_an_empty_shared_store_with_its_ids(pg_url, tmp_path):
    async with open_store(str(tmp_path / "source.db")) as source:
        first = await source.append_message("main", "alice", (text("hello"),))
        await source.set_state("main", "ns/reader", "alice")
        await source.edit_message("main", first.id, (text("hello!"),))
        await source.create_branch("side", "main")
        backup = await source.records()
    async with open_store(pg_url) as store:
        await store.restore_records(backup)
        assert store.get_message("main", first.id).content == (text("hello!"),)
        after = await store.append_message("main", "bob", (text("after"),))
        assert int(after.id) == len(backup) + 1
    assert [tuple(r) for r in rows(pg_url)][: len(backup)] == [tuple(r) for r in backup]
    check_sequences(rows(pg_url))


async def test_a_restore_racing_another_process_writes_nothing_and_the_store_goes_on(pg_url, monkeypatch):
    make_deaf(monkeypatch)
    backup = [(1, "main", 1, "state", "k", "1")]
    async with open_store(pg_url) as restoring, open_store(pg_url) as other:
        await other.set_state("main", "other", 2)  # restoring has not heard of it
        with pytest.raises(StoreNotEmptyError):
            await restoring.restore_records(backup)
        # Memory takes a restore's records only once they are committed: nothing to undo.
        await restoring.sync()
        assert restoring.get_state("main", "other") == 2 and restoring.get_state("main", "k") is None
    assert [row[4] for row in rows(pg_url)] == ["other"]


def test_both_store_classes_write_through_the_one_store():
    """SqliteStore and PostgresStore only choose a journal (and reach its extras): every write
    and read of the store is the one class's, written once, so neither backend can gain a write
    the other lacks."""
    import inspect

    for name, member in inspect.getmembers(Store):
        if name.startswith("__") or not callable(member):
            continue
        for klass in (SqliteStore, PostgresStore):
            assert name not in klass.__dict__, f"{klass.__name__}.{name} overrides the store's"


def test_the_store_works_under_asyncio(pg_url):
    import anyio

    async def scenario() -> None:
        async with open_store(pg_url) as a, open_store(pg_url) as b:
            heard = anyio.Event()
            b.add_listener(lambda event: heard.set() if isinstance(event, MessagesAppended) else None)
            sent = await a.append_message("main", "alice", (text("from asyncio"),))
            with anyio.fail_after(10):
                await heard.wait()
            assert b.get_message("main", sent.id) == sent
            await b.set_state("main", "k", 1)
            await a.sync()
            assert a.get_state("main", "k") == 1

    anyio.run(scenario, backend="asyncio")


async def test_catching_up_reads_the_log_a_page_at_a_time(pg_url, monkeypatch):
    """Opens, catch-ups and locked commits read what they missed in pages (3 rows here): every
    record arrives once, in order, whichever way it is read."""
    from asides.store import _pg_driver

    monkeypatch.setattr(_pg_driver, "PAGE_ROWS", 3)
    monkeypatch.setattr(postgres_commits, "OPTIMISTIC_ATTEMPTS", 0)  # every commit takes the lock

    async with open_store(pg_url) as first:
        await first.append_messages("main", [("a", (text(f"a{n}"),), None) for n in range(10)])
    async with open_store(pg_url) as second:  # the open reads 10 records in 4 pages
        assert [m.content[0].text for m in second.messages("main")] == [f"a{n}" for n in range(10)]
        async with open_store(pg_url) as third:
            await third.append_messages("main", [("c", (text(f"c{n}"),), None) for n in range(7)])
        await second.sync()  # a catch-up of 7 records
        assert len(second.messages("main")) == 17
    make_deaf(monkeypatch)
    async with open_store(pg_url) as deaf, open_store(pg_url) as other:
        await other.append_messages("main", [("o", (text(f"o{n}"),), None) for n in range(8)])
        message = await deaf.append_message("main", "d", (text("d"),))  # under the lock, after reading 8 in pages
        assert message.sequence == 26
        assert [m.sequence for m in deaf.messages("main")] == list(range(1, 27))


# -- a schema the URL names that does not exist yet ---------------------------------------------


async def test_a_url_naming_a_missing_schema_creates_it_or_names_the_statement(pg_cluster):
    """A newcomer's URL names a schema that does not exist yet: a writing open creates it; a
    read-only open, and a role that may not create schemas, are refused naming the schema and
    the statement that creates it (they used to say only that there was no current schema)."""
    import uuid

    from pg_cluster import with_search_path

    schema = "Newcomer_" + uuid.uuid4().hex[:8]  # mixed case: quoted, so kept as written
    url = with_search_path(pg_cluster.url, f'"{schema}"')
    with pytest.raises(StoreFailedError, match=f"schema '{schema}'.*does not exist.*CREATE SCHEMA IF NOT EXISTS \"{schema}\""):
        async with open_store(url, read_only=True):
            pass
    async with open_store(url) as store:
        await store.append_message("main", "alice", (text("hello"),))
    async with open_store(url, read_only=True) as store:  # the same schema, now holding the store
        assert [m.participant for m in store.messages("main")] == ["alice"]
    import psycopg

    with psycopg.connect(pg_cluster.url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone() == (1,)

    role = "newcomer_" + uuid.uuid4().hex[:8]
    execute(pg_cluster.url, f"CREATE ROLE {role} LOGIN")
    execute(pg_cluster.url, f"REVOKE CREATE ON DATABASE postgres FROM {role}")
    as_role = with_search_path(pg_cluster.url.replace("postgres@", f"{role}@", 1), "not_there_" + uuid.uuid4().hex[:8])
    with pytest.raises(StoreFailedError, match="this role may not create it; have its owner run CREATE SCHEMA IF NOT EXISTS"):
        async with open_store(as_role):
            pass
    # A schema that exists but that the role may not use is named as such.
    hidden = "hidden_" + uuid.uuid4().hex[:8]
    execute(pg_cluster.url, f"CREATE SCHEMA {hidden}")
    not_usable = with_search_path(pg_cluster.url.replace("postgres@", f"{role}@", 1), hidden)
    with pytest.raises(StoreFailedError, match=f"schema '{hidden}'.*exists but this role may not use it"):
        async with open_store(not_usable, read_only=True):
            pass
