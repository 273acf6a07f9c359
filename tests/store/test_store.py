"""The durable store (``store.sqlite``) and the reader's view over it (``store.views``).

Every test goes through the store's public API (``open_store``, ``SqliteStore`` methods,
``store.model`` read through ``MessageView``) on a real SQLite file, closing and reopening it
where durability is the point. SPEC ids are cited in each docstring: 0 (glossary: sequence,
branch), 3.1 (``Message``), 3.3.1 (``BranchInfo``, edits), A3, A6 (views), D2, S1, S2, S4.

A few tests need the store's internals (its driver, and in one case its committer's wake-up):
to read the ``synchronous`` setting of the store's own connection, and to make a commit fail
or block at a chosen moment; each says so in its docstring.
"""

from __future__ import annotations

import math
import random
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from asides import BranchInfo, image, open_runtime, redacted_thinking, system_change
from asides.lowlevel import MessageView, open_store
from asides.store import (
    BranchExistsError,
    MalformedContentError,
    Message,
    StoreFailedError,
    StoreLockedError,
    TextBlock,
    ThinkingBlock,
    UnknownBranchError,
    UnknownMessageError,
    text,
    thinking,
    tool_result,
    tool_use,
)
from tests.helpers import sibling_store, writable_store

# -- helpers -----------------------------------------------------------------------------------


def snapshot(store) -> dict[str, tuple[BranchInfo, tuple[Message, ...], dict[str, Any]]]:
    """Everything a store answers, per branch: its info, its messages and its state records."""
    return {info.name: (info, tuple(store.messages(info.name)), store.state_items(info.name)) for info in store.branches()}


def leaves(exc: BaseException) -> Iterator[BaseException]:
    """The exceptions inside (possibly nested) exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from leaves(inner)
    else:
        yield exc


def assert_failed_stop(exc: BaseException) -> None:
    """Leaving a failed store's block raises StoreFailedError, alone or in an exception group."""
    found = list(leaves(exc))
    assert found, exc
    assert all(isinstance(e, StoreFailedError) for e in found), found


def body(participant: str, n: int, audience: tuple[str, ...] | None = None) -> tuple[TextBlock, ...]:
    return (text(f"{participant} says {n}", audience),)


# ==============================================================================================
# 1. Reopen returns identical records (S1, 3.1, 3.3.1)
# ==============================================================================================

RICH_CONTENT = (
    text('plain text for everyone, ünïcödé and emoji 🎭, quotes " and backslash \\'),
    text("for ann only", ["ann"]),
    text("for ann and bob", ("ann", "bob")),
    thinking("hmm, let me think", signature="sig-123", audience=("ann",)),
    thinking("unsigned thought"),
    redacted_thinking("ZW5jcnlwdGVk", audience=("bob",)),
    tool_use("call-1", "search", {"query": "asides", "audience": ["this is data, not an audience"], "n": 3}),
    tool_result("call-1", (text("result text"), image("image/png", data="iVBORw0KGgo="))),
    tool_result("call-2", "an error string", is_error=True),
    image("image/jpeg", url="https://example.invalid/cat.jpg"),
    system_change("tools changed: search added"),
)


async def test_reopen_returns_identical_messages_states_and_branches(store_path):
    """S1, 3.1, 3.3.1: after close and reopen, every branch answers exactly what it answered
    before: message ids, sequences, participants, content (block types, audiences as tuples,
    nested tool-result blocks, tool input holding a key named ``audience``), metadata and
    timestamps (batch and per-item); state records of every JSON kind; branch names, parents,
    fork points, heads and the meta recorded with a branch."""
    async with open_store(store_path) as store:
        first = await store.append_message("main", "user", RICH_CONTENT, {"turn": 1, "nested": {"list": [1, 2.5, None, True], "s": "é"}})
        stamped = await store.append_messages(
            "main",
            [("assistant", body("assistant", 1), None), ("bob", body("bob", 2, ("bob",)), {"k": "v"})],
            timestamp=1234567890.123456,
        )
        per_item = await store.append_messages("main", [("a", body("a", 1), None, 1.5), ("a", body("a", 2), None, None)], timestamp=2.25)
        assert [m.timestamp for m in per_item] == [1.5, 2.25]
        await store.set_states("main", {"int": 1, "str": "x", "list": [1, "a", None], "obj": {"a": {"b": [True, False]}}, "null": None})
        await store.set_state("main", "float", 0.1)
        await store.edit_message("main", first.id, (text("edited, now for bob", ("bob",)),), states={"int": 2})
        await store.create_branch("child", "main", meta={"why": "a test", "nested": [1, {"é": None}]})
        await store.append_message("child", "user", body("user", 3))
        await store.edit_message("child", stamped[0].id, (text("child's edit"),))
        await store.set_state("child", "str", "child value")
        await store.create_branch("grandchild", "child", at_sequence=store.head("child") - 1)
        await store.append_message("grandchild", "user", body("user", 4, ("ann",)))
        await store.create_branch("early", "main", at_sequence=2)
        await store.append_message("main", "user", body("user", 5))
        before = snapshot(store)
        before_ids = {b: [m.id for m in store.messages(b)] for b in before}
        before_meta = {b: dict(store.model.branch_meta(b)) for b in before}
    assert before_meta["child"]["why"] == "a test"

    assert [m.timestamp for m in before["main"][1][1:3]] == [1234567890.123456] * 2
    assert before["main"][1][0].content[0].audience == ("bob",)  # the edit is what main sees

    async with open_store(store_path) as store:
        after = snapshot(store)
        assert list(after) == list(before)  # same branches, same order
        assert after == before
        assert {b: dict(store.model.branch_meta(b)) for b in after} == before_meta
        for name, (_info, messages, _states) in before.items():
            reopened = store.messages(name)
            assert [m.id for m in reopened] == before_ids[name]
            for old, new in zip(messages, reopened, strict=True):
                # field by field, so a failure names what differs
                assert (new.id, new.sequence, new.participant) == (old.id, old.sequence, old.participant)
                assert new.content == old.content
                assert [type(b) for b in new.content] == [type(b) for b in old.content]
                assert dict(new.metadata) == dict(old.metadata)
                assert new.timestamp == old.timestamp
                assert store.get_message(name, old.id) == old
        # the original content of the first message is what "early" still sees (forked before the edit)
        assert store.messages("early")[0].content == RICH_CONTENT
        assert isinstance(store.messages("early")[0].content[3], ThinkingBlock)
        assert store.get_state("main", "float") == 0.1
        assert store.get_state("main", "null", "default") is None
        assert store.get_state("main", "absent", "default") == "default"


async def test_metadata_and_messages_are_read_only(store_path):
    """3.1: a Message is frozen and its metadata is a read-only private copy: changing the dict
    that was passed in changes nothing stored."""
    meta = {"a": [1, 2]}
    async with open_store(store_path) as store:
        message = await store.append_message("main", "user", body("user", 1), meta)
        meta["a"].append(3)
        meta["b"] = 1
        assert dict(store.get_message("main", message.id).metadata) == {"a": [1, 2]}
        with pytest.raises(TypeError):
            message.metadata["c"] = 1  # type: ignore[index]
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            message.sequence = 5  # type: ignore[misc]
    async with open_store(store_path) as store:
        assert dict(store.messages("main")[0].metadata) == {"a": [1, 2]}


