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


def test_the_readme_route_to_a_local_server(pg_cluster, capsys):
    """The README's local route: ``URL=$(sh .ci/postgres start)`` gives a throwaway server's URL
    alone on stdout and says on stderr how to stop it; the demo writes its store there, a second
    demo on the same store is refused, and the stop command given removes the server. (It used to
    print the folder and the URL and say nothing more.)"""
    import os
    import shlex
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {k: v for k, v in os.environ.items() if k != "ASIDES_TEST_POSTGRES_URL"}
    started = subprocess.run(["sh", ".ci/postgres", "start"], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    url = started.stdout.strip()
    assert url.startswith("postgresql://") and "\n" not in url, started.stdout
    stop = started.stderr.split("Stop it, removing its data, with: ", 1)[1].strip()
    folder = shlex.split(stop)[-1]
    try:
        assert os.path.isdir(folder)
        demo = subprocess.run([sys.executable, "-m", "asides", "demo", "--store", url], capture_output=True, text=True, timeout=300)
        assert demo.returncode == 0, demo.stderr
        assert main(["inspect", url, "--json"]) == 0
        assert len(json.loads(capsys.readouterr().out)["branches"][0]["namespaces"]) == 3
        assert main(["demo", "--store", url]) == 1
        assert "already holds records; the demo writes a fresh store" in capsys.readouterr().err
    finally:
        stopped = subprocess.run(shlex.split(stop), cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert stopped.returncode == 0, stopped.stderr
    assert not os.path.exists(folder)
