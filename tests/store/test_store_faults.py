"""Faults of the store: refused batches, damaged or foreign files, a commit that fails.

1. A refused batch leaves memory exactly as the disk has it: the store's in-memory dump
   (``tests.helpers.dump``) before the refusal, after it, and after a reopen are equal.
   Regression: the first item of a batch whose later item was refused stayed visible in memory
   and was gone after a reopen.
2. A damaged or foreign file is refused with ``StoreCorruptError`` naming the path, never a raw
   ``sqlite3`` error, and is left as it was; the command line says so in one line.
3. After a failed commit every call raises ``StoreFailedError``. Regression: ``tick``,
   ``append_context_entry`` and ``drain`` raised a bare ``BrokenResourceError``, and a ``drain()``
   waiting when the store stopped returned silently.

The commit failure is injected by replacing the store's driver ``execute`` (an internal) so that
an ``INSERT`` raises ``sqlite3.OperationalError``: nothing public makes a disk fail.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asides import (
    ArgumentTypeError,
    AsidesError,
    AutobiographicalStrategy,
    ExtractiveModel,
    InvalidArgumentError,
    MalformedContentError,
    NarrowingRefusedError,
    PassthroughStrategy,
    StoreCorruptError,
    StoreFailedError,
    open_runtime,
    text,
)
from asides._cli._main import main
from asides.lowlevel import open_store
from asides.testing import GatedModel
from tests.helpers import dump, sibling_store, writable_store

# -- helpers ------------------------------------------------------------------------------------


def leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from leaves(inner)
    else:
        yield exc


def assert_store_failed(exc: BaseException) -> None:
    """Leaving the block of a failed store raises StoreFailedError (alone or in a group)."""
    found = list(leaves(exc))
    assert found and all(isinstance(e, StoreFailedError) for e in found), found


#: Why the tests that fail a commit through :func:`fail_inserts` run on SQLite alone.
FAKES_A_FAILED_SQLITE_COMMIT = (
    "fails a commit by faking the SQLite driver (internals), which stops a SQLite store; on PostgreSQL a lost "
    "connection fails only the calls it affects and reconnects (test_postgres_store.py)"
)


def fail_inserts(store: Any) -> None:
    """Make every later commit of ``store`` fail as a full or broken disk would (internal)."""
    original = store._journal._driver.execute

    async def execute(sql: str, params: Sequence[Any] = ()) -> Any:
        if sql.lstrip().upper().startswith("INSERT"):
            raise sqlite3.OperationalError("disk I/O error (injected)")
        return await original(sql, params)

    store._journal._driver.execute = execute


def filler(i: int) -> Any:
    return text(f"Message {i}. " + "ordinary words for everyone " * 10)


def small_memory() -> AutobiographicalStrategy:
    return AutobiographicalStrategy(target_chunk_tokens=60, head_window_tokens=0, recent_window_tokens=60)


# ==============================================================================================
# 1. A refused batch leaves memory as the disk has it
# ==============================================================================================


class BadSecondShard(PassthroughStrategy):
    """A strategy that stores each message as two shards, the second one not storable: ``bad``
    says how (content that is not blocks, or a participant that is not a name)."""

    def __init__(self, bad: str) -> None:
        super().__init__()
        self.bad = bad

    def shard_message(self, participant: str, content: Sequence[Any], metadata: Mapping[str, Any] | None) -> list[Any]:
        second: tuple[Any, ...] = ({"type": "text", "text": "a wire-form dict, not a block"},)
        who = participant
        if self.bad == "participant":
            second, who = tuple(content), "bad\x00name"
        return [(participant, tuple(content), metadata), (who, second, metadata)]


async def _assert_refused_keeps_memory_as_disk(path: str, refused: Callable[[Any], Any], error: type[BaseException]) -> None:
    """Open a runtime with a message, run ``refused(runtime)`` (which must raise ``error``), and
    check memory before, after, and after a reopen (and after one more write) agree."""
    async with open_runtime(path) as rt:
        manager = await rt.open_manager("ns", strategy=PassthroughStrategy())
        first = await manager.add_message("user", [text("kept")])
        await manager.append_context_entry([text("an entry")], source_message_id=first.id)
        before = dump(rt.store)
        with pytest.raises(error):
            await refused(rt)
        assert dump(rt.store) == before
        later = await manager.add_message("user", [text("later")])
        after = dump(rt.store)
    async with open_runtime(path) as rt:
        assert dump(rt.store) == after
        assert [m.id for m in rt.store.messages("main")] == [first.id, later.id]


async def _edit_hiding_from_everyone(rt: Any) -> None:
    """An edit, by a manager with no reader, of the message the context log copied, that would
    hide it from everyone but bob: refused with the copy's rewrite."""
    manager = await rt.open_manager("editor", strategy=PassthroughStrategy())
    try:
        await manager.edit_message(rt.store.messages("main")[0].id, [text("kept", audience=["bob"])])
    finally:
        await manager.aclose()


