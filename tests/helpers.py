"""Test helpers internal to this suite (not fixtures): raw records and store dumps.

What a user's tests need too (test models, the leak check, a runtime on a temporary store) lives
in ``asides.testing``; only what reaches below the public API stays here.

* :func:`seed_records` writes raw records into a store (a file, or a PostgreSQL schema) *before*
  a runtime opens it: the way tests stand in for old or foreign data (a corrupt reader record, an
  audience where a write refuses one) that no public write can produce. :func:`raw_rows` reads
  a closed store's rows back as they are stored.
* :func:`sibling_store` names one more fresh store of the same backend as a test's ``store_path``.
* :func:`dump` captures everything a runtime's store holds, for "a refusal writes nothing"
  comparisons (take one before, one after, assert equal).
* :func:`reaped_child` and :func:`read_child_line` run a crash test's child process (a writer
  the test kills) and read its lines.
* :func:`eventually` waits for a condition that background tasks and the store's threads bring
  about, bounded by real time, never by scheduler turns or clock jumps.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from asides.store._postgres import is_postgres_url

_SCHEMA = """CREATE TABLE IF NOT EXISTS log (
    id INTEGER PRIMARY KEY, branch TEXT NOT NULL, seq INTEGER NOT NULL,
    kind TEXT NOT NULL, ref TEXT, body TEXT NOT NULL)"""


def seed_records(path: str, records: list[tuple[str, str, str | None, Any]]) -> list[str]:
    """Append records ``(branch, kind, ref, body)`` to the store at ``path`` (a file path or a
    ``postgresql://`` URL; a store is created there if there is none).

    ``kind`` is ``"message"`` (body: ``{"participant", "content", "metadata", "timestamp"}``),
    ``"state"`` (ref: the full key, body: any JSON value, or a ``str`` used verbatim as raw body
    text when wrapped in :class:`Raw`), or ``"edit"`` (ref: message id). Each record takes its
    branch's next sequence. Returns the record ids (message ids for messages). The store must
    not be open.
    """
    rows = [(branch, kind, ref, body.text if isinstance(body, Raw) else json.dumps(body)) for branch, kind, ref, body in records]
    if is_postgres_url(path):
        return _seed_postgres(path, rows)
    connection = sqlite3.connect(path)
    try:
        connection.execute(_SCHEMA)
        connection.execute("PRAGMA user_version=1")
        ids = []
        for branch, kind, ref, text in rows:
            next_id = connection.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM log").fetchone()[0]
            # a branch record's seq is its fork point, so the newest seq on the branch is its head
            head = connection.execute("SELECT COALESCE(MAX(seq), 0) FROM log WHERE branch=?", (branch,)).fetchone()[0]
            connection.execute(
                "INSERT INTO log (id, branch, seq, kind, ref, body) VALUES (?,?,?,?,?,?)",
                (next_id, branch, head + 1, kind, ref, text),
            )
            ids.append(str(next_id))
        connection.commit()
        return ids
    finally:
        connection.close()


def _seed_postgres(url: str, rows: list[tuple[str, str, str | None, str]]) -> list[str]:
    """:func:`seed_records` on PostgreSQL: rows into ``asides_log``, numbered after the newest,
    in one transaction holding the store's write lock (store/_pg_driver.py)."""
    import psycopg

    from asides.store._pg_schema import prepare_schema

    with psycopg.connect(url, autocommit=True) as connection:
        prepare_schema(connection, url, create=True)
        ids = []
        with connection.transaction():
            connection.execute("LOCK TABLE asides_log IN SHARE ROW EXCLUSIVE MODE")
            last = connection.execute("SELECT COALESCE(MAX(id), 0) FROM asides_log").fetchone()[0]
            for branch, kind, ref, text in rows:
                last += 1
                head = connection.execute("SELECT COALESCE(MAX(seq), 0) FROM asides_log WHERE branch=%s", (branch,)).fetchone()[0]
                connection.execute(
                    "INSERT INTO asides_log (id, branch, seq, kind, ref, body) VALUES (%s,%s,%s,%s,%s,%s)",
                    (last, branch, head + 1, kind, ref, text),
                )
                ids.append(str(last))
        return ids


def raw_rows(path: str) -> list[tuple[int, str, int, str, str | None, str]]:
    """Every stored record ``(id, branch, seq, kind, ref, body)`` of the closed store at ``path``
    (a file path or a ``postgresql://`` URL), in id order, as stored."""
    query = "SELECT id, branch, seq, kind, ref, body FROM {} ORDER BY id"
    if is_postgres_url(path):
        import psycopg

        with psycopg.connect(path, autocommit=True) as connection:
            return [tuple(row) for row in connection.execute(query.format("asides_log")).fetchall()]  # type: ignore[misc]
    connection = sqlite3.connect(path)
    try:
        return connection.execute(query.format("log")).fetchall()
    finally:
        connection.close()


def sibling_store(path: str, name: str) -> str:
    """One more fresh store of the same backend as ``path``: the file ``<path>.<name>``, or on
    PostgreSQL a new schema on the same server (the URL with another ``search_path``)."""
    if not is_postgres_url(path):
        return f"{path}.{name}"
    import psycopg

    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(path, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
    parts = urllib.parse.urlsplit(path)
    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True) if k != "options"]
    query.append(("options", f"-csearch_path={schema}"))
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query, safe="/")))


