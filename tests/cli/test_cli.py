"""The ``asides`` command line (``asides._cli``), through its entry point ``main([...])`` with
captured output, and once as a user runs it (a subprocess).

Covers: ``demo`` (exit code and its no-leak line, exit 3 on a leak), ``inspect`` and ``compile``
on a store the test builds, export -> import -> export identical, an import with one malformed
line writing nothing and naming the line, ``import --append``; plus ``--help`` everywhere,
one-line errors for a missing, locked or foreign store and an unknown namespace or branch, and an
unreadable record shown, never dropped. The read-only commands against a live store, backups,
strict JSON lines, exit codes and output widths have their own files (tests/cli/test_cli_*.py).

``main`` runs its own ``trio.run``, so the tests that call it are synchronous; stores are built
with ``trio.run`` in fixtures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import trio
from helpers import Raw, message_body, seed_records

from asides._cli._demo import demo_script
from asides._cli._main import main
from asides.actors import open_runtime
from asides.store import text, thinking, tool_result, tool_use
from asides.strategies import AutobiographicalStrategy, ExtractiveModel, WindowedPassthroughStrategy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NO_LEAK = "no private line reached a reader it was not for"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("asides: "), err
    return lines[0]


async def _build(path: str) -> None:
    """main: 34 messages (audiences for ann and for bob, a tool call and its result, thinking,
    metadata, non-ASCII text); namespace ``agents/ann`` claimed by ann and compressed (summaries);
    namespace ``host`` unclaimed, windowed (an anchor); branch ``alt`` forked from main with one
    message of its own."""
    async with open_runtime(path, model=ExtractiveModel()) as rt:
        host = await rt.open_manager("host", strategy=WindowedPassthroughStrategy())
        ann = await rt.open_manager(
            "agents/ann",
            strategy=AutobiographicalStrategy(target_chunk_tokens=60, head_window_tokens=40, recent_window_tokens=120),
            view_reader="ann",
        )
        for i in range(30):
            blocks = [text(f"Line {i} of the shared log, about the plan. It has a second sentence.")]
            if i % 5 == 2:
                blocks.append(text(f"SECRET-BOB-{i} only bob may read this.", ["bob"]))
            if i % 5 == 3:
                blocks.insert(0, text(f"ANN-NOTE-{i} for ann.", ["ann"]))
            await host.add_message(("user", "ann", "bob")[i % 3], blocks, metadata={"n": i})
        await host.add_message("bob", [text("BOB-ONLY whisper.", ["bob"])])  # ann sees nothing of it
        await host.add_message("ann", [text("Let me look that up."), tool_use("t1", "search", {"q": "venues", "audience": "data"})])
        await host.add_message("user", [tool_result("t1", "three venues found")])
        await host.add_message("bob", [thinking("weighing it", signature="sig"), text("Ünïcode ✓ done.")])
        await ann.drain()
        assert ann.get_summaries_in_range(), "the fixture needs a summary"
        await host.compile(max_tokens=300, reserve_for_response=0)  # re-anchors: writes the windowed anchor
        await host.fork("alt")
        await host.add_message("user", [text("Only on alt.")])


@pytest.fixture
def built(tmp_path) -> str:
    path = str(tmp_path / "built.db")
    trio.run(_build, path)
    return path


# -- help and usage ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", [[], ["demo"], ["inspect"], ["compile"], ["export"], ["import"], ["dump"], ["restore"]])
def test_help_everywhere_exits_0_and_lists_the_exit_codes(capsys, command):
    """Exit code 3 is listed where it can happen: ``asides demo --help`` and the program's own
    ``--help``, never a command that cannot exit with it. PATH may be a postgresql:// URL."""
    code, out, _err = run(capsys, *command, "--help")
    assert code == 0
    assert out.startswith("usage: asides")
    words = " ".join(out.split())
    assert "Exit codes: 0 done; 1 refused" in words
    assert ("3 the demo found a leak" in words) == (command in ([], ["demo"]))
    if command not in ([], ["demo"]):
        assert "or a postgresql:// URL" in words


