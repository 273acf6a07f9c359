"""``asides dump`` and ``asides restore``: every record, the same bytes back, and refusals that
write nothing."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest
import trio
from helpers import Raw, message_body, seed_records
from test_cli import one_error_line, run

from asides import (
    AutobiographicalStrategy,
    ExtractiveModel,
    PassthroughStrategy,
    WindowedPassthroughStrategy,
    open_runtime,
    text,
    tool_result,
    tool_use,
)

READERS_AND_NAMESPACES = [("agents/ann", "main"), ("agents/bob", "main"), ("host", "main"), ("host", "alt"), ("agents/ann", "derived")]


async def _build_everything(path: str) -> None:
    """Every kind of record: messages (audiences, a tool call and result, metadata, text with
    U+2028/U+2029/U+0085), an edit, reader records, floors, strategy state and memories
    (summaries), a windowed anchor, a context log, a fork and a derived branch."""
    async with open_runtime(path, model=ExtractiveModel()) as rt:
        host = await rt.open_manager("host", strategy=WindowedPassthroughStrategy())
        strategy = {"target_chunk_tokens": 60, "head_window_tokens": 40, "recent_window_tokens": 120}
        ann = await rt.open_manager("agents/ann", strategy=AutobiographicalStrategy(**strategy), view_reader="ann")
        bob = await rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob")
        first = None
        for i in range(24):
            blocks = [text(f"Line {i}\u2028of the log,\u2029with odd breaks\u0085and more. A second sentence.")]
            if i % 4 == 1:
                blocks.append(text(f"ANN-ONLY-{i}", ["ann"]))
            if i % 4 == 2:
                blocks.append(text(f"BOB-ONLY-{i}", ["bob"]))
            message = await host.add_message(("user", "ann", "bob")[i % 3], blocks, metadata={"n": i, "note": "ünï"})
            first = first or message
        await host.add_message("ann", [text("Looking."), tool_use("t1", "search", {"q": "x"})])
        await host.add_message("user", [tool_result("t1", "found")])
        assert first is not None
        await host.edit_message(first.id, [text("Line 0, edited."), text("ANN-EDIT", ["ann"])])
        await ann.drain()
        await host.compile(max_tokens=300, reserve_for_response=0)
        await bob.append_context_entry([text("bob's context note")], source_message_id=first.id)
        await ann.derive(branch="derived", strategy=AutobiographicalStrategy(**strategy))
        await host.fork("alt")
        await host.add_message("user", [text("Only on alt.")])


@pytest.fixture
def full_store(tmp_path) -> str:
    path = str(tmp_path / "full.db")
    trio.run(_build_everything, path)
    return path


def rows(path: str) -> list[tuple]:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return connection.execute("SELECT id, branch, seq, kind, ref, body FROM log ORDER BY id").fetchall()
    finally:
        connection.close()


def dump_of(capsys, path: str) -> str:
    code, out, err = run(capsys, "dump", path)
    assert code == 0, err
    return out


def restore(capsys, path: str, dump: str, tmp_path) -> tuple[int, str, str]:
    source = tmp_path / f"dump-{abs(hash(dump))}.jsonl"
    source.write_bytes(dump.encode("utf-8"))
    return run(capsys, "restore", path, str(source))


def test_dump_carries_every_record_in_record_order(capsys, full_store):
    out = dump_of(capsys, full_store)
    lines = out.split("\n")
    assert lines[-1] == ""  # every line ends with a newline
    header, *records, end = (json.loads(line) for line in lines[:-1])
    assert header == {"asides": "dump", "format": 2} and end == {"asides": "end", "records": len(records)}
    stored = rows(full_store)
    assert [int(r["id"]) for r in records] == [row[0] for row in stored]
    assert [list(r)[:4] for r in records] == [["kind", "id", "branch", "sequence"]] * len(records)
    kinds = {r["kind"] for r in records}
    # compiles record disclosures; an open records its strategy in a note
    assert kinds - {"disclosure", "compile"} == {"message", "edit", "state", "branch", "strategy"}
    keys = {r["key"] for r in records if r["kind"] == "state"}
    for wanted in ("agents/ann/reader", "agents/bob/reader", "agents/ann/narrowing-floor", "agents/bob/context/0"):
        assert wanted in keys
    assert any(k.startswith("agents/ann/autobiographical/summary/") for k in keys)  # memories
    assert any(k.startswith("host/windowed-passthrough/") for k in keys)
    assert {r["branch"] for r in records if r["kind"] == "branch"} == {"derived", "alt"}
    # a message line is an export --with-ids line plus kind and branch
    message = next(r for r in records if r["kind"] == "message")
    assert set(message) == {"kind", "id", "branch", "sequence", "participant", "content", "metadata", "timestamp"}
    # no record needed the raw form
    assert not any("body" in r for r in records if r["kind"] not in ("disclosure", "compile", "strategy"))  # audit records go as ref + body


def test_dump_restore_dump_is_the_same_bytes_and_the_same_records(capsys, full_store, tmp_path):
    first = dump_of(capsys, full_store)
    copy = str(tmp_path / "copy.db")
    code, out, err = restore(capsys, copy, first, tmp_path)
    assert code == 0, err
    assert f"restored {len(rows(full_store))} record(s) into a new store" in out
    assert rows(copy) == rows(full_store)  # every record, byte for byte
    assert dump_of(capsys, copy) == first


def test_a_restored_store_compiles_the_same_for_every_reader(capsys, full_store, tmp_path):
    copy = str(tmp_path / "copy.db")
    code, _out, err = restore(capsys, copy, dump_of(capsys, full_store), tmp_path)
    assert code == 0, err
    for namespace, branch in READERS_AND_NAMESPACES:
        for reader in ([], ["--reader", "ann"], ["--reader", "bob"]):
            argv = ["-n", namespace, "-b", branch, "--format", "json", *reader]
            results = [run(capsys, "compile", path, *argv) for path in (full_store, copy)]
            assert results[0] == results[1], (namespace, branch, reader)
    code, original, _err = run(capsys, "inspect", full_store, "--json")
    code, restored, _err = run(capsys, "inspect", copy, "--json")
    assert json.loads(original)["branches"] == json.loads(restored)["branches"]


async def test_a_restored_store_reopens_for_writing(capsys, full_store, tmp_path):
    copy = str(tmp_path / "copy.db")
    code, _out, err = await trio.to_thread.run_sync(lambda: restore(capsys, copy, dump_of(capsys, full_store), tmp_path))
    assert code == 0, err
    async with open_runtime(copy) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        added = await ann.add_message("user", [text("after the restore")])
        assert int(added.id) > rows(full_store)[-1][0], "ids go on after the restored ones, none reused"
        compiled = await ann.compile()
        assert "BOB-ONLY" not in json.dumps([m.participant + str(m.content) for m in compiled.messages])


def test_records_a_write_would_refuse_are_carried_as_stored(capsys, tmp_path):
    """Foreign data (not JSON, an unknown kind, a body whose JSON would not come back the same)
    is carried in the raw form and restored byte for byte."""
    path = str(tmp_path / "odd.db")
    seed_records(
        path,
        [
            ("main", "message", None, message_body("user", [{"type": "text", "text": "hi"}])),
            ("main", "state", "agents/zed/reader", 42),
            ("main", "state", "agents/zed/autobiographical/summary/L1-1", Raw("{not json")),
            ("main", "state", "spaced", Raw('{"a":1,  "b":[1.50]}')),
            ("main", "state", "escaped", Raw('"\\u00e9 \\udc80"')),
            ("main", "mystery", "x", Raw("anything")),
            ("main", "message", None, Raw('{"participant": "u", "kind": "clash", "content": []}')),
        ],
    )
    first = dump_of(capsys, path)
    records = [json.loads(line) for line in first.splitlines()[1:-1]]
    raw = [r for r in records if "body" in r]
    assert [r["id"] for r in raw] == ["3", "4", "5", "6", "7"]
    assert all(set(r) == {"kind", "id", "branch", "sequence", "ref", "body"} for r in raw)
    copy = str(tmp_path / "copy.db")
    code, _out, err = restore(capsys, copy, first, tmp_path)
    assert code == 0, err
    assert rows(copy) == rows(path)
    assert dump_of(capsys, copy) == first


def test_an_empty_store_round_trips(capsys, tmp_path):
    path = str(tmp_path / "empty-store.db")

    async def make() -> None:
        async with open_runtime(path):
            pass

    trio.run(make)
    first = dump_of(capsys, path)
    assert first == '{"asides":"dump","format":2}\n{"asides":"end","records":0}\n'
    code, _out, err = restore(capsys, str(tmp_path / "copy.db"), first, tmp_path)
    assert code == 0, err
    assert dump_of(capsys, str(tmp_path / "copy.db")) == first


def test_restore_refuses_a_store_that_holds_records(capsys, full_store, tmp_path):
    dump = dump_of(capsys, full_store)
    target = str(tmp_path / "target.db")
    code, _out, _err = restore(capsys, target, dump, tmp_path)
    assert code == 0
    before = open(target, "rb").read()  # noqa: SIM115
    code, out, err = restore(capsys, target, dump, tmp_path)
    assert code == 1 and out == ""
    assert "already holds records" in one_error_line(err)
    assert open(target, "rb").read() == before  # noqa: SIM115


def test_restore_into_an_existing_empty_file(capsys, full_store, tmp_path):
    target = tmp_path / "blank.db"
    target.write_bytes(b"")
    code, _out, err = restore(capsys, str(target), dump_of(capsys, full_store), tmp_path)
    assert code == 0, err
    assert rows(str(target)) == rows(full_store)


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_restore_of_an_empty_file_is_refused_and_creates_nothing(capsys, tmp_path, content):
    source = tmp_path / "empty.jsonl"
    source.write_text(content, encoding="utf-8")
    target = tmp_path / "new.db"
    code, _out, err = run(capsys, "restore", str(target), str(source))
    assert code == 1
    assert "empty" in one_error_line(err)
    assert not target.exists()


def test_restore_names_every_bad_line_and_writes_nothing(capsys, full_store, tmp_path):
    lines = dump_of(capsys, full_store).split("\n")[:-1]  # (never splitlines: the text holds U+2028)
    record = json.loads(lines[3])
    lines[2] = lines[2].replace('"kind":', '"kind":"message","kind":', 1)  # a key given twice
    lines[3] = json.dumps({**record, "sequence": -1})
    lines[4] = lines[4][: len(lines[4]) // 2]  # cut short
    lines[6] = json.dumps({**json.loads(lines[6]), "id": "1"})  # ids must increase
    target = tmp_path / "new.db"
    code, _out, err = restore(capsys, str(target), "\n".join(lines) + "\n", tmp_path)
    assert code == 1
    assert "restore refused, nothing was written: 4 malformed lines" in err
    for expected in ("line 3: an object gives the key 'kind' twice", "line 4: sequence", "line 5: not JSON", "line 7: id"):
        assert expected in err
    assert not target.exists()


def test_restore_refuses_an_export_and_import_refuses_a_dump(capsys, full_store, tmp_path):
    code, exported, _err = run(capsys, "export", full_store)
    code, _out, err = restore(capsys, str(tmp_path / "a.db"), exported, tmp_path)
    assert code == 1 and "not an asides dump" in one_error_line(err) and "asides import" in err
    source = tmp_path / "dump.jsonl"
    source.write_text(dump_of(capsys, full_store), encoding="utf-8")
    code, _out, err = run(capsys, "import", str(tmp_path / "b.db"), str(source))
    assert code == 1 and "asides restore" in one_error_line(err)
    assert not os.path.exists(tmp_path / "a.db") and not os.path.exists(tmp_path / "b.db")
