"""``asides audit STORE --export FILE`` and ``asides audit --verify FILE [--store STORE]``: the
store's disclosures and erasures as a chain of JSON lines, anchored at a value the store keeps;
a changed, removed or added line fails verification naming it; an export matches its store, and
not another; no line holds a message's text."""

from __future__ import annotations

import json

import pytest
import trio

from asides import PassthroughStrategy, open_runtime, text
from asides._cli._main import main

SECRET = "okapi-ledger-3319"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def _write(path: str, *, erase: bool = True, more: int = 0) -> None:
    async with open_runtime(path) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        for i in range(3 if not more else 0):
            await host.add_message("user", [text(f"line {i} {SECRET}", ["ann"])])
        for i in range(more):
            await host.add_message("user", [text(f"more {i}")])
        await ann.compile()
        await ann.search("line")
        if erase and not more:
            first = ann.view_messages()[0]
            await rt.erase([first.id], reason="asked")


@pytest.fixture
def exported(capsys, store_path, tmp_path) -> tuple[str, str]:
    trio.run(_write, store_path)
    out = str(tmp_path / "audit.jsonl")
    code, said, err = run(capsys, "audit", store_path, "--export", out)
    assert code == 0 and "wrote" in said, err
    return store_path, out


def test_an_export_verifies_alone_and_against_its_store(capsys, exported):
    store, out = exported
    with open(out, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    kinds = [line["kind"] for line in lines]
    assert kinds[0] == "head" and kinds[-1] == "end"
    assert {"disclosure", "erasure"} <= set(kinds)
    assert {line.get("via") for line in lines if line["kind"] == "disclosure"} >= {"compile", "search"}
    (erasure,) = [line for line in lines if line["kind"] == "erasure"]
    assert erasure["reason"] == "asked" and len(erasure["message_ids"]) == 1
    assert all("prev" in line for line in lines[1:])
    assert SECRET not in open(out, encoding="utf-8").read(), "an export holds ids and counts, never a line's text"
    code, said, err = run(capsys, "audit", "--verify", out)
    assert code == 0 and "the chain holds" in said and err == ""
    code, said, _err = run(capsys, "audit", "--verify", out, "--store", store)
    assert code == 0 and "every event is the store's" in said


def test_events_recorded_after_the_export_are_counted_not_refused(capsys, exported):
    store, out = exported

    async def later() -> None:
        async with open_runtime(store) as rt:
            bob = await rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob")
            await bob.add_message("bob", [text("a new line")])
            await bob.compile()

    trio.run(later)
    code, said, _err = run(capsys, "audit", "--verify", out, "--store", store)
    assert code == 0 and "since" in said


@pytest.mark.parametrize("change", ["edit", "remove", "add", "cut_end"])
def test_a_changed_removed_or_added_line_fails_naming_it(capsys, exported, change):
    _store, out = exported
    with open(out, encoding="utf-8") as f:
        lines = f.read().splitlines()
    target = 2  # the second line: the first event
    if change == "edit":
        value = json.loads(lines[target - 1])
        value["reader"] = "mallory"
        lines[target - 1] = json.dumps(value, separators=(",", ":"))
    elif change == "remove":
        del lines[target - 1]
    elif change == "add":
        lines.insert(target, lines[target - 1])
    else:
        del lines[-1]
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    code, _said, err = run(capsys, "audit", "--verify", out)
    assert code == 1 and err.startswith("asides: ") and len(err.strip().splitlines()) == 1
    if change in ("edit", "add"):
        assert f"line {target} was changed" in err or f"line {target + 1} was changed" in err
    elif change == "remove":
        assert "line 1 was changed, or a line was removed" in err
    else:
        assert "is not the end of the export" in err


def test_an_export_does_not_match_another_store(capsys, exported, tmp_path):
    _store, out = exported
    other = str(tmp_path / "other.db")
    trio.run(_write, other)
    code, _said, err = run(capsys, "audit", "--verify", out, "--store", other)
    assert code == 1 and "not made from this store" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "--verify", "x.jsonl", "s.db"],
        ["audit", "s.db", "--export", "x.jsonl", "--reader", "ann"],
        ["audit", "s.db", "1", "--store", "s.db"],
        ["audit"],
    ],
)
def test_usage_errors(capsys, argv):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and "asides: " in err