# ==============================================================================================
# 2. Sequences and ids (0 "sequence", 3.1, 3.3.1)
# ==============================================================================================


async def test_every_write_raises_the_sequence_by_exactly_one(store_path):
    """0 (sequence), 3.3.1: a message, an edit and a state record each raise the branch's
    sequence by one; a message's ``sequence`` is the value its append took; ``set_states`` with
    3 keys raises it by 3; an edit keeps id and sequence but raises the head; creating a branch
    does not raise the parent's head; the child starts at its fork point."""
    async with open_store(store_path) as store:
        assert store.head("main") == 0
        m1 = await store.append_message("main", "user", body("user", 1))
        assert (m1.sequence, store.head("main")) == (1, 1)
        batch = await store.append_messages("main", [("a", body("a", i), None) for i in range(3)])
        assert [m.sequence for m in batch] == [2, 3, 4]
        assert store.head("main") == 4
        assert await store.set_state("main", "k", 1) == 5
        assert await store.set_states("main", {"x": 1, "y": 2, "z": 3}) == 8
        assert store.head("main") == 8
        assert await store.set_states("main", {}) == 8  # no records, no rise
        edited = await store.edit_message("main", m1.id, (text("changed"),))
        assert (edited.id, edited.sequence) == (m1.id, m1.sequence)
        assert edited.content == (text("changed"),)
        assert store.head("main") == 9
        assert store.get_message("main", m1.id) == edited
        await store.edit_message("main", batch[0].id, (text("again"),), states={"x": 10, "w": 11})
        assert store.head("main") == 12  # the edit and two state records
        info = await store.create_branch("side", "main")
        assert info == BranchInfo("side", "main", 12, 12)
        assert store.head("main") == 12
        m = await store.append_message("side", "user", body("user", 2))
        assert m.sequence == 13
        assert store.head("main") == 12
        m = await store.append_message("main", "user", body("user", 3))
        assert m.sequence == 13  # sequences are per branch
        heads = {b.name: b.head for b in store.branches()}
    async with open_store(store_path) as store:
        assert {b.name: b.head for b in store.branches()} == heads
        assert (await store.append_message("main", "user", body("user", 4))).sequence == 14
        assert await store.set_state("side", "k", 2) == 14


async def test_message_ids_are_unique_and_never_reused(store_path):
    """3.1: message ids are unique in the store, across branches, and never reused, also after
    reopening (even when the newest records before closing were edits, states or branches)."""
    seen: list[str] = []
    async with open_store(store_path) as store:
        for i in range(5):
            seen.append((await store.append_message("main", "user", body("user", i))).id)
        await store.create_branch("side", "main", at_sequence=2)
        for i in range(3):
            seen.append((await store.append_message("side", "user", body("user", i))).id)
        seen.extend(m.id for m in await store.append_messages("main", [("u", body("u", i), None) for i in range(4)]))
        await store.edit_message("main", seen[0], (text("edited"),))
        await store.set_state("main", "k", 1)
        await store.create_branch("last", "side")
    assert len(set(seen)) == len(seen)
    async with open_store(store_path) as store:
        new = [(await store.append_message(b, "user", body("user", 9))).id for b in ("main", "side", "last")]
        assert not set(new) & set(seen)
        assert len(set(new)) == 3
        seen.extend(new)
    async with open_store(store_path) as store:
        all_ids = {m.id for b in store.branches() for m in store.messages(b.name)}
        assert all_ids == set(seen)
        newest = (await store.append_message("main", "user", body("user", 10))).id
        assert newest not in seen


# ==============================================================================================
# 3. Branch visibility (S2, 0 "branch", 3.3.1 BranchInfo)
# ==============================================================================================


async def test_child_sees_parent_as_of_the_fork_and_nothing_later(store_path):
    """S2: a child sees the parent's messages, edits and state as of the fork and nothing the
    parent writes after it (messages, edits, states); the parent never sees the child's writes
    (messages, edits of shared messages, states); the child continues the sequence from the fork
    point. Everything holds after reopening."""
    async with open_store(store_path) as store:
        m1 = await store.append_message("main", "user", body("user", 1))
        m2 = await store.append_message("main", "user", body("user", 2))
        await store.set_states("main", {"a": 1, "shared": "before"})
        m1v1 = await store.edit_message("main", m1.id, (text("m1 v1"),))
        fork_at = store.head("main")
        info = await store.create_branch("child", "main")
        assert info == BranchInfo("child", "main", fork_at, fork_at)

        # the parent writes after the fork
        m3 = await store.append_message("main", "user", body("user", 3))
        m1v2 = await store.edit_message("main", m1.id, (text("m1 v2"),))
        await store.edit_message("main", m2.id, (text("m2 parent edit"),))
        await store.set_states("main", {"a": 2, "b": "parent only"})

        # the child writes
        c1 = await store.append_message("child", "user", body("child", 1))
        assert c1.sequence == fork_at + 1
        await store.edit_message("child", m2.id, (text("m2 child edit"),))
        await store.set_states("child", {"shared": "child", "c": "child only"})
        with pytest.raises(UnknownMessageError):
            await store.edit_message("child", m3.id, (text("not visible here"),))
        with pytest.raises(UnknownMessageError):
            await store.edit_message("main", c1.id, (text("not visible here"),))

        def check() -> None:
            child = store.messages("child")
            assert [m.id for m in child] == [m1.id, m2.id, c1.id]
            assert child[0] == m1v1
            assert child[1].content == (text("m2 child edit"),)
            assert child[1].sequence == m2.sequence
            assert store.get_message("child", m3.id) is None
            assert store.get_state("child", "a") == 1
            assert store.get_state("child", "b") is None
            assert store.state_items("child") == {"a": 1, "shared": "child", "c": "child only"}
            assert store.head("child") == fork_at + 4
            assert store.length("child") == 3

            main = store.messages("main")
            assert [m.id for m in main] == [m1.id, m2.id, m3.id]
            assert main[0] == m1v2
            assert main[1].content == (text("m2 parent edit"),)
            assert store.get_message("main", c1.id) is None
            assert store.state_items("main") == {"a": 2, "b": "parent only", "shared": "before"}
            assert store.head("main") == fork_at + 5
            assert store.branch_info("child").fork_sequence == fork_at

        check()
    async with open_store(store_path) as store:
        check()
        # writing continues on both, each from its own head
        assert (await store.append_message("child", "u", body("u", 9))).sequence == fork_at + 5
        assert (await store.append_message("main", "u", body("u", 9))).sequence == fork_at + 6