REFUSALS: dict[str, tuple[Callable[[Any], Any], type[BaseException]]] = {
    "store batch, second content not blocks": (
        lambda rt: writable_store(rt).append_messages(
            "main", [("u", (text("first"),), None), ("u", ({"type": "text", "text": "x"},), None)]
        ),
        ArgumentTypeError,
    ),
    "store batch, second content a string": (
        lambda rt: writable_store(rt).append_messages("main", [("u", (text("first"),), None), ("u", "just text", None)]),
        ArgumentTypeError,
    ),
    "store batch, third timestamp not finite": (
        lambda rt: writable_store(rt).append_messages(
            "main", [("u", (text("a"),), None), ("u", (text("b"),), None), ("u", (text("c"),), None, float("inf"))]
        ),
        InvalidArgumentError,
    ),
    "store edit, second state not JSON": (
        lambda rt: writable_store(rt).edit_message(
            "main", rt.store.messages("main")[0].id, (text("edited"),), states={"ns/ok": 1, "ns/bad": float("nan")}
        ),
        MalformedContentError,
    ),
    "store edit, content not blocks": (
        lambda rt: writable_store(rt).edit_message(
            "main", rt.store.messages("main")[0].id, ({"type": "text", "text": "x"},), states={"ns/ok": 1}
        ),
        ArgumentTypeError,
    ),
    "manager edit over a context-log copy, refused": (
        lambda rt: _edit_hiding_from_everyone(rt),
        NarrowingRefusedError,
    ),
    "store states, second not JSON": (
        lambda rt: writable_store(rt).set_states("main", {"ns/a": 1, "ns/b": {1, 2}}),
        MalformedContentError,
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
async def test_refused_store_write_leaves_memory_as_the_disk(store_path, case):
    refused, error = REFUSALS[case]
    await _assert_refused_keeps_memory_as_disk(store_path, refused, error)


@pytest.mark.parametrize("bad", ["content", "participant"])
async def test_refused_shard_leaves_memory_as_the_disk(store_path, bad):
    """``add_message`` through a strategy that shards: a refused later shard leaves no shard
    in memory (nor on disk), and the manager's strategy heard of none."""

    async def refused(rt: Any) -> None:
        sharding = await rt.open_manager("shards", strategy=BadSecondShard(bad))
        try:
            await sharding.add_message("user", [text("a long message")])
        finally:
            assert [m.content for m in sharding.view_messages()].count((text("a long message"),)) == 0
            await sharding.aclose()

    await _assert_refused_keeps_memory_as_disk(store_path, refused, AsidesError)


_GOOD_ITEM = st.builds(lambda n: ("user", (text(f"item {n}"),), {"n": n}), st.integers(0, 99))
_BAD_ITEM = st.sampled_from(
    [
        ("user", ({"type": "text", "text": "wire form"},), None),
        ("user", ("a bare string",), None),
        ("user", "not a sequence of blocks", None),
        ("bad\x00name", (text("x"),), None),
        ("user", (text("x"),), {"k": float("nan")}),
        ("user", (text("x"),), None, float("nan")),
        ("user", (text("x"),)),
    ]
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(good=st.lists(_GOOD_ITEM, max_size=4), bad=_BAD_ITEM, where=st.integers(0, 4), data=st.data())
def test_property_a_batch_with_one_bad_item_changes_nothing(store_path, good, bad, where, data):
    """Property: a batch of good items with one bad item anywhere is refused with an
    ``AsidesError`` and leaves memory and disk as they were (equal dumps before, after and after
    a reopen)."""
    items = list(good)
    items.insert(min(where, len(items)), bad)
    path = sibling_store(store_path, f"p{next(_COUNTER)}")

    async def run() -> None:
        async with open_store(path) as store:
            await store.append_messages("main", [("user", (text("before"),), None)])
            before = dump(store)
            with pytest.raises(AsidesError):
                await store.append_messages("main", items)
            assert dump(store) == before
        async with open_store(path) as store:
            assert dump(store) == before

    trio.run(run)


_COUNTER = itertools.count()


# ==============================================================================================
# 2. Damaged or foreign files
# ==============================================================================================


def _random_bytes(path: Path) -> None:
    path.write_bytes(os.urandom(16384))


def _truncated(path: Path) -> None:
    async def build() -> None:
        async with open_store(str(path)) as store:
            await store.append_messages("main", [("u", (filler(i),), None) for i in range(300)])

    trio.run(build)
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        handle.truncate(size // 2 + 100)


def _sqlite(path: Path, *statements: str) -> None:
    connection = sqlite3.connect(path)
    for statement in statements:
        connection.execute(statement)
    connection.commit()
    connection.close()


FILES: dict[str, Callable[[Path], None]] = {
    "random bytes": _random_bytes,
    "truncated store": _truncated,
    "a foreign database": lambda p: _sqlite(p, "CREATE TABLE users (id INTEGER, name TEXT)", "INSERT INTO users VALUES (1, 'ann')"),
    "a log table of another shape": lambda p: _sqlite(p, "CREATE TABLE log (id INTEGER PRIMARY KEY, line TEXT)", "PRAGMA user_version=1"),
    "a record of the wrong types": lambda p: _sqlite(
        p,
        "CREATE TABLE log (id INTEGER PRIMARY KEY, branch TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, "
        "ref TEXT, body TEXT NOT NULL)",
        "PRAGMA user_version=1",
        "INSERT INTO log VALUES (1, 'main', 'one', 'message', NULL, '{}')",
    ),
    "a newer format": lambda p: _sqlite(p, "PRAGMA user_version=2"),
}


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture(params=list(FILES))
def damaged(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str, dict[str, bytes]]:
    """(kind, path, the folder's files as they were)"""
    folder = tmp_path / "store"
    folder.mkdir()
    path = folder / "asides.db"
    FILES[request.param](path)
    return request.param, str(path), _files(folder)


def _check_refusal(exc: BaseException, path: str) -> None:
    assert isinstance(exc, StoreCorruptError), repr(exc)
    assert isinstance(exc, StoreFailedError)
    assert not isinstance(exc, sqlite3.Error)
    assert exc.path == path and repr(path) in str(exc)
    assert "\n" not in str(exc)


@pytest.mark.parametrize("read_only", [False, True], ids=["read-write", "read-only"])
async def test_damaged_or_foreign_file_raises_store_corrupt(damaged, read_only):
    """``open_runtime`` and ``open_store`` refuse the file with ``StoreCorruptError`` naming its
    path, and leave the folder exactly as it was (no ``-wal`` file, no table added)."""
    _kind, path, before = damaged
    for opener in (lambda: open_runtime(path, read_only=read_only), lambda: open_store(path, read_only=read_only)):
        with pytest.raises(AsidesError) as raised:
            async with opener():
                pass  # pragma: no cover - the open is refused
        _check_refusal(raised.value, path)
    assert _files(Path(path).parent) == before


def test_damaged_or_foreign_file_raises_store_corrupt_under_asyncio(damaged):
    _kind, path, before = damaged

    async def run() -> BaseException:
        try:
            async with open_runtime(path):
                pass  # pragma: no cover - the open is refused
        except BaseException as exc:  # noqa: BLE001 - checked by the caller
            return exc
        raise AssertionError("the open was not refused")  # pragma: no cover

    _check_refusal(asyncio.run(run()), path)
    assert _files(Path(path).parent) == before


@pytest.mark.parametrize("command", ["inspect", "export", "import"])
def test_command_line_says_one_line_for_a_damaged_file(damaged, command, capsys, tmp_path):
    """Each command exits 1 with one line naming the file, never a traceback."""
    _kind, path, before = damaged
    source = tmp_path / "in.jsonl"
    source.write_text('{"participant":"u","content":[{"type":"text","text":"x"}]}\n', encoding="utf-8")
    argv = {"inspect": ["inspect", path], "export": ["export", path], "import": ["import", path, str(source), "--append"]}[command]
    code = main(argv)
    _out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 1, err
    assert len(lines) == 1 and lines[0].startswith("asides: "), err
    assert "asides.db" in lines[0] and "Traceback" not in err
    assert _files(Path(path).parent) == before


async def test_a_store_file_in_a_folder_that_is_a_file_is_a_one_line_error(tmp_path):
    """A path the store cannot even create (its folder is a file) is a ``StoreFailedError``
    naming it, not a raw ``OSError``."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    path = str(blocker / "asides.db")
    with pytest.raises(StoreFailedError, match="could not be opened"):
        async with open_runtime(path):
            pass  # pragma: no cover - the open is refused


# ==============================================================================================
# 3. After a failed commit
# ==============================================================================================


def _every_call(rt: Any, manager: Any, message_id: str) -> dict[str, Callable[[], Any]]:
    """Every public call of a manager and the runtime's openers, with arguments that would work
    on a healthy store."""
    return {
        "add_message": lambda: manager.add_message("user", [text("lost")]),
        "edit_message": lambda: manager.edit_message(message_id, [text("lost")]),
        "compile": lambda: manager.compile(),
        "preview_context": lambda: manager.preview_context(),
        "tick": lambda: manager.tick(),
        "drain": lambda: manager.drain(),
        "append_context_entry": lambda: manager.append_context_entry([text("lost")]),
        "get_context_entries": lambda: manager.get_context_entries(),
        "view_messages": lambda: manager.view_messages(),
        "view_message": lambda: manager.view_message(message_id),
        "get_message": lambda: manager.get_message(message_id),
        "get_all_messages": lambda: manager.get_all_messages(),
        "is_ready": lambda: manager.is_ready(),
        "pending_work": lambda: manager.pending_work(),
        "search_summaries": lambda: manager.search_summaries("x"),
        "get_summaries_in_range": lambda: manager.get_summaries_in_range(),
        "get_summary": lambda: manager.get_summary("s1"),
        "reset_head_window": lambda: manager.reset_head_window("a new topic"),
        "fork": lambda: manager.fork("lost-fork"),
        "switch_branch": lambda: manager.switch_branch("main"),
        "set_strategy": lambda: manager.set_strategy(PassthroughStrategy()),
        "derive": lambda: manager.derive(branch="lost-derived", strategy=PassthroughStrategy()),
        "Runtime.open_manager": lambda: rt.open_manager("another", strategy=PassthroughStrategy()),
        "Runtime.list_branches": lambda: rt.list_branches(),
        "Runtime.reopen_derived": lambda: rt.reopen_derived("main", strategy=PassthroughStrategy()),
    }


async def _calls_after_a_failed_commit(path: str) -> dict[str, str]:
    """Fail a commit inside a runtime's block, then make every call; what each raised."""
    kept: dict[str, Any] = {}
    try:
        async with open_runtime(path, model=ExtractiveModel()) as rt:
            manager = await rt.open_manager("ann", strategy=small_memory(), view_reader="ann")
            first = await manager.add_message("user", [text("kept")])
            kept.update(rt=rt, manager=manager, first=first)
            fail_inserts(writable_store(rt))
            with pytest.raises(StoreFailedError):
                await manager.add_message("user", [text("the write whose commit fails")])
            # Calls made at once (no checkpoint since the failure) refuse too.
            for name, call in _every_call(rt, manager, first.id).items():
                with pytest.raises(StoreFailedError):
                    result = call()
                    if hasattr(result, "__await__"):
                        await result
                kept.setdefault("inside", []).append(name)
            await anyio.sleep_forever()  # the failure ends the block
    except BaseException as exc:  # noqa: BLE001 - checked below
        assert_store_failed(exc)
    outcomes: dict[str, str] = {}
    for name, call in _every_call(kept["rt"], kept["manager"], kept["first"].id).items():
        try:
            result = call()
            if hasattr(result, "__await__"):
                await result
            outcomes[name] = "returned"
        except StoreFailedError:
            outcomes[name] = "StoreFailedError"
        except BaseException as exc:  # noqa: BLE001 - reported
            outcomes[name] = repr(exc)
    await kept["manager"].aclose()  # closing is always allowed
    assert len(kept["inside"]) == len(outcomes)
    return outcomes


@pytest.mark.sqlite_only(FAKES_A_FAILED_SQLITE_COMMIT)
async def test_every_call_after_a_failed_commit_raises_store_failed(store_path):
    """Every public call of a manager, and the runtime's openers, raise ``StoreFailedError``
    after a failed commit: at once inside the block, and after the block ended."""
    outcomes = await _calls_after_a_failed_commit(store_path)
    assert outcomes == dict.fromkeys(outcomes, "StoreFailedError")


def test_every_call_after_a_failed_commit_raises_store_failed_under_asyncio(tmp_path):
    outcomes = asyncio.run(_calls_after_a_failed_commit(str(tmp_path / "asides.db")))
    assert outcomes == dict.fromkeys(outcomes, "StoreFailedError")


@pytest.mark.sqlite_only(FAKES_A_FAILED_SQLITE_COMMIT)
async def test_drain_waiting_when_the_store_fails_raises_store_failed(store_path):
    """A ``drain()`` waiting on the background drain (called from a task outside the runtime's
    block) when the drain's own write fails raises ``StoreFailedError``: it neither returns as
    if the work were done nor waits forever. The drain stops."""
    model = GatedModel()
    outcome: dict[str, BaseException | str] = {}
    waiting = trio.Event()
    finished = trio.Event()

    async def drain_outside(manager: Any) -> None:
        try:
            waiting.set()
            await manager.drain()
            outcome["drain"] = "returned"
        except BaseException as exc:  # noqa: BLE001 - checked below
            outcome["drain"] = exc
        finally:
            finished.set()

    async with trio.open_nursery() as outside:
        with pytest.raises(BaseException) as raised:  # noqa: B017 - checked below
            async with open_runtime(store_path, model=model) as rt:
                manager = await rt.open_manager("ann", strategy=small_memory(), view_reader="ann")
                for i in range(12):
                    await manager.add_message("user", [filler(i)])
                await model.wait_for_request()  # the drain asked the model; its answer is held
                outside.start_soon(drain_outside, manager)
                await waiting.wait()
                await trio.testing.wait_all_tasks_blocked()
                fail_inserts(writable_store(rt))
                model.release_all()  # the answer arrives; writing it fails; the store stops
                await trio.sleep_forever()
        assert_store_failed(raised.value)
        with trio.fail_after(30):
            await finished.wait()
    assert isinstance(outcome.get("drain"), StoreFailedError), outcome
