"""``asides inspect``, ``compile`` and ``export`` against a PostgreSQL URL: they read the shared
store read-only (while hosts write to it), never create a schema, and never print a password.
Skipped, saying why, where PostgreSQL is not available."""

from __future__ import annotations

import json

import trio
from pg_checks import rows

from asides._cli._main import main
from asides.actors import open_runtime
from asides.store import text
from asides.strategies import PassthroughStrategy


async def _seed(url: str) -> None:
    async with open_runtime(url) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        await ann.add_message("user", [text("for ann only", ["ann"]), text("for everyone")])
        await ann.add_message("user", [text("second")])


def _with_password(url: str) -> str:
    return url.replace("postgresql://postgres@", "postgresql://postgres:not-a-real-secret@")


def test_inspect_reads_a_shared_store_and_hides_the_password(pg_url, capsys):
    trio.run(_seed, pg_url)
    before = rows(pg_url)
    assert main(["inspect", _with_password(pg_url), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["store"].startswith("postgresql://postgres:***@")
    (main_branch,) = report["branches"]
    assert main_branch["messages"] == 2
    assert rows(pg_url) == before  # read-only: nothing written


def test_compile_and_export_read_a_shared_store(pg_url, capsys):
    trio.run(_seed, pg_url)
    assert main(["compile", pg_url, "--namespace", "agents/ann", "--format", "json"]) == 0
    compiled = capsys.readouterr().out
    assert "for ann only" in compiled and "second" in compiled
    assert main(["compile", pg_url, "--namespace", "agents/ann", "--reader", "bob"]) == 1  # the record names ann
    capsys.readouterr()
    assert main(["export", pg_url]) == 0
    exported = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(exported) == 2


def test_reading_commands_refuse_a_schema_without_a_store_and_create_nothing(pg_cluster, capsys):
    empty = pg_cluster.fresh_url()
    assert main(["inspect", empty]) == 1
    assert "holds no asides store" in capsys.readouterr().err
    import psycopg

    with psycopg.connect(empty, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_class WHERE relnamespace = current_schema()::regnamespace").fetchone()[0] == 0


def test_a_sqlite_store_moves_to_postgres_by_dump_and_restore_and_back(pg_url, tmp_path, capsys):
    source = str(tmp_path / "source.db")

    async def seed_file() -> None:
        async with open_runtime(source) as rt:
            ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
            first = await ann.add_message("user", [text("for ann only", ["ann"]), text("for everyone")])
            await ann.edit_message(first.id, [text("for ann only", ["ann"]), text("for everyone, edited")])

    trio.run(seed_file)
    assert main(["dump", source]) == 0
    dump = tmp_path / "store.dump"
    dump.write_text(capsys.readouterr().out)
    assert main(["restore", pg_url, str(dump)]) == 0
    capsys.readouterr()
    assert main(["dump", pg_url]) == 0
    assert capsys.readouterr().out == dump.read_text()  # the same records, ids and all
    assert main(["restore", pg_url, str(dump)]) == 1  # a store that holds records is refused
    assert "holds" in capsys.readouterr().err
    back = str(tmp_path / "back.db")
    assert main(["restore", back, str(dump)]) == 0