async def test_branch_at_an_earlier_sequence_sees_only_records_up_to_it(store_path):
    """S2, 3.3.1: ``create_branch(name, parent, at_sequence=k)`` gives a branch that sees only the
    parent's records with sequence <= k: messages, edits and state records; its head is k and its
    first write takes k + 1. Checked for every k from 0 to the head, live and after reopen."""
    async with open_store(store_path) as store:
        m1 = await store.append_message("main", "u", body("u", 1))  # 1
        await store.set_state("main", "s", "one")  # 2
        m2 = await store.append_message("main", "u", body("u", 2))  # 3
        await store.edit_message("main", m1.id, (text("m1 edited"),))  # 4
        await store.set_state("main", "s", "two")  # 5
        m3 = await store.append_message("main", "u", body("u", 3))  # 6
        await store.edit_message("main", m1.id, (text("m1 edited twice"),), states={"t": 1})  # 7, 8
        head = store.head("main")
        assert head == 8

        def expected(k: int) -> tuple[list[tuple[str, tuple]], dict[str, Any]]:
            messages = []
            if k >= 1:
                m1_content = m1.content if k < 4 else (text("m1 edited"),) if k < 7 else (text("m1 edited twice"),)
                messages.append((m1.id, m1_content))
            if k >= 3:
                messages.append((m2.id, m2.content))
            if k >= 6:
                messages.append((m3.id, m3.content))
            states: dict[str, Any] = {}
            if k >= 2:
                states["s"] = "one" if k < 5 else "two"
            if k >= 8:
                states["t"] = 1
            return messages, states

        for k in range(head + 1):
            info = await store.create_branch(f"at{k}", "main", at_sequence=k)
            assert info == BranchInfo(f"at{k}", "main", k, k)
        # the parent keeps writing; none of it reaches the branches
        await store.append_message("main", "u", body("u", 4))
        await store.edit_message("main", m2.id, (text("late edit"),))
        await store.set_state("main", "s", "late")

        def check() -> None:
            for k in range(head + 1):
                name = f"at{k}"
                messages, states = expected(k)
                got = store.messages(name)
                assert [(m.id, m.content) for m in got] == messages, name
                assert [m.sequence for m in got] == [m.sequence for m in (m1, m2, m3)][: len(got)]
                assert store.state_items(name) == states, name
                assert store.head(name) == k

        check()
        sequences = {}
        for k in range(head + 1):
            sequences[k] = (await store.append_message(f"at{k}", "u", body("u", 100 + k))).sequence
        assert sequences == {k: k + 1 for k in range(head + 1)}
    async with open_store(store_path) as store:
        for k in range(head + 1):
            assert store.messages(f"at{k}")[-1].sequence == k + 1
            assert [m.id for m in store.messages(f"at{k}")[:-1]] == [i for i, _ in expected(k)[0]]
            assert store.state_items(f"at{k}") == expected(k)[1]


async def test_grandchildren(store_path):
    """S2: a grandchild forked from a child sees the grandparent only up to the child's fork
    point and the child up to its own fork point, including when that point lies in the range the
    child inherited (``at_sequence`` below the child's fork point)."""
    async with open_store(store_path) as store:
        g = [await store.append_message("main", "g", body("g", i)) for i in range(3)]  # 1..3
        await store.set_state("main", "k", "main")  # 4
        await store.create_branch("child", "main")  # forked at 4
        c1 = await store.append_message("child", "c", body("c", 1))  # 5
        await store.edit_message("child", g[0].id, (text("child edits g0"),))  # 6
        await store.set_state("child", "k", "child")  # 7
        c2 = await store.append_message("child", "c", body("c", 2))  # 8
        # main keeps going, unseen by both
        late = await store.append_message("main", "g", body("g", 99))
        await store.edit_message("main", g[1].id, (text("main edits g1 late"),))

        await store.create_branch("gc_head", "child")
        await store.create_branch("gc_6", "child", at_sequence=6)
        await store.create_branch("gc_5", "child", at_sequence=5)
        await store.create_branch("gc_2", "child", at_sequence=2)  # inside the inherited range
        await store.create_branch("ggc", "gc_6", at_sequence=5)
        gc = await store.append_message("gc_head", "x", body("x", 1))
        await store.edit_message("gc_head", c1.id, (text("grandchild edits c1"),))
        await store.set_state("gc_head", "k", "grandchild")

        def ids(branch: str) -> list[str]:
            return [m.id for m in store.messages(branch)]

        def check() -> None:
            assert ids("gc_head") == [g[0].id, g[1].id, g[2].id, c1.id, c2.id, gc.id]
            assert store.messages("gc_head")[0].content == (text("child edits g0"),)
            assert store.messages("gc_head")[1].content == g[1].content
            assert store.messages("gc_head")[3].content == (text("grandchild edits c1"),)
            assert store.get_state("gc_head", "k") == "grandchild"
            assert store.messages("child")[3] == c1  # the grandchild's edit stays there
            assert store.get_state("child", "k") == "child"

            assert ids("gc_6") == [g[0].id, g[1].id, g[2].id, c1.id]
            assert store.messages("gc_6")[0].content == (text("child edits g0"),)
            assert store.get_state("gc_6", "k") == "main"

            assert ids("gc_5") == [g[0].id, g[1].id, g[2].id, c1.id]
            assert store.messages("gc_5")[0].content == g[0].content
            assert ids("ggc") == ids("gc_5")
            assert store.messages("ggc")[0].content == g[0].content

            assert ids("gc_2") == [g[0].id, g[1].id]
            assert store.get_state("gc_2", "k") is None
            assert store.branch_info("gc_2") == BranchInfo("gc_2", "child", 2, 2)

            for branch in ("child", "gc_head", "gc_6", "gc_5", "gc_2", "ggc"):
                assert store.get_message(branch, late.id) is None
            assert store.messages("main")[1].content == (text("main edits g1 late"),)
            assert store.get_message("main", c1.id) is None

        check()
        before = snapshot(store)
    async with open_store(store_path) as store:
        check()
        assert snapshot(store) == before


async def test_refused_branch_operations_write_nothing(store_path):
    """S2, E: ``BranchExistsError``, ``UnknownBranchError`` and bad fork points are refused
    before anything changes: heads, the branch list, commits and listeners are untouched, and
    nothing of them is found after reopening. Writes to an unknown branch, edits of unknown
    messages, bad metadata and bad state values are refused the same way."""
    async with open_store(store_path) as store:
        await store.append_message("main", "u", body("u", 1))
        await store.create_branch("child", "main")
        await store.set_state("child", "k", 1)
        events: list[Any] = []
        store.add_listener(events.append)
        before = snapshot(store)
        commits = store.statistics().commits

        refusals: list[tuple[type[BaseException], Callable[[], Any]]] = [
            (BranchExistsError, lambda: store.create_branch("main", "child")),
            (BranchExistsError, lambda: store.create_branch("child", "main")),
            (UnknownBranchError, lambda: store.create_branch("new", "nowhere")),
            (UnknownBranchError, lambda: store.create_branch("new", "nowhere", at_sequence=0)),
            (ValueError, lambda: store.create_branch("new", "main", at_sequence=store.head("main") + 1)),
            (ValueError, lambda: store.create_branch("new", "main", at_sequence=-1)),
            (ValueError, lambda: store.create_branch("", "main")),
            (UnknownBranchError, lambda: store.append_message("nowhere", "u", body("u", 2))),
            (UnknownBranchError, lambda: store.append_messages("nowhere", [("u", body("u", 2), None)])),
            (UnknownBranchError, lambda: store.set_states("nowhere", {"k": 1})),
            (UnknownBranchError, lambda: store.edit_message("nowhere", "1", (text("x"),))),
            (UnknownMessageError, lambda: store.edit_message("main", "999", (text("x"),))),
            (MalformedContentError, lambda: store.append_message("main", "u", body("u", 2), {"bad": {1, 2}})),
            (MalformedContentError, lambda: store.append_message("main", "u", body("u", 2), ["not", "an", "object"])),
            (
                MalformedContentError,
                lambda: store.append_messages("main", [("u", body("u", 2), None), ("u", body("u", 3), {"x": math.nan})]),
            ),
            (ValueError, lambda: store.set_states("main", {"ok": 1, "bad": math.inf})),
            (ValueError, lambda: store.set_states("main", {"ok": 1, "": 2})),
            (ValueError, lambda: store.set_state("main", "obj", object())),
            (ValueError, lambda: store.edit_message("main", "1", (text("x"),), states={"bad": math.nan})),
        ]
        for error, call in refusals:
            with pytest.raises(error):
                await call()
            assert snapshot(store) == before
            assert store.statistics().commits == commits
            assert events == []
    async with open_store(store_path) as store:
        assert snapshot(store) == before


