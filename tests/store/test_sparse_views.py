"""A reader's view computed from the messages that may name a reader, held against the full list.

A view with no ``view_filter`` holds only the messages whose stored body may name a reader and
the edited ones (``SparseProjection``); a view with a filter keeps the whole list, message by
message (``Projection``). A filter that passes everything makes the second an oracle for the
first: over random writes (plain blocks, blocks for ann or bob, thinking, tool calls and results
with private content), edits that widen or narrow, erasures and forks, every read of every
reader's view must agree with the oracle's, both for a view kept up to date step by step and for
one made afresh. Also: a reader's view of a long branch holds and decodes only what may differ
for it."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import pytest
import trio
from hypothesis import HealthCheck, given, settings

from asides import AsidesError, text, thinking, tool_result, tool_use
from asides.lowlevel import MessageView, open_store
from asides.store._views import Projections

READERS = (None, "ann", "bob", "cy")  # cy: named by no audience, so its view reads that of no reader
AUDIENCES = st.sampled_from([None, ["ann"], ["bob"], ["ann", "bob"]])


@st.composite
def blocks(draw: Any) -> list[Any]:
    out: list[Any] = []
    for kind in draw(st.lists(st.sampled_from(["text", "thinking", "call", "result"]), min_size=1, max_size=3)):
        n = draw(st.integers(0, 3))
        if kind == "text":
            out.append(text(f"line {n}", draw(AUDIENCES)))
        elif kind == "thinking":
            out.append(thinking(f"thought {n}", "sig"))
        elif kind == "call":
            out.append(tool_use(f"t{n}", "look"))
        else:
            out.append(tool_result(f"t{n}", [text(f"result {n}", draw(AUDIENCES))]))
    return out


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.sampled_from(["user", "assistant"]), blocks()),
        st.tuples(st.just("edit"), st.integers(0, 40), blocks()),
        st.tuples(st.just("erase"), st.integers(0, 40)),
        st.tuples(st.just("fork")),
    ),
    min_size=1,
    max_size=18,
)


async def write_op(store: Any, branches: list[str], op: tuple[Any, ...]) -> None:
    """Apply ``op`` (drawn from :data:`OPS`) to ``store`` on the newest of ``branches``; a fork
    adds the branch it makes. A write the store refuses writes nothing (asserted to be one of
    its errors)."""
    model = store.model
    branch = branches[-1]
    length = model.length(branch)
    try:
        if op[0] == "append":
            await store.append_message(branch, op[1], tuple(op[2]))
        elif op[0] == "edit" and length:
            await store.edit_message(branch, model.id_at(branch, op[1] % length), tuple(op[2]))
        elif op[0] == "erase" and length:
            await store.erase([model.id_at(branch, op[1] % length)], reason="test", at=0.0)
        elif op[0] == "fork":
            await store.create_branch(f"side-{len(branches)}", branch)
            branches.append(f"side-{len(branches)}")
    except AsidesError:
        pass  # refused (a nested audience, say): it wrote nothing


async def write_ops(store: Any, ops: list[tuple[Any, ...]]) -> list[str]:
    """Apply ``ops`` in turn (:func:`write_op`): the branches, oldest first."""
    branches = ["main"]
    for op in ops:
        await write_op(store, branches, op)
    return branches


def agree(model: Any, branch: str, kept: dict[str | None, MessageView]) -> None:
    """Every read of each reader's kept view and of a fresh one equals the oracle's."""
    for reader in READERS:
        oracle = MessageView(model, branch, reader=reader, view_filter=lambda _m: True)
        expected = oracle.get_all()
        for view in (kept[reader], MessageView(model, branch, reader=reader)):
            assert view.get_all() == expected, reader
            assert view.length() == len(expected)
            assert [view.at(i) for i in range(len(expected))] == list(expected)
            assert [view.id_at(i) for i in range(len(expected))] == [m.id for m in expected]
            if expected:
                assert view.at(-1) == expected[-1]
            for start, stop in ((1, None), (-3, None), (2, -1), (0, 2), (-2, -5)):
                assert view.slice(start, stop) == expected[start:stop], (start, stop)
            assert view.get_tail(2) == expected[-2:]
            for position in range(model.length(branch)):
                message_id = model.id_at(branch, position)
                assert view.position_of(message_id) == oracle.position_of(message_id)
                assert view.get(message_id) == oracle.get(message_id)
            assert view.hidden_tool_ids() == oracle.hidden_tool_ids()
            assert view.thinking_dropped_ids() == oracle.thinking_dropped_ids()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(ops=OPS)
def test_every_read_of_a_computed_view_agrees_with_the_full_list(ops):
    async def run() -> None:
        async with open_store(":memory:") as store:
            model = store.model
            shared = Projections(model)
            branches = ["main"]
            kept = {reader: MessageView(model, "main", reader=reader, shared=shared) for reader in READERS}
            for op in ops:
                forked = len(branches)
                await write_op(store, branches, op)
                if len(branches) > forked:  # views of the new branch from here on
                    kept = {reader: MessageView(model, branches[-1], reader=reader, shared=shared) for reader in READERS}
                agree(model, branches[-1], kept)

    trio.run(run)


async def test_a_readers_view_of_a_long_branch_reads_only_what_it_shows(tmp_path):
    """2,000 messages, every 100th holding a line for ann: opened again, ann's view knows its
    length and its newest messages having read the newest few alone (each private message's
    body says who sees something of it); bob sees the 20 as stored less ann's line."""
    path = str(tmp_path / "long.db")
    async with open_store(path) as store:
        await store.append_messages(
            "main",
            [("user", (text(f"m{i}"), *((text(f"for ann {i}", ["ann"]),) if i % 100 == 0 else ())), None) for i in range(2000)],
        )
    async with open_store(path, read_only=True) as store:
        model = store.model
        views = {reader: MessageView(model, "main", reader=reader, shared=Projections(model)) for reader in ("ann", "bob")}
        assert views["ann"].length() == views["bob"].length() == 2000
        assert [m.content[0].text for m in views["ann"].get_tail(3)] == ["m1997", "m1998", "m1999"]
        statistics = store.statistics()
        assert statistics.messages_read == 3, "the newest three, and none of the 20 (their bodies say who sees them)"
        assert statistics.audience_blocks_read <= 1, "the block of the newest alone (the others are counted at the open)"
        assert [b.text for b in views["bob"].at(100).content] == ["m100"]
        assert [b.text for b in views["ann"].at(100).content] == ["m100", "for ann 100"]


@pytest.mark.parametrize("reader", ["ann", None])
async def test_a_message_the_reader_sees_nothing_of_leaves_its_place_to_the_next(reader):
    async with open_store(":memory:") as store:
        await store.append_message("main", "user", (text("one"),))
        await store.append_message("main", "user", (text("for bob", ["bob"]),))
        await store.append_message("main", "user", (text("three"),))
        view = MessageView(store.model, "main", reader=reader)
        assert [m.content[0].text for m in view.get_all()] == ["one", "three"]
        assert view.at(1).content[0].text == "three" and view.length() == 2
        hidden_id = store.model.id_at("main", 1)
        assert view.position_of(hidden_id) is None and view.get(hidden_id) is None
