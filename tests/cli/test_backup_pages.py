"""``asides dump`` and ``asides restore`` a page at a time, on both backends: what each holds
follows its page, not the store's length; a dump ends with a line counting its records, so a dump
cut short, or two put together, is refused and writes nothing; a dump of format 1 (no end line)
still restores."""

from __future__ import annotations

import json
import os
import sys
import tracemalloc

import pytest
import trio
from helpers import writable_store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli import run

from asides._cli._main import main
from asides.actors import open_runtime
from asides.lowlevel import open_store
from asides.store import text


async def _build(path: str, count: int) -> None:
    async with open_runtime(path) as rt:
        store = writable_store(rt)
        for first in range(0, count, 1000):
            await store.append_messages("main", [("user", (text(f"line {i} " + "x" * 200),), None) for i in range(first, first + 1000)])


def _target(store_path: str, request: pytest.FixtureRequest, name: str) -> str:
    """A new, empty store of the backend of ``store_path``."""
    if store_path.startswith("postgresql://"):
        return str(request.getfixturevalue("pg_cluster").fresh_url())
    return os.path.join(os.path.dirname(store_path), name)


def _peak(argv: list[str], out: str | None = None) -> int:
    """The most memory Python held while ``asides`` ran ``argv`` (its stdout to the file ``out``)."""
    with open(out or os.devnull, "w", encoding="utf-8") as sink:
        real, sys.stdout = sys.stdout, sink
        tracemalloc.start()
        try:
            assert main(argv) == 0
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            sys.stdout = real


async def _records(path: str) -> list[tuple]:
    async with open_store(path, read_only=not path.startswith("postgresql://")) as store:
        return await store.records()


def test_a_dump_and_its_restore_hold_no_more_for_a_longer_store(store_path, request, tmp_path):
    dump_peaks, restore_peaks = [], []
    for count in (2000, 8000):
        source = store_path if count == 2000 else _target(store_path, request, "longer.db")
        trio.run(_build, source, count)
        out = str(tmp_path / f"dump-{count}.jsonl")
        dump_peaks.append(_peak(["dump", source], out))
        with open(out, encoding="utf-8") as written:
            lines = [json.loads(line) for line in written]
        assert lines[0] == {"asides": "dump", "format": 2} and lines[-1] == {"asides": "end", "records": len(lines) - 2}
        numbers = [line["content"][0]["text"].split(" ")[1] for line in lines if line.get("kind") == "message"]
        assert numbers == [str(i) for i in range(count)]
        copy = _target(store_path, request, f"copy-{count}.db")
        restore_peaks.append(_peak(["restore", copy, out]))
        assert trio.run(_records, copy) == trio.run(_records, source)
    # Holding every record would take four times as much at four times the records.
    assert dump_peaks[1] < 1.5 * dump_peaks[0], dump_peaks
    assert restore_peaks[1] < 1.5 * restore_peaks[0], restore_peaks


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda lines: lines[:-1], "line 31: "),  # cut short at a line's end: no end line
        (lambda lines: lines[:-5], "it was cut short"),
        (lambda lines: [*lines, lines[1]], "a line after the dump's end line (line 32)"),
        (lambda lines: [*lines[:-1], '{"asides":"end","records":29}'], "the end line must be"),
        (lambda lines: lines[:3] + lines[4:], "the end line must be"),  # a record left out
    ],
)
def test_a_dump_cut_short_or_put_together_is_refused_and_writes_nothing(store_path, request, tmp_path, capsys, change, problem):
    trio.run(_build_messages, store_path, 30)
    code, dumped, _err = run(capsys, "dump", store_path)
    lines = dumped.split("\n")[:-1]
    assert code == 0 and len(lines) == 32  # the header, 30 messages and the end line
    source = tmp_path / "changed.jsonl"
    source.write_text("\n".join(change(lines)) + "\n", encoding="utf-8")
    copy = _target(store_path, request, "copy.db")
    code, _out, err = run(capsys, "restore", copy, str(source))
    assert code == 1 and "restore refused, nothing was written" in err
    assert ("cut short" if problem == "line 31: " else problem) in err
    if copy.startswith("postgresql://"):
        assert trio.run(_records, copy) == []
    else:
        assert not os.path.exists(copy)