async def test_randomised_branch_histories_match_a_reference_model(store_path):
    """S2, 0 (sequence), 3.1: random interleavings of appends, edits (with and without states),
    state writes and forks (at the head and at random earlier points) on random branches agree
    with a naive copy-everything reference model, live and after reopening: every branch's
    messages (ids, sequences, content), state records and info. Each write raises its branch's
    head by its record count; message ids stay unique."""
    for seed in range(3):
        path = sibling_store(store_path, str(seed))
        rng = random.Random(seed)
        ref = _RefModel()
        ids: list[str] = []
        async with open_store(path) as store:
            for step in range(160):
                branch = rng.choice(sorted(ref.branches))
                head = store.head(branch)
                op = rng.random()
                visible = ref.messages(branch)
                if op < 0.35 or not visible:
                    count = rng.randint(1, 3)
                    items = [(f"p{rng.randint(0, 3)}", _random_content(rng, f"{seed}/{step}/{i}"), {"i": i}) for i in range(count)]
                    messages = await store.append_messages(branch, items)
                    assert [m.sequence for m in messages] == list(range(head + 1, head + 1 + count))
                    for m in messages:
                        ref.add(branch, "message", m.id, (m.participant, m.content, m.sequence))
                        ids.append(m.id)
                    assert store.head(branch) == head + count
                elif op < 0.6:
                    target = rng.choice(visible)[0]
                    content = _random_content(rng, f"edit {seed}/{step}")
                    states = {f"k{rng.randint(0, 4)}": step} if rng.random() < 0.3 else {}
                    edited = await store.edit_message(branch, target, content, states=states or None)
                    assert edited.id == target
                    ref.add(branch, "edit", target, content)
                    for key, value in states.items():
                        ref.add(branch, "state", key, value)
                    assert store.head(branch) == head + 1 + len(states)
                elif op < 0.85:
                    states = {f"k{rng.randint(0, 4)}": [step, i] for i in range(rng.randint(1, 3))}
                    assert await store.set_states(branch, states) == head + len(states)
                    for key, value in states.items():
                        ref.add(branch, "state", key, value)
                else:
                    at = None if rng.random() < 0.5 else rng.randint(0, head)
                    name = f"b{step}"
                    info = await store.create_branch(name, branch, at_sequence=at)
                    fork = head if at is None else at
                    assert info == BranchInfo(name, branch, fork, fork)
                    assert store.head(branch) == head
                    ref.fork(name, branch, fork)
                if step % 20 == 0:
                    ref.check(store)
            ref.check(store)
        assert len(set(ids)) == len(ids)
        async with open_store(path) as store:
            ref.check(store)
            for name in sorted(ref.branches):
                m = await store.append_message(name, "after", body("after", 0))
                assert m.sequence == ref.head(name) + 1
                assert m.id not in ids
                ids.append(m.id)


def _random_content(rng: random.Random, label: str) -> tuple[TextBlock, ...]:
    audiences = [None, None, ("ann",), ("bob",), ("ann", "bob")]
    return tuple(text(f"{label} block {i}", rng.choice(audiences)) for i in range(rng.randint(1, 3)))


class _RefModel:
    """A naive branch model: a branch's visible records are its parent's visible records up to the
    fork point, then its own. Sequences rise along a branch's chain, so "newest" is "last"."""

    def __init__(self) -> None:
        self.branches: dict[str, tuple[str | None, int]] = {"main": (None, 0)}
        self.own: dict[str, list[tuple[int, str, str, Any]]] = {"main": []}

    def head(self, branch: str) -> int:
        own = self.own[branch]
        return own[-1][0] if own else self.branches[branch][1]

    def add(self, branch: str, kind: str, key: str, value: Any) -> None:
        self.own[branch].append((self.head(branch) + 1, kind, key, value))

    def fork(self, name: str, parent: str, at: int) -> None:
        self.branches[name] = (parent, at)
        self.own[name] = []

    def records(self, branch: str, limit: float = math.inf) -> list[tuple[int, str, str, Any]]:
        parent, fork = self.branches[branch]
        inherited = self.records(parent, min(fork, limit)) if parent is not None else []
        return inherited + [r for r in self.own[branch] if r[0] <= limit]

    def messages(self, branch: str) -> list[tuple[str, int, str, tuple]]:
        order: list[str] = []
        found: dict[str, list[Any]] = {}
        for _seq, kind, key, value in self.records(branch):
            if kind == "message":
                participant, content, sequence = value
                order.append(key)
                found[key] = [key, sequence, participant, content]
            elif kind == "edit":
                found[key][3] = value
        return [tuple(found[key]) for key in order]  # type: ignore[misc]

    def states(self, branch: str) -> dict[str, Any]:
        return {key: value for _seq, kind, key, value in self.records(branch) if kind == "state"}

    def check(self, store) -> None:
        assert {b.name for b in store.branches()} == set(self.branches)
        for name, (parent, fork) in self.branches.items():
            assert store.branch_info(name) == BranchInfo(name, parent, fork, self.head(name)), name
            expected = self.messages(name)
            got = [(m.id, m.sequence, m.participant, m.content) for m in store.messages(name)]
            assert got == expected, name
            assert store.length(name) == len(expected)
            for message_id, *_rest in expected:
                assert store.get_message(name, message_id).id == message_id
            assert store.state_items(name) == self.states(name), name


# ==============================================================================================
# 4. Concurrent writers and group commit (S1, S5, D2)
# ==============================================================================================


async def test_100_concurrent_writers_are_durable_dense_and_share_commits(store_path):
    """S1, S5, D2: 100 writers appending at once through one store all return durable messages
    with unique sequences 1..100; they shared commits (fewer commits than writes); after reopen
    every message is there with its sequence and content."""
    written: dict[int, Message] = {}
    async with open_store(store_path) as store:
        commits = store.statistics().commits

        async def writer(i: int) -> None:
            written[i] = await store.append_message("main", f"writer{i}", body(f"writer{i}", i), {"i": i})

        async with trio.open_nursery() as nursery:
            for i in range(100):
                nursery.start_soon(writer, i)
        assert len(written) == 100
        assert sorted(m.sequence for m in written.values()) == list(range(1, 101))
        assert len({m.id for m in written.values()}) == 100
        assert store.head("main") == 100
        assert store.statistics().commits - commits < 100
    async with open_store(store_path) as store:
        assert store.head("main") == 100
        for message in written.values():
            assert store.get_message("main", message.id) == message
        assert [m.sequence for m in store.messages("main")] == list(range(1, 101))


