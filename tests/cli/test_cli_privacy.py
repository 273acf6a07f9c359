"""``asides erase`` and ``asides audit`` (issue 23), through ``main([...])``, on both backends."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from asides._cli._main import main
from asides.actors import open_runtime
from asides.store import text
from asides.strategies import PassthroughStrategy

SECRET = "otter-ledger-8812"


def run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def build(path: str) -> list[str]:
    async def go() -> list[str]:
        async with open_runtime(path) as rt:
            m = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
            ids = [
                (await m.add_message("user", [text(f"my code is {SECRET}")])).id,
                (await m.add_message("bob", [text("bob here")])).id,
                (await m.add_message("bob", [text("bob again")])).id,
            ]
            await m.compile()
            return ids

    return trio.run(go)


def test_erase_and_audit(store_path: str, capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    secret_id, bob_1, bob_2 = build(store_path)
    code, out, _ = run(capsys, "audit", store_path, secret_id, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["erased"] is None and [(d["reader"], d["via"]) for d in report["disclosures"]] == [("ann", "compile")]
    # a script without --yes is refused, nothing erased
    monkeypatch.setattr("sys.stdin.isatty", lambda: False, raising=False)
    code, _, err = run(capsys, "erase", store_path, "--message", secret_id, "--reason", "asked")
    assert code == 1 and "--yes" in err
    code, out, _ = run(capsys, "export", store_path)
    assert SECRET in out
    code, out, _ = run(capsys, "erase", store_path, "--message", secret_id, "--reason", "asked", "--yes", "--json")
    assert code == 0 and json.loads(out)["message_ids"] == [secret_id]
    for command in (["export", store_path], ["dump", store_path], ["compile", store_path, "--namespace", "agents/ann"]):
        code, out, _ = run(capsys, *command)
        assert code == 0 and SECRET not in out
    code, out, _ = run(capsys, "audit", store_path, secret_id)
    assert code == 0 and "erased" in out and "asked" in out and "compile" in out
    code, out, _ = run(capsys, "audit", store_path, "--reader", "ann", "--json")
    assert {d["message_id"] for d in json.loads(out)["disclosures"]} == {secret_id, bob_1, bob_2}
    if not store_path.startswith("postgresql://"):  # a dump after an erasure restores to the same store
        code, dumped, _ = run(capsys, "dump", store_path)
        backup, copy = store_path + ".jsonl", store_path + ".copy"
        with open(backup, "w") as f:
            f.write(dumped)
        assert run(capsys, "restore", copy, backup)[0] == 0
        assert run(capsys, "dump", copy)[1] == dumped
        code, out, _ = run(capsys, "audit", copy, secret_id, "--json")
        assert json.loads(out)["erased"]["reason"] == "asked" and json.loads(out)["disclosures"]
    code, out, _ = run(capsys, "erase", store_path, "--participant", "bob", "--reason", "left", "--yes")
    assert code == 0 and "erased 2 message(s)" in out
    code, out, _ = run(capsys, "export", store_path)
    assert out == ""
    code, _, err = run(capsys, "erase", store_path, "--message", "9999", "--reason", "x", "--yes")
    assert code == 1 and "9999" in err
    code, _, err = run(capsys, "audit", store_path, "9999")
    assert code == 1 and "9999" in err


def test_audit_of_a_reader_counts_messages_and_disclosures_apart(store_path: str, capsys: Any) -> None:
    """Three messages shown to ann twice each (a compile and a preview): three messages, six
    disclosures, and the line says both."""

    async def go() -> None:
        async with open_runtime(store_path) as rt:
            m = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
            for line in ("one", "two", "three"):
                await m.add_message("user", [text(line)])
            await m.compile()
            await m.preview_context()

    trio.run(go)
    code, out, _ = run(capsys, "audit", store_path, "--reader", "ann")
    assert code == 0
    assert out.splitlines()[0] == "reader 'ann' was shown 3 messages (6 disclosures):"
    assert len(out.splitlines()) == 7
    code, out, _ = run(capsys, "audit", store_path, "--reader", "ann", "--json")
    report = json.loads(out)
    assert report["messages"] == 3 and len(report["disclosures"]) == 6
    code, out, _ = run(capsys, "audit", store_path, "--reader", "zed")
    assert code == 0 and out.strip() == "reader 'zed' was shown 0 messages (0 disclosures)"


def test_restore_says_when_the_dump_holds_lines_its_own_erasures_erased(
    store_path: str, capsys: Any, tmp_path: Any, request: pytest.FixtureRequest
) -> None:
    """A dump put together from one taken before an erasure and one taken after holds the
    erased text beside the erasure record: the restored store hides it, and restore says which
    lines hold it. A dump taken after the erasure restores with no such word."""
    secret_id, _bob_1, _bob_2 = build(store_path)

    async def edit_then_erase() -> None:
        async with open_runtime(store_path) as rt:
            m = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
            await m.edit_message(secret_id, [text(f"my code is still {SECRET}")])

    trio.run(edit_then_erase)
    before = run(capsys, "dump", store_path)[1]
    assert run(capsys, "erase", store_path, "--message", secret_id, "--reason", "asked", "--yes")[0] == 0
    after = run(capsys, "dump", store_path)[1]
    old_lines = {json.loads(line)["id"]: line for line in before.splitlines()[1:-1]}
    mixed = [after.splitlines()[0]]
    for line in after.splitlines()[1:-1]:
        record = json.loads(line)
        mixed.append(old_lines.get(record["id"], line) if record["kind"] in ("message", "edit") else line)
    mixed.append(after.splitlines()[-1])  # the end line
    stale = [json.loads(line) for line in mixed[1:-1] if SECRET in line]
    assert {r["kind"] for r in stale} == {"message", "edit"}

    def target(name: str) -> str:
        if store_path.startswith("postgresql://"):
            return str(request.getfixturevalue("pg_cluster").fresh_url())
        return str(tmp_path / name)

    for name, lines, warned in (("clean.db", after.splitlines(), False), ("mixed.db", mixed, True)):
        source = tmp_path / f"{name}.jsonl"
        source.write_text("\n".join(lines) + "\n", encoding="utf-8")
        restored = target(name)
        code, out, err = run(capsys, "restore", restored, str(source))
        assert code == 0 and out.startswith("restored "), err
        if not warned:
            assert err == ""
            continue
        warning = err.strip().splitlines()
        assert len(warning) == 1 and warning[0].startswith("asides: warning: the dump holds 2 line(s) that its own erasure records erased")
        for record in stale:
            assert f"record {record['id']} " in warning[0]
        assert SECRET not in err
        # the restored store hides them, as the store the dump came from did
        for command in (["export", restored], ["compile", restored, "--namespace", "agents/ann"]):
            code, out, _ = run(capsys, *command)
            assert code == 0 and SECRET not in out
        code, out, _ = run(capsys, "audit", restored, secret_id, "--json")
        assert json.loads(out)["erased"]["reason"] == "asked"