def test_a_dump_of_format_1_restores(store_path, request, tmp_path, capsys):
    trio.run(_build_messages, store_path, 5)
    code, dumped, _err = run(capsys, "dump", store_path)
    lines = dumped.split("\n")[:-1]
    older = [json.dumps({"asides": "dump", "format": 1}, separators=(",", ":")), *lines[1:-1]]  # no end line
    source = tmp_path / "older.jsonl"
    source.write_text("\n".join(older) + "\n", encoding="utf-8")
    copy = _target(store_path, request, "copy.db")
    code, out, err = run(capsys, "restore", copy, str(source))
    assert code == 0 and out.startswith(f"restored {len(lines) - 2} record(s)"), err
    assert trio.run(_records, copy) == trio.run(_records, store_path)


async def _build_messages(path: str, count: int) -> None:
    async with open_runtime(path) as rt:
        await writable_store(rt).append_messages("main", [("user", (text(f"m{i}"),), None) for i in range(count)])


@pytest.fixture(scope="module")
def small_dump(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The lines of a dump of a small store (12 messages), made once for the module."""
    folder = tmp_path_factory.mktemp("small")
    path, out = str(folder / "small.db"), str(folder / "small.jsonl")
    trio.run(_build_messages, path, 12)
    _peak(["dump", path], out)
    with open(out, encoding="utf-8") as written:
        return written.read().split("\n")[:-1]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_dump_but_a_whole_one_is_refused_and_writes_nothing(small_dump, tmp_path_factory, capsys, data):
    """Property: cut a dump at any line, leave out or repeat any record line, or append a line
    after its end: ``restore`` refuses it and makes no store. The whole dump restores exactly."""
    lines = small_dump
    records = range(1, len(lines) - 1)  # the record lines, between header and end line
    change = data.draw(st.sampled_from(["whole", "cut", "leave out", "repeat", "after the end"]))
    if change == "cut":
        changed = lines[: data.draw(st.integers(1, len(lines) - 1))]
    elif change == "leave out":
        gone = data.draw(st.sampled_from(records))
        changed = lines[:gone] + lines[gone + 1 :]
    elif change == "repeat":
        again = data.draw(st.sampled_from(records))
        at = data.draw(st.integers(1, len(lines) - 1))
        changed = [*lines[:at], lines[again], *lines[at:]]
    elif change == "after the end":
        changed = [*lines, data.draw(st.sampled_from(lines))]
    else:
        changed = lines
    folder = tmp_path_factory.mktemp("restore")
    source, copy = folder / "dump.jsonl", str(folder / "copy.db")
    source.write_text("\n".join(changed) + "\n", encoding="utf-8")
    code, _out, err = run(capsys, "restore", copy, str(source))
    if change == "whole":
        assert code == 0, err
        assert run(capsys, "dump", copy)[1] == "\n".join(lines) + "\n"
    else:
        assert code == 1 and "restore refused, nothing was written" in err, (change, err)
        assert not os.path.exists(copy)


def _message_file(path: str, count: int, *, bad_at: int | None = None) -> str:
    """A messages file of ``count`` lines (line ``bad_at`` with an audience on a tool call,
    which a write refuses)."""
    with open(path, "w", encoding="utf-8") as out:
        for number in range(1, count + 1):
            block = {"type": "text", "text": f"line {number} " + "x" * 200}
            if number == bad_at:
                block = {"type": "tool_use", "id": "t1", "name": "x", "input": {}, "audience": ["ann"]}
            out.write(json.dumps({"participant": "user", "content": [block], "metadata": {}, "timestamp": number}) + "\n")
    return path


def test_an_import_holds_no_more_for_a_longer_file_and_a_bad_last_line_writes_nothing(store_path, request, tmp_path, capsys):
    peaks = []
    for count in (2000, 8000):
        target = _target(store_path, request, f"import-{count}.db")
        peaks.append(_peak(["import", target, _message_file(str(tmp_path / f"m{count}.jsonl"), count)]))
        code, exported, _err = run(capsys, "export", target)
        assert code == 0 and [json.loads(line)["content"][0]["text"].split(" ")[1] for line in exported.split("\n")[:-1]] == [
            str(n) for n in range(1, count + 1)
        ]
    assert peaks[1] < 1.5 * peaks[0], peaks
    target = _target(store_path, request, "refused.db")
    code, out, err = run(capsys, "import", target, _message_file(str(tmp_path / "bad.jsonl"), 2500, bad_at=2500))
    assert code == 1 and out == "" and "import refused, nothing was written" in err and "line 2500: content[0].audience" in err
    if target.startswith("postgresql://"):
        assert [r for r in trio.run(_records, target) if r[3] == "message"] == []
    else:
        assert not os.path.exists(target)