async def test_concurrent_mixed_writes_keep_the_sequence_dense(store_path):
    """0 (sequence), S1: concurrent appends, edits and state writes on two branches each take a
    distinct sequence; each branch's head equals its number of records, and reopen agrees."""
    async with open_store(store_path) as store:
        base = [await store.append_message("main", "u", body("u", i)) for i in range(5)]
        await store.create_branch("side", "main")
        done: list[tuple[str, int]] = []

        async def appender(branch: str, i: int) -> None:
            done.append((branch, (await store.append_message(branch, "a", body("a", i))).sequence))

        async def editor(branch: str, i: int) -> None:
            await store.edit_message(branch, base[i % 5].id, (text(f"{branch} edit {i}"),))
            done.append((branch, -1))

        async def stater(branch: str, i: int) -> None:
            await store.set_states(branch, {f"k{i}": i, f"j{i}": [i]})
            done.append((branch, -2))

        async with trio.open_nursery() as nursery:
            for i in range(20):
                for branch in ("main", "side"):
                    nursery.start_soon(appender, branch, i)
                    nursery.start_soon(editor, branch, i)
                    nursery.start_soon(stater, branch, i)
        for branch in ("main", "side"):
            seqs = sorted(s for b, s in done if b == branch and s > 0)
            assert len(set(seqs)) == 20
            assert store.head(branch) == 5 + 20 * (1 + 1 + 2)
            assert len(store.state_items(branch)) == 40
        before = snapshot(store)
    async with open_store(store_path) as store:
        assert snapshot(store) == before


async def test_batches_larger_than_one_statement_are_durable(store_path):
    """S1, S5: one append of 2,500 messages, and concurrent appends adding up to more than one
    statement's worth of rows, are written atomically and read back whole after reopen."""
    async with open_store(store_path) as store:
        big = await store.append_messages("main", [("u", body("u", i), {"i": i}) for i in range(2500)])
        assert [m.sequence for m in big] == list(range(1, 2501))

        async def chunk(start: int) -> None:
            await store.append_messages("main", [("v", body("v", start + i), None) for i in range(900)])

        async with trio.open_nursery() as nursery:
            for start in range(0, 2700, 900):
                nursery.start_soon(chunk, start)
        assert store.head("main") == 5200
        before = snapshot(store)
    async with open_store(store_path) as store:
        assert snapshot(store) == before
        assert store.messages("main", 2499, 2500)[0] == big[-1]


# ==============================================================================================
# 5. MessageView (A3, A6, R5 "check")
# ==============================================================================================


def _expected_view(store, branch: str, reader: str | None, view_filter=None) -> list[Message]:
    """An independent statement of A2/A3/A4.1 for top-level text and thinking blocks."""
    out = []
    for message in store.messages(branch):
        if view_filter is not None and not view_filter(message):
            continue
        kept = []
        hidden = False
        for block in message.content:
            if block.audience is None:
                kept.append(block)
            elif reader is not None and reader in block.audience:
                kept.append(attrs.evolve(block, audience=None))
            else:
                hidden = True
        if hidden:
            kept = [b for b in kept if not isinstance(b, ThinkingBlock)]
        if kept:
            out.append(attrs.evolve(message, content=tuple(kept)))
    return out


def assert_view_agrees(view: MessageView, expected: list[Message] | None = None) -> None:
    """``length/get/get_from/get_tail/sequence_of/position_of/at/id_at/slice`` agree with
    ``get_all`` (and ``get_all`` with ``expected`` when given)."""
    everything = view.get_all()
    if expected is not None:
        assert list(everything) == expected
    assert view.length() == len(everything)
    assert view.get_from(0) == everything
    assert view.slice(0) == everything
    for index, message in enumerate(everything):
        assert view.get(message.id) == message
        assert view.position_of(message.id) == index
        assert view.sequence_of(message.id) == message.sequence
        assert view.at(index) == message
        assert view.id_at(index) == message.id
        assert view.get_from(index) == everything[index:]
        assert view.get_from(index - len(everything)) == everything[index:]
    for count in range(len(everything) + 2):
        assert view.get_tail(count) == (everything[-count:] if count else ())
    sequences = [m.sequence for m in everything]
    assert sequences == sorted(set(sequences))


async def test_plain_view_returns_the_stored_objects(store_path):
    """A6: with no audience ever stored and no filter, the view is plain and ``get_all()``
    returns the stored message objects themselves (identity), edits included, before and after
    reopen; the reads agree with each other."""
    async with open_store(store_path) as store:
        for i in range(5):
            await store.append_message("main", "u", (text(f"m{i}"), thinking(f"t{i}", "sig")))
        view = MessageView(store.model, "main", reader="ann")
        assert view.plain
        stored = store.messages("main")
        assert all(a is b for a, b in zip(view.get_all(), stored, strict=True))
        edited = await store.edit_message("main", stored[2].id, (text("edited"),))
        assert view.plain
        assert view.get_all()[2] is store.get_message("main", edited.id)
        assert view.get_all()[2].content == (text("edited"),)
        await store.append_message("main", "u", (text("new"),))
        assert all(a is b for a, b in zip(view.get_all(), store.messages("main"), strict=True))
        assert view.get(edited.id) is store.get_message("main", edited.id)
        assert_view_agrees(view, store.messages("main"))
        assert MessageView(store.model, "main", reader=None).plain
    async with open_store(store_path) as store:
        view = MessageView(store.model, "main", reader="ann")
        assert view.plain
        assert all(a is b for a, b in zip(view.get_all(), store.messages("main"), strict=True))
        assert_view_agrees(view, store.messages("main"))


async def test_first_audience_switches_to_the_reader_view(store_path):
    """A3, A6: after a block with an audience is stored, reads switch to the reader view: a
    message wholly for another reader is left out; a mixed one keeps only the reader's blocks
    (without their audience field, thinking dropped when a block was hidden, A4.1); ids and
    sequences are kept; positions index the view."""
    async with open_store(store_path) as store:
        m1 = await store.append_message("main", "u", (text("for all"),))
        view = MessageView(store.model, "main", reader="ann")
        nobody = MessageView(store.model, "main", reader=None)
        assert view.plain and view.get_all()[0] is m1
        m2 = await store.append_message("main", "u", (text("bob only", ("bob",)),))
        assert not view.plain
        m3 = await store.append_message("main", "u", (thinking("t", "sig"), text("all"), text("bob", ("bob",))))
        m4 = await store.append_message("main", "u", (text("ann", ("ann",)), thinking("t2", "sig2")))
        m5 = await store.append_message("main", "u", (text("ann+bob", ("bob", "ann")),))
        got = view.get_all()
        assert [m.id for m in got] == [m1.id, m3.id, m4.id, m5.id]
        assert [m.sequence for m in got] == [m1.sequence, m3.sequence, m4.sequence, m5.sequence]
        assert got[0] is m1  # untouched messages stay the stored objects
        assert got[1].content == (text("all"),)  # thinking left out: a block was hidden
        assert got[2].content == (text("ann"), thinking("t2", "sig2"))
        assert got[3].content == (text("ann+bob"),)
        assert all(b.audience is None for m in got for b in m.content)
        assert view.get(m2.id) is None
        assert view.position_of(m2.id) is None
        assert view.sequence_of(m2.id) is None
        assert view.position_of(m4.id) == 2
        assert view.stored(m2.id) == m2  # the stored form, audience included
        assert_view_agrees(view, _expected_view(store, "main", "ann"))
        assert [m.id for m in nobody.get_all()] == [m1.id, m3.id]
        assert_view_agrees(nobody, _expected_view(store, "main", None))
        assert_view_agrees(MessageView(store.model, "main", reader="bob"), _expected_view(store, "main", "bob"))
        # the stored form is untouched
        assert store.get_message("main", m4.id).content[0].audience == ("ann",)
    async with open_store(store_path) as store:
        for reader in ("ann", "bob", None):
            assert_view_agrees(MessageView(store.model, "main", reader=reader), _expected_view(store, "main", reader))


