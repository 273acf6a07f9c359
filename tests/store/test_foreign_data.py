"""Old or foreign stored data, read through the runtime after a reopen.

Records are seeded into the store file before a runtime opens it (``tests.helpers.seed_records``):
the way these tests stand in for data no public write can produce. Each scenario is on a branch
that holds no audience on any top-level block, so before the fixes the reader view took its plain
fast path:

1. An audience for bob found only nested inside a stored tool result, each shape alone on its
   branch: written plainly, with the key spelled ``\\u0061udience``, or brought by an edit record.
   Regression: replay did not mark the branch as holding audiences (the escaped key; and no test
   noticed when the nested check was taken out), so after a reopen ann's compile held a tool
   result meant only for bob.
2. A stored message that cannot be decoded (``{"type": "bogus"}``), as the newest message and as
   an older one. Regression: the view switched to its filtered list between ``length()`` and
   ``at()``: the first passthrough compile raised ``IndexError`` (newest) or held the newest
   message twice (older).

Every scenario is compiled for ann, bob and a manager with no reader, under passthrough, windowed
and autobiographical (with ``ExtractiveModel``, drained first) strategies: no marker reaches a
reader it is not meant for (``LeakCheck``), nothing raises, and every readable message is held
exactly once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from asides import (
    AutobiographicalStrategy,
    CompiledContext,
    ExtractiveModel,
    PassthroughStrategy,
    WindowedPassthroughStrategy,
    open_runtime,
    text,
)
from asides.testing import LeakCheck
from tests.helpers import Raw, message_body, seed_records

READERS = ("ann", "bob", None)
#: A marker meant for a reader no manager compiles for: it must reach no one.
NOBODY = "nobody-at-all"
PLACEHOLDER = "[a stored message here could not be read]"


def _autobiographical() -> AutobiographicalStrategy:
    return AutobiographicalStrategy(target_chunk_tokens=120, head_window_tokens=0, recent_window_tokens=150)


STRATEGIES: dict[str, Callable[[], Any]] = {
    "passthrough": PassthroughStrategy,
    "windowed": WindowedPassthroughStrategy,
    "autobiographical": _autobiographical,
}


def _filler(i: int) -> dict[str, Any]:
    return {"type": "text", "text": f"FILLER-{i}. " + "ordinary words for everyone " * 12}


def _text_of(compiled: CompiledContext) -> list[str]:
    """The JSON text of each compiled message."""
    return [json.dumps([repr(b) for b in m.content]) for m in compiled.messages]


def _count(compiled: CompiledContext, marker: str) -> int:
    return sum(t.count(marker) for t in _text_of(compiled))


def _bob_result(call: str, secret: str) -> dict[str, Any]:
    """A tool result whose one block is for bob: an audience nested one level down."""
    return {"type": "tool_result", "tool_use_id": call, "content": [{"type": "text", "text": secret, "audience": ["bob"]}]}


def _seed_nested_audience(path: str, shape: str) -> LeakCheck:
    """Messages for everyone and one audience for bob, nested in a stored tool result, in one
    ``shape``: written plainly (``tool-result``), with the key spelled by an escape
    (``escaped-key``), or brought by an edit record (``edit``). Nothing has a top-level audience."""
    records: list[tuple[str, str, str | None, Any]] = [("main", "message", None, message_body("user", [_filler(i)])) for i in range(6)]
    records.append(("main", "message", None, message_body("assistant", [{"type": "tool_use", "id": "c1", "name": "lookup", "input": {}}])))
    if shape == "tool-result":
        records.append(("main", "message", None, message_body("tool", [_bob_result("c1", "SECRET-BOB")])))
    elif shape == "escaped-key":
        body = json.dumps(message_body("tool", [_bob_result("c1", "SECRET-BOB")])).replace('"audience"', '"\\u0061udience"')
        assert "\\u0061udience" in body and '"audience"' not in body
        records.append(("main", "message", None, Raw(body)))
    else:
        records.append(("main", "message", None, message_body("tool", [{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}])))
    records.append(("main", "message", None, message_body("user", [{"type": "text", "text": "NEWEST-MARK for everyone"}])))
    ids = seed_records(path, records)
    if shape == "edit":
        seed_records(path, [("main", "edit", ids[-2], {"content": [_bob_result("c1", "SECRET-BOB")]})])
    return LeakCheck({"bob": ["SECRET-BOB"]})


def _seed_undecodable(path: str, *, newest: bool) -> LeakCheck:
    """A message with a block of an unknown type, as the newest message or followed by one."""
    records: list[tuple[str, str, str | None, Any]] = [("main", "message", None, message_body("user", [_filler(i)])) for i in range(6)]
    records.append(("main", "message", None, message_body("user", [{"type": "bogus", "text": "RAW-BOGUS"}])))
    if not newest:
        records.append(("main", "message", None, message_body("user", [{"type": "text", "text": "NEWEST-MARK for everyone"}])))
    seed_records(path, records)
    return LeakCheck({NOBODY: ["RAW-BOGUS", '"bogus"']})


SCENARIOS: dict[str, Callable[[str], LeakCheck]] = {
    "nested-in-tool-result": lambda path: _seed_nested_audience(path, "tool-result"),
    "nested-escaped-key": lambda path: _seed_nested_audience(path, "escaped-key"),
    "nested-by-edit": lambda path: _seed_nested_audience(path, "edit"),
    "undecodable-newest": lambda path: _seed_undecodable(path, newest=True),
    "undecodable-older": lambda path: _seed_undecodable(path, newest=False),
}


@pytest.mark.parametrize("strategy", list(STRATEGIES))
@pytest.mark.parametrize("scenario", list(SCENARIOS))
async def test_foreign_data_after_reopen_compiles_for_every_reader(store_path, scenario, strategy):
    """After a reopen, every reader's compile (the first one, then one after a drain) holds no
    marker meant for another reader, raises nothing, and holds each readable message exactly
    once; the reader's view agrees with itself read whole and by position."""
    check = SCENARIOS[scenario](store_path)
    async with open_runtime(store_path) as rt:
        managers = []
        for reader in READERS:
            manager = await rt.open_manager(f"ns-{reader}", strategy=STRATEGIES[strategy](), view_reader=reader, model=ExtractiveModel())
            managers.append(manager)
            first = await manager.compile(max_tokens=10**6, reserve_for_response=0)
            check.record(reader, first, where=f"{strategy} first compile")
            await manager.drain()
            compiled = await manager.compile(max_tokens=10**6, reserve_for_response=0)
            check.record(reader, compiled, where=f"{strategy} compile after drain")
            for one in (first, compiled):
                if scenario != "undecodable-newest":
                    assert _count(one, "NEWEST-MARK") == 1, _text_of(one)
                if strategy != "autobiographical":  # every message raw, each once
                    for i in range(6):
                        assert _count(one, f"FILLER-{i}.") == 1, _text_of(one)
                    assert _count(one, PLACEHOLDER) == (1 if scenario.startswith("undecodable") else 0)
            view = manager.view_messages()
            assert [m.id for m in view] == [m.id for m in (manager.view_message(v.id) for v in view) if m is not None]
            assert len({m.id for m in view}) == len(view)
            if scenario == "undecodable-newest":
                assert view[-1].content == (text(PLACEHOLDER),)
        await check.scan(*managers)
    check.assert_no_leaks()


