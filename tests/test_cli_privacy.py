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