async def test_view_filter_sees_stored_messages(store_path):
    """A3: ``view_filter`` runs before the reader view and sees messages as stored, audience
    included; a view with a filter is never plain."""
    async with open_store(store_path) as store:
        await store.append_message("main", "alice", (text("hello"),))
        await store.append_message("main", "bot", (text("for bob", ("bob",)), text("for ann", ("ann",))))
        await store.append_message("main", "carol", (text("ann only", ("ann",)),))
        seen: list[Message] = []

        def only_not_carol(message: Message) -> bool:
            seen.append(message)
            return message.participant != "carol"

        view = MessageView(store.model, "main", reader="ann", view_filter=only_not_carol)
        assert not view.plain
        got = view.get_all()
        assert [m.participant for m in got] == ["alice", "bot"]
        assert got[1].content == (text("for ann"),)
        assert seen == store.messages("main")
        assert seen[1].content[0].audience == ("bob",)
        assert_view_agrees(view, _expected_view(store, "main", "ann", only_not_carol))
        await store.append_message("main", "carol", (text("late"),))
        await store.append_message("main", "dave", (text("later"),))
        assert_view_agrees(view, _expected_view(store, "main", "ann", only_not_carol))


async def test_edits_are_reflected_in_a_live_view(store_path):
    """A3: edits reach a view that was already read: an edit that hides a whole message from
    the reader removes it; one that widens a hidden message inserts it at its place in sequence
    order; one that changes visible content replaces it in place."""
    async with open_store(store_path) as store:
        ms = [await store.append_message("main", "u", (text(f"m{i}"),)) for i in range(5)]
        hidden = await store.append_message("main", "u", (text("bob only", ("bob",)),))
        tail = await store.append_message("main", "u", (text("tail"),))
        view = MessageView(store.model, "main", reader="ann")
        assert [m.id for m in view.get_all()] == [m.id for m in ms] + [tail.id]

        await store.edit_message("main", ms[1].id, (text("now bob only", ("bob",)),))
        assert [m.id for m in view.get_all()] == [ms[0].id, ms[2].id, ms[3].id, ms[4].id, tail.id]
        assert view.get(ms[1].id) is None
        assert_view_agrees(view, _expected_view(store, "main", "ann"))

        await store.edit_message("main", hidden.id, (text("for everyone now"),))
        assert view.position_of(hidden.id) == 4
        assert view.get_all()[4].content == (text("for everyone now"),)
        assert view.get_all()[4].sequence == hidden.sequence
        assert_view_agrees(view, _expected_view(store, "main", "ann"))

        await store.edit_message("main", ms[1].id, (text("back", ("ann",)), text("not yours", ("bob",))))
        assert view.position_of(ms[1].id) == 1
        assert view.get(ms[1].id).content == (text("back"),)
        await store.edit_message("main", ms[3].id, (text("m3 changed"),))
        assert view.get_all()[3].content == (text("m3 changed"),)
        assert_view_agrees(view, _expected_view(store, "main", "ann"))

        # a branch forked before those edits reads the versions it inherited
        await store.create_branch("other", "main", at_sequence=ms[4].sequence)
        other = MessageView(store.model, "other", reader="ann")
        assert_view_agrees(other, _expected_view(store, "other", "ann"))


async def test_randomised_live_views_match_a_fresh_reading(store_path):
    """A3, A6: long-lived views (for ann, bob and no reader, with and without a filter), read
    between random appends and edits (audiences added, removed, widened), always agree with an
    independent statement of the reader view and with a freshly built view; also after reopen."""
    for seed in range(3):
        rng = random.Random(seed)
        path = sibling_store(store_path, str(seed))

        def flt(m: Message) -> bool:
            return m.participant != "p0"

        async with open_store(path) as store:
            views = [(MessageView(store.model, "main", reader=r, view_filter=f), r, f) for r in ("ann", "bob", None) for f in (None, flt)]
            ids: list[str] = []
            for step in range(80):
                if not ids or rng.random() < 0.55:
                    content = _random_view_content(rng, step, allow_audience=step > 10)
                    ids.append((await store.append_message("main", f"p{rng.randint(0, 3)}", content)).id)
                else:
                    await store.edit_message("main", rng.choice(ids), _random_view_content(rng, step, True))
                if rng.random() < 0.5:
                    view, reader, f = rng.choice(views)
                    expected = _expected_view(store, "main", reader, f)
                    assert list(view.get_all()) == expected
                    assert view.length() == len(expected)
            for view, reader, f in views:
                assert_view_agrees(view, _expected_view(store, "main", reader, f))
                fresh = MessageView(store.model, "main", reader=reader, view_filter=f)
                assert fresh.get_all() == view.get_all()
        async with open_store(path) as store:
            for reader in ("ann", "bob", None):
                for f in (None, flt):
                    view = MessageView(store.model, "main", reader=reader, view_filter=f)
                    assert_view_agrees(view, _expected_view(store, "main", reader, f))


def _random_view_content(rng: random.Random, step: int, allow_audience: bool) -> tuple:
    audiences = [None, ("ann",), ("bob",), ("ann", "bob")] if allow_audience else [None]
    blocks: list[Any] = []
    if rng.random() < 0.3:
        blocks.append(thinking(f"think {step}", "sig", rng.choice(audiences)))
    for i in range(rng.randint(1, 3)):
        blocks.append(text(f"step {step} block {i}", rng.choice(audiences)))
    return tuple(blocks)