@pytest.mark.parametrize("shape", ["tool-result", "escaped-key", "edit"])
async def test_nested_audience_in_a_stored_tool_result_is_hidden_after_reopen(store_path, shape):
    """Scenario 1 in its plainest form: ann's and no reader's view leave bob's tool result out
    after a reopen; bob's holds it."""
    _seed_nested_audience(store_path, shape)
    async with open_runtime(store_path) as rt:
        views = {}
        for reader in READERS:
            manager = await rt.open_manager(f"v-{reader}", strategy=PassthroughStrategy(), view_reader=reader)
            views[reader] = json.dumps([repr(m.content) for m in manager.view_messages()])
    assert "SECRET-BOB" not in views["ann"] and "SECRET-BOB" not in views[None]
    assert "SECRET-BOB" in views["bob"]


async def test_audience_as_data_keeps_the_plain_path(store_path):
    """A key named ``audience`` inside a tool call's input or in metadata is data: the view
    reads the stored objects themselves (the plain fast path), before and after a reopen."""
    seed_records(
        store_path,
        [
            (
                "main",
                "message",
                None,
                message_body(
                    "assistant",
                    [{"type": "tool_use", "id": "c", "name": "f", "input": {"audience": ["x"], "deep": [{"audience": 1}]}}],
                    {"audience": "all"},
                ),
            ),
            ("main", "message", None, message_body("tool", [{"type": "tool_result", "tool_use_id": "c", "content": "ok"}])),
        ],
    )
    async with open_runtime(store_path) as rt:
        manager = await rt.open_manager("ns", strategy=PassthroughStrategy(), view_reader="ann")
        stored = manager.get_all_messages()
        assert all(a is b for a, b in zip(manager.view_messages(), stored, strict=True))


async def test_undecodable_message_keeps_its_place_when_the_branch_gains_an_audience(store_path):
    """A damaged message holds its place as a placeholder when the branch's first audience block
    is written after a reopen (the view then switches to its filtered list): the positions of
    the messages before it do not move, and every message is held once."""
    _seed_undecodable(store_path, newest=False)
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("ann", strategy=_autobiographical(), view_reader="ann", model=ExtractiveModel())
        before = [m.id for m in ann.view_messages()]
        await ann.compile(max_tokens=10**6, reserve_for_response=0)
        written = await ann.add_message("bob", [text("SECRET-BOB-LIVE", audience=["bob"])])
        await ann.add_message("ann", [text("ANN-LAST for everyone")])
        after = [m.id for m in ann.view_messages()]
        assert after[: len(before)] == before
        assert written.id not in after
        await ann.drain()
        compiled = await ann.compile(max_tokens=10**6, reserve_for_response=0)
        assert _count(compiled, "ANN-LAST") == 1
        assert _count(compiled, "SECRET-BOB-LIVE") == 0
        assert _count(compiled, "RAW-BOGUS") == 0