def test_usage_error_exits_2(capsys):
    code, _out, err = run(capsys, "compile", "x.db")  # --namespace missing
    assert code == 2
    assert "--namespace" in err


@pytest.mark.parametrize("option", ["--max-tokens", "--reserve"])
def test_a_negative_budget_is_bad_usage_exit_2(capsys, built, option):
    code, out, err = run(capsys, "compile", built, "-n", "agents/ann", option, "-5")
    assert code == 2
    assert out == ""
    assert option in err and "negative" in err


# -- demo ---------------------------------------------------------------------------------------


def test_demo_script_is_a_room_with_private_lines():
    """120-200 scripted messages among a user and the three agents; unique markers, each note for
    one, two or three of the agents."""
    script, notes = demo_script()
    assert 120 <= len(script) <= 200
    assert {participant for participant, _ in script} == {"user", "ann", "bob", "cleo"}
    markers = [note.marker for note in notes]
    assert len(markers) == len(set(markers)) >= 10
    assert all(set(note.audience) <= {"ann", "bob", "cleo"} for note in notes)
    assert {len(note.audience) for note in notes} >= {1, 2}
    assert demo_script()[0] == script  # deterministic


def test_demo_exits_0_with_its_no_leak_line(capsys):
    code, out, err = run(capsys, "demo")
    assert code == 0, err
    assert NO_LEAK in out
    assert "LEAK" not in out
    for name in ("ann", "bob", "cleo"):
        assert f"{name}'s memory" in out  # the progress rows
    assert "temporary, removed at exit" in out


def test_demo_keeps_its_store_with_store_and_refuses_an_existing_one(capsys, tmp_path):
    path = str(tmp_path / "room.db")
    code, out, _err = run(capsys, "demo", "--store", path)
    assert code == 0 and NO_LEAK in out
    assert os.path.exists(path)
    code, out, _err = run(capsys, "inspect", path, "--json")
    assert code == 0
    (main_branch,) = json.loads(out)["branches"]
    namespaces = {ns["namespace"]: ns for ns in main_branch["namespaces"]}
    agents = [namespaces[f"agents/{n}"] for n in ("ann", "bob", "cleo")]
    assert {ns["reader"] for ns in agents} == {"ann", "bob", "cleo"}
    assert all(ns["strategy"] == "autobiographical" and ns["summaries"]["L1"] > 0 for ns in agents)

    code, _out, err = run(capsys, "demo", "--store", path)
    assert code == 1
    assert "already exists" in one_error_line(err)


def test_demo_reports_a_leak_and_exits_3(capsys, monkeypatch):
    """The closing check is real: with a reader view that hides nothing (a broken library), the
    demo names leaks and exits 3 (its own code, apart from a refusal's 1)."""
    import asides.store._views

    monkeypatch.setattr(asides.store._views, "reader_view", lambda message, reader: (message, False))
    monkeypatch.setattr(asides.store._views, "content_for_reader", lambda content, reader: content)
    code, out, _err = run(capsys, "demo")
    assert code == 3
    assert "LEAK" in out and NO_LEAK not in out