@pytest.mark.parametrize("mode", ["plain", "reader view"])
async def test_check_is_called_on_every_read(store_path, mode):
    """R5 (via A3's view): the ``check`` callable runs on every read of the view; while it
    raises, every read raises (length, get_all, get, get_from, get_tail, sequence_of,
    position_of, at, id_at, slice, stored), in the plain mode and in the reader-view mode."""
    async with open_store(store_path) as store:
        audience = ("ann",) if mode == "reader view" else None
        messages = [await store.append_message("main", "u", (text(f"m{i}", audience),)) for i in range(3)]
        calls = 0
        stale = False

        def check() -> None:
            nonlocal calls
            calls += 1
            if stale:
                raise RuntimeError("stale manager")

        view = MessageView(store.model, "main", reader="ann", check=check)
        assert view.plain == (mode == "plain")
        target = messages[1].id
        reads: dict[str, Callable[[], Any]] = {
            "length": view.length,
            "get_all": view.get_all,
            "get": lambda: view.get(target),
            "get_from": lambda: view.get_from(1),
            "get_tail": lambda: view.get_tail(2),
            "get_tail(0)": lambda: view.get_tail(0),
            "sequence_of": lambda: view.sequence_of(target),
            "position_of": lambda: view.position_of(target),
            "at": lambda: view.at(0),
            "id_at": lambda: view.id_at(0),
            "slice": lambda: view.slice(0, 2),
            "stored": lambda: view.stored(target),
        }
        for name, read in reads.items():
            before = calls
            read()
            assert calls > before, name
        stale = True
        for read in reads.values():
            with pytest.raises(RuntimeError, match="stale manager"):
                read()
        stale = False
        assert view.sequence_of(target) == messages[1].sequence


@pytest.mark.parametrize(
    "read",
    ["thinking_dropped", "hidden_tool_ids"],
)
async def test_auxiliary_view_reads_are_checked(store_path, read):
    """R5, A4.1, STRATEGIES 1.6: ``thinking_dropped`` and ``hidden_tool_ids`` are reads of the
    view (they tell what the reader view hid) and, as the class documents ("every read first
    calls check"), are refused for a stale manager. Regression for thinking_dropped: it used to
    skip the check."""
    async with open_store(store_path) as store:
        m = await store.append_message("main", "u", (thinking("t", "sig"), text("x", ("bob",)), text("y"), tool_use("c1", "f", {})))
        calls = 0

        def check() -> None:
            nonlocal calls
            calls += 1
            if calls > 1:
                raise RuntimeError("stale manager")

        view = MessageView(store.model, "main", reader="ann", check=check)
        assert view.length() == 1  # one good read, then the manager goes stale
        reads = {"thinking_dropped": lambda: view.thinking_dropped(m.id), "hidden_tool_ids": view.hidden_tool_ids}
        with pytest.raises(RuntimeError, match="stale manager"):
            reads[read]()


async def test_plain_view_survives_reopen_when_audience_is_only_data(store_path):
    """A6, W1: a key named ``audience`` inside a tool call's input or in metadata is data, not an
    audience: a branch with no block with an audience stays on the plain fast path, live and
    after reopening. Regression: replay used to treat any body holding the text ``"audience"``
    as holding an audience."""
    async with open_store(store_path) as store:
        await store.append_message("main", "u", (tool_use("c1", "f", {"audience": ["x"]}),), {"audience": "public"})
        await store.append_message("main", "u", (tool_result("c1", "ok"),))
        assert MessageView(store.model, "main", reader="ann").plain
    async with open_store(store_path) as store:
        view = MessageView(store.model, "main", reader="ann")
        assert all(a is b for a, b in zip(view.get_all(), store.messages("main"), strict=True))
        assert view.plain


# ==============================================================================================
# 7 (in process). One owner per store file (S4)
# ==============================================================================================


@pytest.mark.sqlite_only("one open per store file; on PostgreSQL several stores share a schema by design (test_postgres_store.py)")
async def test_second_open_in_the_same_process_is_refused(store_path):
    """S4, 0 (store): a second ``open_store`` of a file already open in this process is refused
    with ``StoreLockedError`` (naming the path); the first keeps working, and once it is closed
    the file opens again with everything it wrote."""
    async with open_store(store_path) as first:
        await first.append_message("main", "u", body("u", 1))
        with pytest.raises(StoreLockedError) as refused:
            async with open_store(store_path):
                pytest.fail("a second open must be refused")  # pragma: no cover
        assert store_path in str(refused.value)
        await first.append_message("main", "u", body("u", 2))
        # :memory: stores are independent of each other and of files
        async with open_store(":memory:") as a, open_store(":memory:") as b:
            await a.append_message("main", "u", body("u", 1))
            assert b.head("main") == 0
    async with open_store(store_path) as again:
        assert [m.sequence for m in again.messages("main")] == [1, 2]


# ==============================================================================================
# 7b. The durability settings in force (S1)
# ==============================================================================================


async def _pragma(store, name: str) -> Any:
    """A SQLite setting as the store's own connection has it. ``synchronous`` is a setting of
    the connection, so no other connection can read it: this uses the store's internals
    (``_driver``)."""
    return (await store._journal._driver.execute(f"PRAGMA {name}"))[0][0]


@pytest.mark.sqlite_only("reads SQLite PRAGMAs (synchronous, WAL) through the store's driver and with sqlite3")
async def test_the_synchronous_setting_in_force(store_path):
    """S1 (uses internals: it asks the store's own connection). A store opens in WAL mode with
    ``synchronous=NORMAL`` (1) by default, which survives a process crash; ``FULL`` (2) on
    request, which also survives a power loss; the setting is per open, so the next default open
    is NORMAL again; a runtime's store is NORMAL. The journal mode is a property of the file: a
    separate connection reads ``wal``."""
    async with open_store(store_path) as store:
        assert await _pragma(store, "synchronous") == 1
        assert await _pragma(store, "journal_mode") == "wal"
    async with open_store(store_path, synchronous="FULL") as store:
        assert await _pragma(store, "synchronous") == 2
        await store.append_message("main", "u", body("u", 1))
    async with open_store(store_path) as store:
        assert await _pragma(store, "synchronous") == 1
        assert [m.sequence for m in store.messages("main")] == [1]
    async with open_runtime(store_path) as rt:
        assert await _pragma(writable_store(rt), "synchronous") == 1
    separate = sqlite3.connect(store_path)
    try:
        assert separate.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        separate.close()


# ==============================================================================================
# 8. A failed commit stops the store (S1)
# ==============================================================================================


#: Why the tests that fake the store's driver run on SQLite alone.
FAKES_THE_SQLITE_DRIVER = (
    "replaces the SQLite driver's execute/close (internals) to fail or block a commit; "
    "test_postgres_store.py fails PostgreSQL commits by killing the connection"
)


def _fail_inserts(store, *, after: int = 0, gate: trio.Event | None = None) -> list[str]:
    """Make the store's driver fail: the ``after``+1-th INSERT (and every later one) raises,
    optionally only once ``gate`` is set. Uses the store's internals (``_driver``)."""
    original = store._journal._driver.execute
    seen: list[str] = []

    async def execute(sql: str, params=()):
        if sql.startswith("INSERT"):
            seen.append(sql)
            if len(seen) > after:
                if gate is not None:
                    await gate.wait()
                raise OSError("disk I/O error (simulated)")
        return await original(sql, params)

    store._journal._driver.execute = execute
    return seen