class Raw:
    """A record body given verbatim (for example text that is not JSON)."""

    def __init__(self, text: str) -> None:
        self.text = text


def message_body(participant: str, content: list[dict[str, Any]], metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """A message record body in the stored wire form."""
    return {"participant": participant, "content": content, "metadata": metadata or {}, "timestamp": 0.0}


def dump(store: Any) -> dict[str, Any]:
    """Everything the store holds: branches (name, parent, fork point, head), each branch's
    messages as stored, and each branch's state records."""
    out: dict[str, Any] = {}
    for info in store.branches():
        out[info.name] = {
            "info": (info.parent, info.fork_sequence, info.head),
            "messages": [(m.id, m.sequence, m.participant, m.content, dict(m.metadata)) for m in store.messages(info.name)],
            "state": store.state_items(info.name),
        }
    return out


def make_deaf(monkeypatch: Any) -> None:
    """PostgreSQL stores opened after this hear no notifications of other processes' commits: a
    store then learns of them only when it commits, syncs or reconnects."""
    from asides.store._postgres import PostgresJournal

    monkeypatch.setattr(PostgresJournal, "_hear", lambda self, newest: None)


# -- test-only reaches into the runtime's private plumbing (``actors._core``, docs/DESIGN.md) ----


def namespace_actor(runtime: Any, branch: str, namespace: str) -> Any:
    """Test-only: the namespace actor of ``namespace`` on ``branch`` (started when none runs), as
    the runtime's private core holds it. No public call hands an actor out."""
    return runtime._core.actor(branch, namespace)


def abandon(manager: Any) -> None:
    """Test-only: what a failed open does to its manager (closed at once, its drain cancelled and
    not waited for, its actor let go), for tests of an actor's life."""
    manager._abandon()


def registered_managers(runtime: Any) -> int:
    """Test-only: how many managers the runtime's private core has registered (open, or opening)."""
    return int(runtime._core.open_managers)


#: How long a child process of a crash test may run: only ever reached by a hung child.
CHILD_WATCHDOG_SECONDS = 120


@contextmanager
def reaped_child(script: str, *args: str, stderr_path: str) -> Iterator[subprocess.Popen[str]]:
    """Run ``python SCRIPT ARGS`` from the project root, its stdout a line-buffered pipe and its
    stderr in ``stderr_path``; killed after :data:`CHILD_WATCHDOG_SECONDS`, always reaped."""
    with open(stderr_path, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, script, *args],
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            bufsize=1,
        )
    watchdog = threading.Timer(CHILD_WATCHDOG_SECONDS, proc.kill)
    watchdog.start()
    try:
        yield proc
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


def read_child_line(proc: subprocess.Popen[str], stderr_path: str) -> str:
    """The child's next line of output; fails the test, with the child's stderr, if it ended."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait()
        with open(stderr_path) as err:
            pytest.fail(f"the child ended (code {proc.returncode}) before it was killed:\n{err.read()}")
    return line.rstrip("\n")


async def eventually(predicate: Callable[[], object], *, seconds: float = 60.0, what: str = "the condition") -> None:
    """Let the other tasks, and the store's threads, run until ``predicate()`` holds; an
    ``AssertionError`` naming ``what`` once ``seconds`` of real time passed without it. The wait
    ends on the condition itself, never after a number of scheduler turns or clock jumps, so a
    loaded machine gets there too. Works under Trio's ``MockClock``: between looks it hands the
    processor to other threads for a moment of real time."""
    import trio.testing

    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not hold within {seconds:g} s of real time")
        await trio.testing.wait_all_tasks_blocked()
        await trio.to_thread.run_sync(time.sleep, 0.001)


def writable_store(rt: Any) -> Any:
    """The runtime's writable store (``asides.lowlevel.Store``), reaching below the API on
    purpose: ``Runtime.store`` reads only. For tests that seed raw records or a namespace's own
    records, stand in for old data or another writer, listen to the store, or count its own work."""
    from asides.actors._runtime import internal_store

    return internal_store(rt)


def reopen_segments(ops: list[tuple[str, Any]]) -> list[list[tuple[str, Any]]]:
    """``ops`` cut at each ``("reopen", ...)``: the operations of each open of the store, in order."""
    segments: list[list[tuple[str, Any]]] = [[]]
    for op in ops:
        if op[0] == "reopen":
            segments.append([])
        else:
            segments[-1].append(op)
    return segments


class BranchedStates:
    """The state values a store should hold on each branch, beside the store, for the properties
    that write states on ``main`` and its forks: :meth:`apply` performs ``("set", [(key,
    value), ...])`` (on the current branch), ``("fork", None)`` (a fork of the current branch,
    which becomes current, copying its values) and ``("switch", n)`` on both."""

    def __init__(self) -> None:
        self.expected: dict[str, dict[str, Any]] = {"main": {}}
        self.branches = ["main"]
        self.current = "main"

    async def apply(self, store: Any, op: str, arg: Any) -> bool:
        """Perform ``op`` on the store and here; whether it was one of the three."""
        if op == "set":
            values = dict(arg)
            await store.set_states(self.current, values)
            self.expected[self.current].update(values)
        elif op == "fork":
            name = f"side-{len(self.branches)}"
            await store.create_branch(name, self.current)
            self.expected[name] = dict(self.expected[self.current])
            self.branches.append(name)
            self.current = name
        elif op == "switch":
            self.current = self.branches[arg % len(self.branches)]
        else:
            return False
        return True