def test_demo_as_a_user_runs_it():
    """``python -m asides demo`` in a subprocess (the console script calls the same main)."""
    env = dict(os.environ, COLUMNS="120")
    result = subprocess.run([sys.executable, "-m", "asides", "demo"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert NO_LEAK in result.stdout


# -- inspect ------------------------------------------------------------------------------------


def test_inspect_json_reports_branches_namespaces_readers_floors_and_summaries(capsys, built):
    code, out, err = run(capsys, "inspect", built, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert set(report) == {"store", "branches", "pending"}
    assert report["pending"] == []  # a store file's open redoes what an interrupted erasure left
    branches = {b["name"]: b for b in report["branches"]}
    assert set(branches) == {"main", "alt"}
    main_branch, alt = branches["main"], branches["alt"]
    assert main_branch["parent"] is None and main_branch["messages"] == 34
    assert main_branch["messages_with_audience"] == 13
    assert alt["parent"] == "main" and alt["messages"] == 35
    assert isinstance(alt["fork_sequence"], int) and 0 < alt["fork_sequence"] <= main_branch["head"]
    for branch in (main_branch, alt):
        assert {
            "name",
            "parent",
            "fork_sequence",
            "head",
            "messages",
            "messages_with_audience",
            "derivation",
            "namespaces",
            "other_records",
        } <= set(branch)

    namespaces = {ns["namespace"]: ns for ns in main_branch["namespaces"]}
    assert set(namespaces) == {"agents/ann", "host"}
    ann, host = namespaces["agents/ann"], namespaces["host"]
    assert (ann["reader"], ann["reader_status"], ann["strategy"]) == ("ann", "claimed", "autobiographical")
    assert isinstance(ann["narrowing_floor"], int) and ann["narrowing_floor"] > 0
    assert ann["summaries"]["L1"] >= 1 and ann["chunks"] >= 1
    assert ann["visible_messages"] == 33  # all but the message holding only a block for bob
    assert (host["reader"], host["reader_status"], host["strategy"]) == (None, "unclaimed", "windowed-passthrough")
    assert host["narrowing_floor"] is None and isinstance(host["windowed_anchor"], int)
    assert ann["unreadable"] == [] and host["unreadable"] == []
    # the child branch sees the parent's namespaces as they were at the fork
    assert {ns["namespace"] for ns in alt["namespaces"]} == {"agents/ann", "host"}


def test_inspect_table(capsys, built):
    code, out, _err = run(capsys, "inspect", built)
    assert code == 0
    for word in ("Branches", "main", "alt", "Namespaces on main", "agents/ann", "autobiographical", "windowed-passthrough"):
        assert word in out


def test_inspect_shows_unreadable_records_never_drops_them(capsys, tmp_path):
    """SPEC E: a corrupt reader record and a summary that is not JSON are reported, not dropped."""
    path = str(tmp_path / "odd.db")
    seed_records(
        path,
        [
            ("main", "message", None, message_body("user", [{"type": "text", "text": "hi"}])),
            ("main", "state", "agents/zed/reader", 42),
            ("main", "state", "agents/zed/autobiographical/summary/L1-1", Raw("{not json")),
            ("main", "state", "stray-key", "x"),
        ],
    )
    code, out, _err = run(capsys, "inspect", path, "--json")
    assert code == 0
    (branch,) = json.loads(out)["branches"]
    (zed,) = branch["namespaces"]
    assert zed["namespace"] == "agents/zed" and zed["reader_status"] == "unreadable" and zed["reader"] is None
    assert zed["visible_messages"] is None
    assert {u["key"] for u in zed["unreadable"]} == {"agents/zed/reader", "agents/zed/autobiographical/summary/L1-1"}
    assert branch["other_records"] == [{"key": "stray-key", "value": "x"}]
    code, out, _err = run(capsys, "inspect", path)
    assert code == 0
    assert "UNREADABLE" in out and "agents/zed/autobiographical/summary/L1-1" in out and "stray-key" in out


# -- compile ------------------------------------------------------------------------------------


def test_compile_text(capsys, built):
    code, out, err = run(capsys, "compile", built, "--namespace", "agents/ann")
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith("# agents/ann on main, for reader 'ann' (autobiographical)")
    assert "(memory L" in out  # a summary, rendered
    assert "[tool_use search id=t1]" in out and "[tool_result for t1] three venues found" in out
    assert "Ünïcode ✓ done." in out
    assert "SECRET-BOB" not in out


def test_compile_json(capsys, built):
    code, out, err = run(capsys, "compile", built, "-n", "agents/ann", "--format", "json")
    assert code == 0, err
    compiled = json.loads(out)
    assert {"messages", "system_injections", "token_estimate", "provenance"} <= set(compiled)
    assert compiled["reader"] == "ann" and compiled["strategy"] == "autobiographical"
    assert set(compiled["provenance"]) == {"entries", "complete"}
    assert len(compiled["provenance"]["entries"]) == len(compiled["messages"])
    kinds = {e["kind"] for e in compiled["provenance"]["entries"]}
    assert "summary" in kinds and "raw" in kinds
    assert all({"participant", "content"} == set(m) for m in compiled["messages"])
    assert "audience" not in json.dumps(compiled["messages"]).replace('"audience": "data"', "")
    assert "ANN-NOTE" in out and "SECRET-BOB" not in out
    assert compiled["token_estimate"] > 0
    assert all(len(e["message_ids"]) == e["message_count"] for e in compiled["provenance"]["entries"])  # under 500 each


def test_compile_json_lists_the_first_ids_a_memory_covers_and_how_many(capsys, built, monkeypatch):
    """A memory of a long history costs the JSON what it shows: ``message_ids`` holds the first
    ``LISTED_IDS`` (500; 2 here) of the ids an entry stands for, ``message_count`` how many."""
    from asides._inspection import _preview

    monkeypatch.setattr(_preview, "LISTED_IDS", 2)
    listed = json.loads(run(capsys, "compile", built, "-n", "agents/ann", "--format", "json")[1])["provenance"]["entries"]
    monkeypatch.undo()
    whole = json.loads(run(capsys, "compile", built, "-n", "agents/ann", "--format", "json")[1])["provenance"]["entries"]
    assert any(e["message_count"] > 2 for e in listed)  # a memory covers more than two
    assert [e["message_ids"] for e in listed] == [e["message_ids"][:2] for e in whole]
    assert [e["message_count"] for e in listed] == [len(e["message_ids"]) for e in whole]


@pytest.mark.parametrize("shape", ["anthropic", "openai"])
def test_compile_provider_forms(capsys, built, shape):
    code, out, err = run(capsys, "compile", built, "-n", "agents/ann", "-f", shape, "--assistant", "ann")
    assert code == 0, err
    messages = json.loads(out)
    assert isinstance(messages, list) and messages
    assert {m["role"] for m in messages} >= {"user", "assistant"}
    assert "SECRET-BOB" not in out


@pytest.mark.parametrize("shape", ["anthropic", "openai"])
def test_compile_provider_forms_default_the_assistant_to_the_namespaces_reader(capsys, built, shape):
    """Without --assistant, the namespace's reader speaks as the assistant: ann's own lines and her
    memories are assistant turns, never user turns prefixed with her name."""
    code, default_out, err = run(capsys, "compile", built, "-n", "agents/ann", "-f", shape)
    assert code == 0, err
    code, named_out, err = run(capsys, "compile", built, "-n", "agents/ann", "-f", shape, "--assistant", "ann")
    assert code == 0, err
    assert json.loads(default_out) == json.loads(named_out)
    assert "assistant" in {m["role"] for m in json.loads(default_out)}


def test_compile_other_branch_and_reader_less_namespace(capsys, built):
    code, out, err = run(capsys, "compile", built, "-n", "host", "-b", "alt")
    assert code == 0, err
    assert out.startswith("# host on alt, for no reader (windowed-passthrough)")
    assert "Only on alt." in out
    assert "SECRET-BOB" not in out and "ANN-NOTE" not in out  # no reader sees no audience block


def test_compile_refusals_are_one_line(capsys, built):
    code, _out, err = run(capsys, "compile", built, "-n", "agents/ann", "--reader", "bob")
    assert code == 1
    line = one_error_line(err)
    assert "'bob'" in line and "'ann'" in line and "refused" in line

    code, _out, err = run(capsys, "compile", built, "-n", "agents/nobody")
    assert code == 1
    assert "no records" in one_error_line(err)

    code, _out, err = run(capsys, "compile", built, "-n", "agents/ann", "--branch", "nope")
    assert code == 1
    assert "no branch 'nope'" in one_error_line(err)


def test_compile_for_a_reader_on_an_unclaimed_namespace_previews_without_claiming(capsys, built):
    """--reader on a namespace that records no reader shows that reader's view, and claims
    nothing: the store file is the same bytes after, and a later compile still sees no reader."""
    with open(built, "rb") as handle:
        before_bytes = handle.read()
    _code, before, _err = run(capsys, "inspect", built, "--json")
    code, out, err = run(capsys, "compile", built, "-n", "host", "--reader", "ann")
    assert code == 0, err
    assert out.startswith("# host on main, for reader 'ann' (windowed-passthrough)")
    assert "BOB-ONLY" not in out and "SECRET-BOB" not in out
    code, out, err = run(capsys, "compile", built, "-n", "host", "--reader", "bob")  # not claimed by ann either
    assert code == 0, err
    assert out.startswith("# host on main, for reader 'bob' (windowed-passthrough)")
    assert "BOB-ONLY" in out and "ANN-NOTE" not in out
    _code, after, _err = run(capsys, "inspect", built, "--json")
    assert after == before
    with open(built, "rb") as handle:
        assert handle.read() == before_bytes


# -- export / import ----------------------------------------------------------------------------


def test_export_import_export_is_identical(capsys, built, tmp_path):
    code, first, err = run(capsys, "export", built)
    assert code == 0, err
    lines = first.splitlines()
    assert len(lines) == 34
    record = json.loads(lines[2])
    assert set(record) == {"participant", "content", "metadata", "timestamp"}
    assert any(b.get("audience") == ["bob"] for b in record["content"])  # stored form, audiences included
    assert lines[2] == json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    source = tmp_path / "messages.jsonl"
    source.write_text(first, encoding="utf-8")
    copy = str(tmp_path / "copy.db")
    code, out, err = run(capsys, "import", copy, str(source))
    assert code == 0, err
    assert "imported 34 messages" in out
    code, second, _err = run(capsys, "export", copy)
    assert code == 0
    assert second == first

    # a branch exports what it sees (the parent's messages up to the fork, then its own)
    code, alt, _err = run(capsys, "export", built, "--branch", "alt")
    assert code == 0
    assert alt.splitlines()[:34] == lines and json.loads(alt.splitlines()[-1])["participant"] == "user"


def test_export_with_ids_and_import_of_it(capsys, built, tmp_path):
    code, out, _err = run(capsys, "export", built, "--with-ids")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert all({"id", "sequence"} <= set(r) for r in rows)
    assert [r["sequence"] for r in rows] == sorted(r["sequence"] for r in rows)
    source = tmp_path / "with-ids.jsonl"
    source.write_text(out, encoding="utf-8")
    code, _out, err = run(capsys, "import", str(tmp_path / "copy.db"), str(source))
    assert code == 0, err


def test_import_appends_to_an_existing_branch_in_one_go(capsys, built, tmp_path):
    source = tmp_path / "two.jsonl"
    source.write_text(
        '{"participant":"user","content":[{"type":"text","text":"one"}],"metadata":{},"timestamp":5}\n'
        "\n"
        '{"participant":"ann","content":[{"type":"text","text":"two","audience":["ann"]}]}\n',
        encoding="utf-8",
    )
    code, _out, err = run(capsys, "import", built, str(source), "--branch", "alt")
    assert code == 1
    assert "already holds messages" in one_error_line(err) and "--append" in err
    code, out, err = run(capsys, "import", built, str(source), "--branch", "alt", "--append")
    assert code == 0, err
    assert "imported 2 messages" in out and "now 37 messages" in out
    _code, exported, _err = run(capsys, "export", built, "--branch", "alt")
    last_two = [json.loads(line) for line in exported.splitlines()[-2:]]
    assert last_two[0]["timestamp"] == 5.0 and last_two[0]["content"] == [{"type": "text", "text": "one"}]
    assert last_two[1]["content"] == [{"type": "text", "text": "two", "audience": ["ann"]}]


def test_import_with_one_malformed_line_writes_nothing_and_names_it(capsys, built, tmp_path):
    _code, before, _err = run(capsys, "export", built)
    lines = before.splitlines()[:4]
    tool_call = '{"type":"tool_use","id":"t9","name":"x","input":{},"audience":["ann"]}'
    lines.insert(2, '{"participant":"user","content":[' + tool_call + '],"metadata":{},"timestamp":1}')
    source = tmp_path / "bad.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")

    code, _out, err = run(capsys, "import", built, str(source))
    assert code == 1 and "pass --append" in err and "nothing was written" in err  # the store's checks come first
    code, _out, err = run(capsys, "import", built, str(source), "--append")
    assert code == 1
    assert "nothing was written" in err
    assert "line 3: content[0].audience" in err
    assert "line 1" not in err and "line 2" not in err and "line 4" not in err
    _code, after, _err = run(capsys, "export", built)
    assert after == before

    fresh = tmp_path / "fresh.db"
    code, _out, _err = run(capsys, "import", str(fresh), str(source))
    assert code == 1
    assert not fresh.exists()


def test_import_names_every_malformed_line(capsys, tmp_path):
    source = tmp_path / "bad.jsonl"
    source.write_text(
        "not json\n"
        '{"participant":"","content":[]}\n'
        '{"participant":"u","content":[{"type":"txt","text":"a"}]}\n'
        '{"participant":"u","content":[],"timestamp":"noon"}\n'
        '{"participant":"u","content":[],"metadata":[1]}\n'
        '{"participant":"u","content":[],"timestamp":NaN}\n',
        encoding="utf-8",
    )
    code, _out, err = run(capsys, "import", str(tmp_path / "s.db"), str(source))
    assert code == 1
    assert "6 malformed lines" in err
    for expected in (
        "line 1: not JSON",
        "line 2: participant",
        "line 3: content[0].type",
        "line 4: timestamp",
        "line 5: metadata",
        "line 6: not JSON",
    ):
        assert expected in err
    assert not (tmp_path / "s.db").exists()


def test_import_to_an_unknown_branch_is_refused(capsys, built, tmp_path):
    source = tmp_path / "one.jsonl"
    source.write_text('{"participant":"u","content":[]}\n', encoding="utf-8")
    code, _out, err = run(capsys, "import", built, str(source), "--branch", "nope")
    assert code == 1
    assert "no branch 'nope'" in one_error_line(err)
    code, _out, err = run(capsys, "import", str(tmp_path / "new.db"), str(source), "--branch", "nope")
    assert code == 1 and not (tmp_path / "new.db").exists()


# -- stores that cannot be read ------------------------------------------------------------------


@pytest.mark.parametrize("command", [["inspect"], ["export"], ["compile", "-n", "agents/ann"]])
def test_missing_store_is_one_line_and_creates_nothing(capsys, tmp_path, command):
    path = tmp_path / "missing.db"
    code, out, err = run(capsys, command[0], str(path), *command[1:])
    assert code == 1
    assert "does not exist" in one_error_line(err)
    assert out == ""
    assert not path.exists()
    assert os.listdir(tmp_path) == []


def test_foreign_files_are_refused(capsys, tmp_path):
    text_file = tmp_path / "notes.txt"
    text_file.write_text("just some notes\n")
    code, _out, err = run(capsys, "inspect", str(text_file))
    assert code == 1 and "not an asides store" in one_error_line(err)
    assert text_file.read_text() == "just some notes\n"

    import sqlite3

    other = tmp_path / "other.sqlite"
    connection = sqlite3.connect(other)
    connection.execute("CREATE TABLE people (name TEXT)")
    connection.commit()
    connection.close()
    code, _out, err = run(capsys, "export", str(other))
    assert code == 1 and "not an asides store" in one_error_line(err)

    code, _out, err = run(capsys, "inspect", str(tmp_path))
    assert code == 1 and "directory" in one_error_line(err)


async def test_a_write_to_a_store_another_process_holds_is_one_line_and_exits_1(built, tmp_path):
    """import and restore write: while a host holds the store, the CLI (a subprocess) says so on
    one line and exits 1 (a refusal). The reading commands work then (tests/cli/test_cli_live.py)."""
    source = tmp_path / "one.jsonl"
    source.write_text('{"participant":"u","content":[{"type":"text","text":"x"}]}\n', encoding="utf-8")
    dump = tmp_path / "dump.jsonl"
    dump.write_text('{"asides":"dump","format":1}\n', encoding="utf-8")
    async with open_runtime(built):
        for argv in (["import", built, str(source), "--append"], ["restore", built, str(dump)]):
            result = await trio.run_process([sys.executable, "-m", "asides", *argv], capture_stdout=True, capture_stderr=True, check=False)
            err = result.stderr.decode()
            assert result.returncode == 1, err
            assert "open in another process" in one_error_line(err)
            assert "Traceback" not in err