@pytest.mark.sqlite_only(FAKES_THE_SQLITE_DRIVER)
@pytest.mark.parametrize("batch", [1, 2500], ids=["one-statement", "torn-multi-statement"])
async def test_failed_commit_stops_the_store(store_path, batch):
    """S1 (uses internals: it replaces the store's ``_driver.execute`` to make a commit fail).
    A write whose commit fails raises ``StoreFailedError``; every later write raises it; reads
    raise it or show only what committed (regression: they used to show the lost write); leaving
    the block raises it (fail stop, loudly). Reopening shows exactly what committed before: a
    torn multi-statement batch (2,500 rows, its second INSERT failing) is rolled back whole."""
    async with open_store(store_path) as store:
        kept = await store.append_messages("main", [("u", body("u", i), None) for i in range(3)])
        await store.set_state("main", "k", "kept")
        await store.create_branch("side", "main")
        committed = snapshot(store)
    with pytest.raises(BaseException) as raised:  # noqa: B017 - checked below
        async with open_store(store_path) as store:
            assert snapshot(store) == committed
            _fail_inserts(store, after=1 if batch > 2000 else 0)
            with pytest.raises(StoreFailedError):
                await store.append_messages("main", [("u", body("u", 100 + i), None) for i in range(batch)])
            assert store.failed
            # reads either refuse or show only what committed, never the lost write
            for read in (lambda: snapshot(store), lambda: store.head("main"), lambda: store.messages("main")):
                try:
                    answer = read()
                except StoreFailedError:
                    continue
                assert answer in (committed, committed["main"][0].head, list(committed["main"][1]))
            for later in (
                lambda: store.append_message("main", "u", body("u", 200)),
                lambda: store.append_message("side", "u", body("u", 200)),
                lambda: store.set_state("main", "k", "lost"),
                lambda: store.edit_message("main", kept[0].id, (text("lost"),)),
                lambda: store.create_branch("lost", "main"),
            ):
                with pytest.raises(StoreFailedError):
                    await later()
    assert_failed_stop(raised.value)
    async with open_store(store_path) as store:
        assert snapshot(store) == committed
        m = await store.append_message("main", "u", body("u", 300))
        assert m.sequence == store.head("main") == committed["main"][0].head + 1
    async with open_store(store_path) as store:
        assert store.get_message("main", m.id) == m


@pytest.mark.sqlite_only(FAKES_THE_SQLITE_DRIVER)
async def test_write_queued_behind_a_failed_commit_raises(store_path):
    """S1 (uses internals: it replaces the store's ``_driver.execute`` so that a commit blocks,
    then fails). A write that joined the next batch while a failing commit was in flight, from a
    task outside the store's block, must raise ``StoreFailedError``, not wait forever.
    Regression: the committer used to fail only the batch it was writing."""
    results: dict[str, object] = {}
    gate = trio.Event()

    async def writer(store, name: str) -> None:
        try:
            results[name] = await store.append_message("main", name, body(name, 0))
        except StoreFailedError as exc:
            results[name] = exc

    async with trio.open_nursery() as outside:
        with pytest.raises(BaseException) as raised:  # noqa: B017 - checked below
            async with open_store(store_path) as store:
                await store.append_message("main", "u", body("u", 1))
                _fail_inserts(store, gate=gate)
                outside.start_soon(writer, store, "first")
                await trio.testing.wait_all_tasks_blocked()  # no thread is busy: the fake blocks
                outside.start_soon(writer, store, "queued")
                await trio.testing.wait_all_tasks_blocked()
                assert results == {}
                gate.set()
                await trio.sleep_forever()
        assert_failed_stop(raised.value)
        await trio.testing.wait_all_tasks_blocked()
        outside.cancel_scope.cancel()  # frees the queued writer if it is still waiting
    assert isinstance(results.get("first"), StoreFailedError)
    assert isinstance(results.get("queued"), StoreFailedError)


@pytest.mark.sqlite_only(FAKES_THE_SQLITE_DRIVER)
async def test_close_with_a_queued_write_from_outside_finishes(store_path):
    """S1, D2 (uses internals: it replaces the store's driver calls with in-memory fakes so that
    no thread is busy and the test can tell "blocked forever" from "busy"). Leaving
    ``open_store`` flushes the pending commit and closes, even when the write was queued (by a
    task outside the block) while a commit was in flight. Regression: the committer used to take
    the wake-up of that write and of the shutdown as one, commit the batch, then wait forever."""
    state: dict[str, Any] = {"closed": False, "exited": False}
    gate = trio.Event()
    leaving = trio.Event()
    results: dict[str, object] = {}

    async def writer(store, name: str) -> None:
        try:
            results[name] = await store.append_message("main", name, body(name, 0))
        except StoreFailedError as exc:  # pragma: no cover - a refusal would also be acceptable
            results[name] = exc

    async def owner(outside: trio.Nursery) -> None:
        async with open_store(store_path) as store:
            state["store"] = store
            original_close = store._journal._driver.close

            async def execute(sql: str, params=()):
                if sql.startswith("INSERT"):
                    await gate.wait()
                    return []
                raise AssertionError(sql)  # pragma: no cover

            async def close() -> None:
                state["closed"] = True
                await original_close()

            store._journal._driver.execute = execute
            store._journal._driver.close = close
            outside.start_soon(writer, store, "in-flight")
            await trio.testing.wait_all_tasks_blocked()  # the committer holds it, gated
            outside.start_soon(writer, store, "queued")
            await trio.testing.wait_all_tasks_blocked()  # the next batch holds it
            gate.set()  # leave the block with both still pending
            leaving.set()
        state["exited"] = True

    async with trio.open_nursery() as outside:
        outside.start_soon(owner, outside)
        await leaving.wait()  # from here on no driver call runs in a thread until the close
        for _ in range(3):
            await trio.testing.wait_all_tasks_blocked()
        hung = not state["closed"]
        if hung:
            # End the test instead of hanging it: wake the committer (internals) so that it sees
            # the shutdown. Cancelling instead would tear the asyncio loop down mid-close.
            state["store"]._wakeup.set()
    assert not hung, "leaving open_store never closed the driver"
    assert state["exited"]
    assert set(results) == {"in-flight", "queued"}


async def test_appending_no_messages_is_harmless(store_path):
    """S1, 3.1: appending an empty list of messages writes nothing and returns ``()``; the store
    keeps working. Regression: it used to commit ``INSERT ... VALUES`` with no rows and stop."""
    async with open_store(store_path) as store:
        await store.append_message("main", "u", body("u", 1))
        assert await store.append_messages("main", []) == ()
        m = await store.append_message("main", "u", body("u", 2))
        assert m.sequence == 2


async def test_unencodable_text_is_refused_without_stopping_the_store(store_path):
    """E, S1: a write that cannot be stored (a lone surrogate in text, metadata or a state value)
    is refused before anything is written (``ValueError``/``MalformedContentError``), or stored
    and read back exactly; either way the store keeps working. Regression: it used to reach the
    commit, fail to encode, and stop the store."""
    async with open_store(store_path) as store:
        await store.append_message("main", "u", body("u", 1))
        for write in (
            lambda: store.append_message("main", "u", (text("bad \ud800 text"),)),
            lambda: store.append_message("main", "u", body("u", 2), {"bad": "\udfff"}),
            lambda: store.set_state("main", "k", "bad \ud800"),
        ):
            try:
                await write()
            except ValueError:
                pass
            assert not store.failed
        m = await store.append_message("main", "u", body("u", 3))
        assert m.id == store.messages("main")[-1].id


async def test_a_store_says_whether_other_processes_may_write_it(store_path: str) -> None:
    """``shared``: a store file is held by one process; a PostgreSQL store is shared."""
    async with open_store(store_path) as store:
        assert store.shared is store_path.startswith("postgresql://")
