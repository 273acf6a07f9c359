"""``asides.testing.LeakCheck``: a marker meant for some readers, found in anything given to
another reader or to a manager with no reader, is reported once per place, with where.

The library itself never leaks, so these tests make a host leak on purpose: the host writes
bob's marker in a block with no audience, which every reader then sees, in every place.
"""

from __future__ import annotations

import pytest

from asides import AutobiographicalStrategy, ExtractiveModel, PassthroughStrategy, open_runtime, text
from asides.testing import HarnessError, Leak, LeakCheck, LeaksFound, ScriptedModel, open_test_runtime


def memory() -> AutobiographicalStrategy:
    return AutobiographicalStrategy(target_chunk_tokens=1, head_window_tokens=0, recent_window_tokens=0, holdback_chunks=0)


async def test_a_clean_host_has_no_leaks_and_every_place_is_searched():
    check = LeakCheck({"ann": ["ANN-1"], "bob": ["BOB-1"]})
    async with open_test_runtime() as runtime:
        room = await runtime.open_manager("room", strategy=PassthroughStrategy())
        ann = await runtime.open_manager("agents/ann", strategy=memory(), view_reader="ann", model=ExtractiveModel())
        bob = await runtime.open_manager("agents/bob", strategy=memory(), view_reader="bob", model=ExtractiveModel())
        for number in range(4):
            await room.add_message("user", [text(f"plain {number}"), text("ANN-1 hers", ["ann"]), text("BOB-1 his", ["bob"])])
        await ann.drain()
        await bob.drain()
        await ann.append_context_entry([text("a note for ann's log")])
        assert await check.scan(room, ann, bob) == ()
        assert check.places > 20
    check.assert_no_leaks()


async def test_a_leak_is_reported_in_each_place_it_reached():
    """bob's marker, written where ann can read it, is reported in ann's preview, provenance,
    memories (each summary read), context log and model requests, and in the no-reader room's
    preview; never in bob's own."""
    check = LeakCheck()
    check.add("BOB-SECRET", ["bob"])
    async with open_test_runtime() as runtime:
        room = await runtime.open_manager("room", strategy=PassthroughStrategy())
        ann_model = ScriptedModel(respond=ExtractiveModel().complete)
        ann = await runtime.open_manager("agents/ann", strategy=memory(), view_reader="ann", model=ann_model)
        bob = await runtime.open_manager("agents/bob", strategy=memory(), view_reader="bob", model=ExtractiveModel())
        for number in range(4):
            await room.add_message("user", [text(f"BOB-SECRET {number}, written by a careless host for everyone.")])
        await ann.drain()
        await bob.drain()
        await room.add_message("user", [text("BOB-SECRET 4, not compressed yet.")])
        await ann.append_context_entry([text("copied: BOB-SECRET 0")])
        leaks = await check.scan(room, ann, bob)

    assert all(isinstance(leak, Leak) and leak.meant_for == ("bob",) for leak in leaks)
    assert {leak.reached for leak in leaks} == {"ann", None}
    where = {leak.where for leak in leaks if leak.reached == "ann"}
    assert any(w.startswith("agents/ann preview, message ") for w in where)
    assert any(w.startswith("agents/ann preview, provenance of message ") for w in where)
    assert "agents/ann memory L1-1" in where and "agents/ann memory L1-1 (get_summary)" in where
    assert "agents/ann search_summaries('BOB-SECRET') -> L1-1" in where
    assert "agents/ann context log entry 0" in where
    assert any(w.startswith("agents/ann model request #1, message ") for w in where)
    assert any(leak.reached is None and leak.where.startswith("room preview") for leak in leaks)
    first = next(leak for leak in leaks if leak.where == "agents/ann context log entry 0")
    assert str(first) == "BOB-SECRET (for bob) reached ann's agents/ann context log entry 0: …copied: BOB-SECRET 0…"

    with pytest.raises(LeaksFound) as found:
        check.assert_no_leaks()
    assert found.value.leaks == leaks and str(first) in str(found.value)


def test_record_searches_what_a_host_gave_a_reader():
    check = LeakCheck({"ann": ["SHARED-NOTE"], "bob": ["SHARED-NOTE", "BOB-ONLY"]})
    assert check.markers == {"SHARED-NOTE": ("ann", "bob"), "BOB-ONLY": ("bob",)}
    check.record("ann", "ann's answer mentions SHARED-NOTE, which is hers too", where="answer")
    check.record("cleo", ["BOB-ONLY", "and more"], where="a list of texts")
    check.record(None, "the host's own note: BOB-ONLY", where="host note")
    assert [(leak.marker, leak.reached, leak.where) for leak in check.leaks()] == [
        ("BOB-ONLY", "cleo", "a list of texts, item 1"),
        ("BOB-ONLY", None, "host note"),
    ]


def test_leak_check_refuses_what_it_cannot_use():
    with pytest.raises(HarnessError, match="list of strings"):
        LeakCheck({"ann": "ANN-1"})
    check = LeakCheck()
    for marker, readers in (("", ["ann"]), ("M", []), ("M", [""])):
        with pytest.raises(HarnessError):
            check.add(marker, readers)
    with pytest.raises(HarnessError):
        check.record("ann", "x", where="")


async def test_a_model_shared_by_two_readers_is_refused():
    shared = ScriptedModel(respond=lambda request: "MEMORY")
    check = LeakCheck({"ann": ["ANN-1"]})
    async with open_test_runtime(model=shared) as runtime:
        ann = await runtime.open_manager("agents/ann", strategy=memory(), view_reader="ann")
        bob = await runtime.open_manager("agents/bob", strategy=memory(), view_reader="bob")
        await ann.add_message("user", [text(f"line {n}") for n in range(4)])
        for number in range(4):
            await ann.add_message("user", [text(f"line {number}")])
        await ann.drain()
        await bob.drain()
        assert shared.requests
        with pytest.raises(HarnessError, match="whose requests"):
            await check.scan(ann, bob)


async def test_a_leak_report_numbers_a_compiles_places_one_way(store_path):
    """A marker that reaches bob through a compile is reported at the compiled message's place,
    and its provenance at the same number, with the stored id named as an id (it used to say
    ``message 2`` for the place and ``provenance of message 5`` for the id)."""
    async with open_runtime(store_path) as rt:
        host = await rt.open_manager("room", strategy=PassthroughStrategy())
        bob = await rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob")
        await host.add_message("user", [text("Hello, all.")])
        leaked = await host.add_message("user", [text("ANN-ONLY the code is 4417.")])  # no audience: a leak, on purpose
        compiled = await bob.compile()
        check = LeakCheck({"ann": ["ANN-ONLY"]})
        check.record("bob", compiled, where="compile")
        places = sorted(leak.where for leak in check.leaks())
        assert places == ["compile, message 2", f"compile, provenance of message 2 (stored id {leaked.id})"]
