"""The reader's view (SPEC A1-A6, D4, P1; STRATEGIES 1.6), ported from the seed's rows 1-4, 6, 7,
9, 66, 67 and 73, plus the A6 "no audience support" comparison and a Hypothesis property.

Sections:
  1. Helpers (a recording strategy, block walkers)
  2. Seed rows 1-4: what a compile holds for each reader
  3. Seed rows 6, 7, 9: on_new_message, provenance, thinking (A4, A4.1, P1)
  4. Seed rows 66, 67 and A6: the plain fast path and its switch
  5. Seed row 73: tool blocks stored with an audience (D4, A2, STRATEGIES 1.6)
  6. Property: random audiences, random readers
  7. Property (fast): compression requests with a head window hold only the reader's view
"""

from __future__ import annotations

import itertools
import json
import logging
import re
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asides.actors import CompiledContext, open_runtime
from asides.store import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    block_to_json,
    content_for_reader,
    content_to_json,
    text,
    thinking,
    tool_result,
    tool_use,
)
from asides.strategies import (
    AutobiographicalStrategy,
    Completion,
    CompletionRequest,
    PassthroughStrategy,
    Usage,
    WindowedPassthroughStrategy,
)
from asides.strategies._base import CompiledMessage, Selection, SelectOptions, StrategyContext
from asides.testing import ScriptedModel
from tests.helpers import message_body, seed_records, sibling_store

BIG = {"max_tokens": 10_000_000, "reserve_for_response": 0}
STUB = (
    "[this call's result isn't shown in this context. If you need its output and the tool only reads, "
    "call it again; you'll get what it returns now.]"
)
OMITTED = "[tool call omitted]"


# -- 1. Helpers ---------------------------------------------------------------------------------


class Recorder:
    """A host strategy that delegates selection to an inner strategy and records what it is handed:
    the view of each ``select``, and every message ``on_new_message`` receives."""

    marks_compression_reads = True

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner or PassthroughStrategy()
        self.name = f"recorder({self.inner.name})"
        self.estimator = self.inner.estimator
        self.views: list[Any] = []
        self.new_messages: list[Message] = []
        self.selects = 0

    async def initialize(self, ctx: StrategyContext) -> None:
        await self.inner.initialize(ctx)

    async def on_new_message(self, message: Message, ctx: StrategyContext) -> None:
        self.new_messages.append(message)
        await self.inner.on_new_message(message, ctx)

    async def select(self, ctx: StrategyContext, budget: int, options: SelectOptions) -> Selection:
        self.selects += 1
        self.views.append(ctx.view)
        return await self.inner.select(ctx, budget, options)

    async def tick(self, ctx: StrategyContext) -> bool:
        return False

    def is_ready(self) -> bool:
        return True


def all_blocks(blocks: Any) -> list[Any]:
    """Every block, top level and nested in tool results, in order."""
    out: list[Any] = []
    for block in blocks:
        out.append(block)
        if isinstance(block, ToolResultBlock) and isinstance(block.content, tuple):
            out.extend(all_blocks(block.content))
    return out


def compiled_blocks(compiled: CompiledContext) -> list[Any]:
    return [b for m in compiled.messages for b in all_blocks(m.content)]


def texts(compiled: CompiledContext) -> list[str]:
    """Every text a compile shows, in order: text and thinking blocks, string tool results."""
    out: list[str] = []
    for block in compiled_blocks(compiled):
        if isinstance(block, TextBlock):
            out.append(block.text)
        elif isinstance(block, ThinkingBlock):
            out.append(block.thinking)
        elif isinstance(block, ToolResultBlock) and isinstance(block.content, str):
            out.append(block.content)
    return out


def assert_no_audience(compiled: CompiledContext) -> None:
    """SPEC 3.3.1: a compiled block never has an audience (nested ones included), in the objects
    and in their JSON; no compiled message is empty (A3)."""
    for message in compiled.messages:
        assert message.content, f"empty compiled message by {message.participant!r}"
        for block in all_blocks(message.content):
            assert getattr(block, "audience", None) is None, block
    for body in compiled.provenance.raw_bodies.values():
        for block in all_blocks(body):
            assert getattr(block, "audience", None) is None, block


def shape(compiled: CompiledContext) -> list[tuple[str, list[str]]]:
    """A compact picture of a compile, like the seed's probe lines."""

    def show(block: Any) -> str:
        if isinstance(block, TextBlock):
            return f"T:{block.text}"
        if isinstance(block, ToolUseBlock):
            return f"U:{block.id}"
        if isinstance(block, ToolResultBlock):
            inner = block.content if isinstance(block.content, str) else "|".join(show(b) for b in block.content)
            return f"R:{block.tool_use_id}({inner})"
        return block.type

    return [(m.participant, [show(b) for b in m.content]) for m in compiled.messages]


def assert_tool_pairing(compiled: CompiledContext) -> None:
    """Provider-valid pairing: every tool result answers a call in the message just before it,
    and every call is answered in the message right after it."""
    messages = compiled.messages
    for index, message in enumerate(messages):
        calls_before = {b.id for b in messages[index - 1].content if isinstance(b, ToolUseBlock)} if index else set()
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                assert block.tool_use_id in calls_before, (index, shape(compiled))
        calls = {b.id for b in message.content if isinstance(b, ToolUseBlock)}
        if calls:
            assert index + 1 < len(messages), shape(compiled)
            answered = {b.tool_use_id for b in messages[index + 1].content if isinstance(b, ToolResultBlock)}
            assert calls <= answered, (index, shape(compiled))


# -- 2. Seed rows 1-4 ---------------------------------------------------------------------------


async def test_row1_reaches_only_its_readers_compiles(store_path):
    """Seed row 1: "reaches only its readers' compiles, without its audience, and a manager with no
    reader sees none". SPEC A1, A2, A3, A5, 3.3.1."""
    async with open_runtime(store_path) as rt:
        async with (
            rt.manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann") as ann,
            rt.manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob") as bob,
            rt.manager("agents/none", strategy=PassthroughStrategy()) as none,
        ):
            stored = await ann.add_message("user", [text("[for ann]", ["ann"]), text("[for bob]", ["bob"]), text("Hello, both.")])
            results = {name: await m.compile(**BIG) for name, m in (("ann", ann), ("bob", bob), ("none", none))}
            assert texts(results["ann"]) == ["[for ann]", "Hello, both."]
            assert texts(results["bob"]) == ["[for bob]", "Hello, both."]
            assert texts(results["none"]) == ["Hello, both."]
            for compiled in results.values():
                assert_no_audience(compiled)
                assert [m.participant for m in compiled.messages] == ["user"]
                # the wire form of every compiled block holds no audience key either
                assert '"audience"' not in json.dumps([content_to_json(m.content) for m in compiled.messages])
            assert ann.view_reader == "ann" and bob.view_reader == "bob" and none.view_reader is None
            # A5: reads return the message as stored, audience fields included, through every manager
            for m in (ann, bob, none):
                (message,) = m.get_all_messages()
                assert message.id == stored.id
                assert [(b.text, b.audience) for b in message.content] == [
                    ("[for ann]", ("ann",)),
                    ("[for bob]", ("bob",)),
                    ("Hello, both.", None),
                ]
                assert m.get_message(stored.id) == message


async def test_row2_a_message_wholly_someone_elses_is_left_out(store_path):
    """Seed row 2: "leaves a message whose every block is someone else's out of the view, sending no
    empty message". SPEC A3, A4."""
    async with open_runtime(store_path) as rt:
        recorder = Recorder()
        async with (
            rt.manager("agents/ann", strategy=recorder, view_reader="ann") as ann,
            rt.manager("agents/none", strategy=PassthroughStrategy()) as none,
        ):
            first = await ann.add_message("user", [text("one")])
            hidden = await ann.add_message("bob", [text("bob-1", ["bob"]), text("bob-2", ["bob", "cleo"])])
            third = await ann.add_message("assistant", [text("three")])
            for m in (ann, none):
                compiled = await m.compile(**BIG)
                assert texts(compiled) == ["one", "three"]
                assert all(message.content for message in compiled.messages)
                assert [e.message_ids for e in compiled.provenance.entries] == [(first.id,), (third.id,)]
                assert hidden.id not in compiled.provenance.raw_bodies
            (view,) = recorder.views
            held = view.get_all()
            assert [(m.id, m.sequence) for m in held] == [(first.id, first.sequence), (third.id, third.sequence)]
            assert view.length() == 2
            assert view.get(hidden.id) is None and view.sequence_of(hidden.id) is None
            assert view.sequence_of(third.id) == third.sequence
            # the stored message is still there, whole
            assert ann.get_message(hidden.id).content == hidden.content


async def test_row3_reader_view_applies_after_the_view_filter(store_path):
    """Seed row 3: "applies the reader's view after the view filter, which sees the message as
    stored". SPEC A3."""
    async with open_runtime(store_path) as rt:
        seen: list[Message] = []

        def no_bob_material(message: Message) -> bool:
            # Only the stored form shows bob's block: a filter that saw ann's view would keep it.
            seen.append(message)
            return not any(getattr(b, "audience", None) and "bob" in b.audience for b in message.content)

        async with (
            rt.manager("agents/writer", strategy=PassthroughStrategy()) as writer,
            rt.manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann", view_filter=no_bob_material) as ann,
        ):
            with_bob = await writer.add_message("user", [text("plain-x"), text("bob-secret", ["bob"])])
            for_ann = await writer.add_message("user", [text("ann-z", ["ann"]), text("plain-z")])
            cleo_only = await writer.add_message("user", [text("cleo-only", ["cleo"])])
            plain = await writer.add_message("user", [text("plain-y")])
            compiled = await ann.compile(**BIG)
            # the filter dropped the message holding bob's block (its plain block too); the reader
            # view then stripped ann's audience and dropped cleo's message, which the filter kept
            assert texts(compiled) == ["ann-z", "plain-z", "plain-y"]
            assert_no_audience(compiled)
            assert [e.message_ids for e in compiled.provenance.entries] == [(for_ann.id,), (plain.id,)]
            by_id = {m.id: m for m in seen}
            assert set(by_id) >= {with_bob.id, for_ann.id, cleo_only.id, plain.id}
            # the filter saw each message as stored: hidden blocks and audience fields included
            assert by_id[with_bob.id] == writer.get_message(with_bob.id)
            assert by_id[for_ann.id].content[0].audience == ("ann",)
            assert by_id[cleo_only.id].content == (text("cleo-only", ["cleo"]),)


def _unreadable_audience(value: Any) -> TextBlock:
    block = TextBlock("odd")
    object.__setattr__(block, "audience", value)  # bypasses the constructor, as old data would
    return block


@pytest.mark.parametrize("audience", ["ann", ("ann", 3), ("ann", None), {"ann": True}, 7, ("",)])
def test_row4_content_for_reader_reads_a_malformed_audience_as_no_one(audience):
    """Seed row 4: "treats an audience that isn't a list of strings as naming no one". SPEC A2, E."""
    odd = _unreadable_audience(audience)
    plain = text("plain")
    for reader in ("ann", "a", "n", "bob", None):
        assert content_for_reader((odd, plain), reader) == (plain,)


async def test_row4_stored_malformed_audiences_name_no_one(store_path, caplog):
    """Seed row 4: "treats an audience that isn't a list of strings as naming no one". SPEC A2, E
    (reported with its record id, read fail-closed, never dropped from reads of the stored form)."""
    odd = ["ann", {"ann": True}, ["ann", 3], ["ann", None], 7]
    ids = seed_records(
        store_path,
        [
            (
                "main",
                "message",
                None,
                message_body("user", [{"type": "text", "text": f"ODD-{i}", "audience": a}, {"type": "text", "text": f"plain-{i}"}]),
            )
            for i, a in enumerate(odd)
        ]
        + [("main", "message", None, message_body("user", [{"type": "text", "text": "ONLY-ODD", "audience": "ann"}]))],
    )
    caplog.set_level(logging.WARNING)
    async with open_runtime(store_path) as rt:
        async with (
            rt.manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann") as ann,
            rt.manager("agents/none", strategy=WindowedPassthroughStrategy()) as none,
        ):
            for m in (ann, none):
                compiled = await m.compile(**BIG)
                assert texts(compiled) == [f"plain-{i}" for i in range(len(odd))]
                assert_no_audience(compiled)
                assert ids[-1] not in compiled.provenance.raw_bodies
            # reads of the stored form still hold every block (never silently dropped, SPEC E)
            stored = ann.get_all_messages()
            assert [len(m.content) for m in stored] == [2] * len(odd) + [1]
            assert all(m.content[0].audience is not None for m in stored)
    reported = " ".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
    for record_id in ids:
        assert f"record {record_id} " in reported, reported


# -- 3. Seed rows 6, 7, 9 -----------------------------------------------------------------------


async def test_row6_on_new_message_gets_the_readers_view_and_nothing_else(store_path):
    """Seed row 6: "hands the strategy's onNewMessage the reader's view of a message, and none it
    sees nothing of". SPEC A4, F, 3.3.1."""
    async with open_runtime(store_path) as rt:
        ann_rec, none_rec, bob_rec = Recorder(), Recorder(), Recorder()
        async with (
            rt.manager("agents/ann", strategy=ann_rec, view_reader="ann") as ann,
            rt.manager("agents/bob", strategy=bob_rec, view_reader="bob") as bob,
            rt.manager("agents/none", strategy=none_rec) as none,
            rt.manager("agents/writer", strategy=PassthroughStrategy()) as writer,
        ):
            mixed = await writer.add_message("user", [text("for-ann", ["ann"]), text("plain"), text("for-bob", ["bob"])])
            bobs = await writer.add_message("user", [text("bob-only", ["bob"])])
            # written through ann's own manager this time: every strategy on the branch hears of it
            plain = await ann.add_message("assistant", [text("all")])
            for m in (ann, bob, none):
                await m.preview_context(**BIG)  # the actor delivered everything queued before this turn
            assert [(m.id, m.sequence) for m in ann_rec.new_messages] == [(mixed.id, mixed.sequence), (plain.id, plain.sequence)]
            assert ann_rec.new_messages[0].content == (text("for-ann"), text("plain"))
            assert [m.id for m in bob_rec.new_messages] == [mixed.id, bobs.id, plain.id]
            assert bob_rec.new_messages[0].content == (text("plain"), text("for-bob"))
            assert bob_rec.new_messages[1].content == (text("bob-only"),)
            assert [m.id for m in none_rec.new_messages] == [mixed.id, plain.id]
            assert none_rec.new_messages[0].content == (text("plain"),)
            for recorder in (ann_rec, bob_rec, none_rec):
                for message in recorder.new_messages:
                    assert message.content and all(b.audience is None for b in message.content)
                    assert message.participant == writer.get_message(message.id).participant


async def test_row7_raw_bodies_and_completeness_by_the_readers_view(store_path):
    """Seed row 7: "reports raw bodies and their completeness by the reader's view, with a
    viewFilter set as without". SPEC P1, A3, A4."""
    async with open_runtime(store_path) as rt:
        big_secret = "B" * 3000
        results = {}
        async with rt.manager("agents/writer", strategy=PassthroughStrategy()) as writer:
            m1 = await writer.add_message("user", [text("plain1")])
            m2 = await writer.add_message("user", [text("ann-secret", ["ann"]), text("plain2")])
            m3 = await writer.add_message("assistant", [text(big_secret, ["bob"]), text("plain3")])
            m4 = await writer.add_message("bob", [text("bob-only", ["bob"])])
            m5 = await writer.add_message("user", [text("x" * 600)])
            for label, view_filter in (("without", None), ("with", lambda m: True)):
                # a cap of 100 tokens: m3 as stored (~1000 tokens) would be truncated, m3 as ann
                # sees it is not; m5 is truncated for everyone
                strategy = WindowedPassthroughStrategy(max_message_tokens=100)
                async with rt.manager(f"agents/ann-{label}", strategy=strategy, view_reader="ann", view_filter=view_filter) as ann:
                    results[label] = await ann.compile(**BIG)
        for compiled in results.values():
            provenance = compiled.provenance
            assert dict(provenance.raw_bodies) == {
                m1.id: (text("plain1"),),
                m2.id: (text("ann-secret"), text("plain2")),
                m3.id: (text("plain3"),),
                m5.id: (text("x" * 600),),
            }
            assert dict(provenance.complete) == {m1.id: True, m2.id: True, m3.id: True, m5.id: False}
            assert m4.id not in provenance.raw_bodies
            assert_no_audience(compiled)
        assert results["with"] == results["without"]


async def test_row9_thinking_vouches_only_for_a_turn_the_reader_sees_whole(store_path):
    """Seed row 9: "vouches for a row holding another reader’s block by the reader’s view of it, as
    passthrough sends it". Ported as SPEC A4.1 (and STRATEGIES 1.6): a message whose reader view
    hides a block is compiled without its thinking and reported incomplete; a message where nothing
    is hidden replays its thinking unchanged."""
    async with open_runtime(store_path) as rt:
        signed = thinking("I weigh both channels.", signature="sig-1")
        signed2 = thinking("Only ann's channel.", signature="sig-2")
        async with rt.manager("agents/writer", strategy=PassthroughStrategy()) as writer:
            await writer.add_message("user", [text("Go.")])
            shared = await writer.add_message("assistant", [signed, text("Answer."), text("[bob's note]", ["bob"])])
            whole = await writer.add_message("assistant", [signed2, text("Reply."), text("[ann's note]", ["ann"])])
            for make in (PassthroughStrategy, WindowedPassthroughStrategy):
                async with rt.manager(f"agents/ann-{make.name}", strategy=make(), view_reader="ann") as ann:
                    compiled = await ann.compile(**BIG)
                by_id = {e.message_ids[0]: m for e, m in zip(compiled.provenance.entries, compiled.messages, strict=True)}
                # a hidden block: that message's thinking is left out, the message is incomplete
                assert by_id[shared.id].content == (text("Answer."),)
                assert compiled.provenance.complete[shared.id] is False
                assert text("[bob's note]") not in compiled.provenance.raw_bodies[shared.id]
                # nothing hidden (ann's own block only loses its audience): thinking replayed as is
                assert by_id[whole.id].content == (signed2, text("Reply."), text("[ann's note]"))
                assert by_id[whole.id].content[0].signature == "sig-2"
                assert compiled.provenance.complete[whole.id] is True
                assert_no_audience(compiled)
                # bob sees the first turn whole and the second with ann's block hidden
                async with rt.manager(f"agents/bob-{make.name}", strategy=make(), view_reader="bob") as bob:
                    seen_by_bob = await bob.compile(**BIG)
                by_id = {e.message_ids[0]: m for e, m in zip(seen_by_bob.provenance.entries, seen_by_bob.messages, strict=True)}
                assert by_id[shared.id].content == (signed, text("Answer."), text("[bob's note]"))
                assert by_id[whole.id].content == (text("Reply."),)
                assert seen_by_bob.provenance.complete == {m.id: m.id != whole.id for m in writer.get_all_messages()}


# -- 4. Seed rows 66, 67 and A6 -----------------------------------------------------------------


async def test_row66_plain_view_until_the_first_audience_block(store_path):
    """Seed row 66: "reads its slot through the plain view on every write, until a block with an
    audience is stored". SPEC A6, S3: until then the strategy's view returns the stored Message
    objects themselves; after it, reader-view objects."""
    async with open_runtime(store_path) as rt:
        ann_rec, none_rec = Recorder(), Recorder()
        async with (
            rt.manager("agents/ann", strategy=ann_rec, view_reader="ann") as ann,
            rt.manager("agents/none", strategy=none_rec) as none,
        ):
            for step in range(4):
                writer = ann if step % 2 else none
                written = await writer.add_message("user" if step % 2 else "assistant", [text(f"m{step}")])
                for m, recorder in ((ann, ann_rec), (none, none_rec)):
                    await m.compile(**BIG)
                    view = recorder.views[-1]
                    stored = m.get_all_messages()
                    held = view.get_all()
                    assert len(held) == len(stored) == step + 1
                    assert all(a is b for a, b in zip(held, stored, strict=True)), "the plain view hands the stored objects"
                    assert view.get(written.id) is stored[-1]
                    assert recorder.new_messages[-1] is stored[-1] is written
            # the branch's first audience block
            secret = await ann.add_message("user", [text("for-ann", ["ann"]), text("plain")])
            await ann.compile(**BIG)
            await none.compile(**BIG)
            stored = ann.get_message(secret.id)
            ann_view, none_view = ann_rec.views[-1], none_rec.views[-1]
            seen = ann_view.get(secret.id)
            assert seen is not stored and seen.content == (text("for-ann"), text("plain"))
            assert (seen.id, seen.sequence) == (stored.id, stored.sequence)
            assert ann_rec.new_messages[-1] is not stored and ann_rec.new_messages[-1].content == seen.content
            assert none_view.get(secret.id).content == (text("plain"),)
            assert none_rec.new_messages[-1].content == (text("plain"),)
            assert stored.content[0].audience == ("ann",)  # A5: the stored form is untouched


@pytest.mark.parametrize("how", ["append", "edit"])
async def test_row67_another_managers_audience_block_switches_the_view_at_once(store_path, how):
    """Seed row 67: "takes the reader's view once a manager on the same store object stores a block
    with an audience". SPEC A6, D1: an audience block stored through another manager on the same
    branch (appended, or added by an edit) switches this manager's view at once (no reopen, no
    compile in between)."""
    async with open_runtime(store_path) as rt:
        recorder = Recorder()
        async with (
            rt.manager("agents/none", strategy=recorder) as none,
            rt.manager("agents/other", strategy=PassthroughStrategy(), view_reader="bob") as other,
        ):
            first = await none.add_message("user", [text("plain")])
            second = await none.add_message("user", [text("for-all")])
            await none.compile(**BIG)
            view = recorder.views[-1]
            assert view.get_all() == (first, second) and view.get_all()[1] is second
            if how == "append":
                await other.add_message("user", [text("for-bob", ["bob"]), text("more")])
                expected = ["plain", "for-all", "more"]
            else:
                # a new block at a new position hides nothing from anyone who saw the message (N1)
                edited = await other.edit_message(second.id, [text("for-all"), text("for-bob", ["bob"])])
                assert edited.content[1].audience == ("bob",)
                expected = ["plain", "for-all"]
            only_bob = await other.add_message("user", [text("bob-only", ["bob"])])
            # the view the strategy already holds reads the reader view at once
            held = view.get_all()
            assert [b.text for m in held for b in m.content] == expected
            assert all(b.audience is None for m in held for b in m.content)
            assert view.get(only_bob.id) is None and view.length() == len(held)
            compiled = await none.compile(**BIG)
            assert texts(compiled) == expected
            assert_no_audience(compiled)
            seen_by_bob = await other.compile(**BIG)
            assert "for-bob" in texts(seen_by_bob) and "bob-only" in texts(seen_by_bob)


async def test_a6_no_reader_no_audience_compiles_as_a_plain_passthrough(store_path):
    """SPEC A6: a host that sets no reader and writes no audience gets compiles identical to a plain
    passthrough of the stored messages (same participants, the same content objects)."""
    from asides.strategies._provider_forms import to_anthropic, to_openai

    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/host", strategy=PassthroughStrategy()) as host:
            await host.add_message("user", [text("What is in the file?")])
            await host.add_message(
                "assistant",
                [thinking("Read it.", signature="s"), text("Reading."), tool_use("t1", "read", {"path": "a", "audience": ["x"]})],
            )
            await host.add_message("user", [tool_result("t1", [text("contents")])])
            await host.add_message("carol", [text("Carol here.")], metadata={"channel": "general"})
            await host.add_message("assistant", [text("Done.")])
            stored = host.get_all_messages()
            for make in (PassthroughStrategy, WindowedPassthroughStrategy):
                async with rt.manager(f"agents/{make.name}", strategy=make()) as m:
                    compiled = await m.compile(**BIG)
                plain = [CompiledMessage(s.participant, s.content) for s in stored]
                assert list(compiled.messages) == plain
                for got, source in zip(compiled.messages, stored, strict=True):
                    assert got.participant == source.participant
                    assert len(got.content) == len(source.content)
                    assert all(a is b for a, b in zip(got.content, source.content, strict=True))
                assert [(e.kind, e.message_ids) for e in compiled.provenance.entries] == [("raw", (s.id,)) for s in stored]
                assert dict(compiled.provenance.raw_bodies) == {s.id: s.content for s in stored}
                assert all(compiled.provenance.complete.values())
                assert compiled.system_injections == ()
                assert json.dumps(compiled.to_anthropic("assistant"), sort_keys=True) == json.dumps(
                    to_anthropic(plain, "assistant"), sort_keys=True
                )
                assert json.dumps(compiled.to_openai("assistant"), sort_keys=True) == json.dumps(
                    to_openai(plain, "assistant", ()), sort_keys=True
                )


# -- 5. Seed row 73 -----------------------------------------------------------------------------

R14_RECORDS = [
    ("user", [{"type": "text", "text": "Ask."}]),
    ("agent", [{"type": "text", "text": "Calling A."}, {"type": "tool_use", "id": "a1", "name": "f", "input": {}}]),
    (
        "user",
        [{"type": "tool_result", "tool_use_id": "a1", "content": [{"type": "text", "text": "A-RESULT-FOR-BOB", "audience": ["bob"]}]}],
    ),
    ("agent", [{"type": "text", "text": "Calling B."}, {"type": "tool_use", "id": "b1", "name": "f", "input": {}, "audience": ["bob"]}]),
    ("user", [{"type": "tool_result", "tool_use_id": "b1", "content": [{"type": "text", "text": "B-RESULT"}]}]),
    ("agent", [{"type": "text", "text": "Calling C."}, {"type": "tool_use", "id": "c1", "name": "f", "input": {}}]),
    (
        "user",
        [{"type": "tool_result", "tool_use_id": "c1", "content": [{"type": "text", "text": "C-RESULT-FOR-BOB"}], "audience": ["bob"]}],
    ),
    ("agent", [{"type": "text", "text": "Done."}]),
]

HIDDEN_FROM_ANN = [
    ("user", ["T:Ask."]),
    ("agent", ["T:Calling A.", "U:a1"]),
    ("user", [f"R:a1({STUB})"]),  # A's whole result hidden; its call gets a stub (repair)
    ("agent", ["T:Calling B."]),  # B's call hidden
    ("user", [f"T:{OMITTED}"]),  # B's result, whose call is hidden
    ("agent", ["T:Calling C.", "U:c1"]),
    ("user", [f"R:c1({STUB})"]),  # C's result hidden; its call gets a stub (repair)
    ("agent", ["T:Done."]),
]

SEEN_BY_BOB = [
    ("user", ["T:Ask."]),
    ("agent", ["T:Calling A.", "U:a1"]),
    ("user", ["R:a1(T:A-RESULT-FOR-BOB)"]),
    ("agent", ["T:Calling B.", "U:b1"]),
    ("user", ["R:b1(T:B-RESULT)"]),
    ("agent", ["T:Calling C.", "U:c1"]),
    ("user", ["R:c1(T:C-RESULT-FOR-BOB)"]),
    ("agent", ["T:Done."]),
]


@pytest.mark.parametrize("make", [PassthroughStrategy, WindowedPassthroughStrategy], ids=["passthrough", "windowed"])
async def test_row73_tool_blocks_stored_with_an_audience_read_fail_closed(store_path, make):
    """Seed row 73: "store tool blocks with an audience where this change refuses one" and "compile
    tool cycles stored with an audience before this change". SPEC D4, A2, A4.2, W1, C1, C2, 3.3.1;
    STRATEGIES 1.6: nested and tool-block audiences hide the whole top-level block from readers they
    do not name; the hidden partners are repaired; bob sees everything; no audience key anywhere."""
    ids = seed_records(store_path, [("main", "message", None, message_body(p, c)) for p, c in R14_RECORDS])
    async with open_runtime(store_path) as rt:
        results = {}
        for name, reader in (("ann", "ann"), ("bob", "bob"), ("none", None)):
            async with rt.manager(f"{make.name}/{name}", strategy=make(), view_reader=reader) as m:
                results[name] = await m.compile(**BIG)
                # a stored tool block with an audience is still there as stored (A5)
                assert m.get_message(ids[3]).content[1].audience == ("bob",)
        for compiled in results.values():
            assert_no_audience(compiled)
            assert_tool_pairing(compiled)
            for form in (compiled.to_anthropic("agent"), compiled.to_openai("agent")):
                assert '"audience"' not in json.dumps(form)
        assert shape(results["bob"]) == SEEN_BY_BOB
        assert [e.kind for e in results["bob"].provenance.entries] == ["raw"] * 8
        for name in ("ann", "none"):
            compiled = results[name]
            assert shape(compiled) == HIDDEN_FROM_ANN, name
            assert not {"A-RESULT-FOR-BOB", "C-RESULT-FOR-BOB", "B-RESULT"} & set(texts(compiled))
            entries = compiled.provenance.entries
            assert [e.kind for e in entries] == ["raw", "raw", "repair", "raw", "raw", "raw", "repair", "raw"]
            assert [e.message_ids for e in entries if e.kind == "raw"] == [(ids[i],) for i in (0, 1, 3, 4, 5, 7)]
            assert ids[2] not in compiled.provenance.raw_bodies and ids[6] not in compiled.provenance.raw_bodies
            assert compiled.provenance.raw_bodies[ids[3]] == (text("Calling B."),)
            assert compiled.provenance.complete[ids[4]] is False  # its result became [tool call omitted]


# -- 6. Property --------------------------------------------------------------------------------

READERS = ("ann", "bob", "cleo")
AUDIENCES = st.one_of(st.none(), st.lists(st.sampled_from(READERS), min_size=1, max_size=3, unique=True).map(tuple))
BLOCK = st.tuples(st.sampled_from(["text", "text", "thinking"]), AUDIENCES)
MESSAGE = st.tuples(
    st.sampled_from(["user", "assistant", "carol"]),
    st.lists(BLOCK, min_size=1, max_size=4),
    st.booleans(),  # ends with a tool call, answered by the next message
)


def _build(conversation: list[tuple[str, list[tuple[str, Any]], bool]]) -> list[tuple[str, list[tuple[Any, str | None, Any]]]]:
    """Messages as (participant, [(block, marker, audience)]) with a unique marker per block."""
    out = []
    for i, (participant, blocks, calls) in enumerate(conversation):
        content = []
        for j, (kind, audience) in enumerate(blocks):
            marker = f"M{i}B{j}"
            block = thinking(marker, signature=f"s{i}{j}", audience=audience) if kind == "thinking" else text(marker, audience)
            content.append((block, marker, audience))
        if calls:
            content.append((tool_use(f"call{i}", "look", {"q": i}), None, None))
        out.append((participant, content))
        if calls:
            out.append(("user", [(tool_result(f"call{i}", f"R{i}"), f"R{i}", None)]))
    return out


#: Names the fresh store of each Hypothesis example (a sibling of the test's ``store_path``).
_EXAMPLES = itertools.count()


def _expected(messages, reader: str | None) -> list[str]:
    """The markers a reader's compile must show, in order (SPEC A2, A3, A4.1)."""
    expected = []
    for _participant, content in messages:
        visible = [(b, mk) for b, mk, aud in content if aud is None or (reader is not None and reader in aud)]
        hid_any = len(visible) < len(content)
        shown = [mk for b, mk in visible if mk is not None and not (hid_any and isinstance(b, ThinkingBlock))]
        expected.extend(shown)
    return expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(conversation=st.lists(MESSAGE, min_size=1, max_size=7))
def test_property_random_audiences_reach_exactly_their_readers(store_path, conversation):
    """Property over random conversations whose blocks carry random audiences from {ann, bob, cleo}
    (or none), compiled for ann, bob, cleo and no reader under Passthrough and Windowed with a large
    budget: no compiled block has an audience (nested ones too), no compiled message is empty, no
    compiled text names a marker of a block hidden from the reader, and every block the reader may
    see is in the compile, in order. SPEC A2, A3, A4, A4.1, 3.3.1."""
    messages = _build(conversation)

    async def run(path: str) -> None:
        async with open_runtime(path) as rt:
            async with rt.manager("agents/writer", strategy=PassthroughStrategy()) as writer:
                for participant, content in messages:
                    await writer.add_message(participant, [b for b, _mk, _aud in content])
                for make in (PassthroughStrategy, WindowedPassthroughStrategy):
                    for reader in (*READERS, None):
                        async with rt.manager(f"{make.name}/{reader}", strategy=make(), view_reader=reader) as m:
                            compiled = await m.compile(**BIG)
                        assert_no_audience(compiled)
                        assert_tool_pairing(compiled)
                        shown = [t for t in texts(compiled) if t.startswith(("M", "R"))]
                        expected = _expected(messages, reader)
                        hidden = {
                            mk
                            for _p, content in messages
                            for _b, mk, aud in content
                            if aud is not None and (reader is None or reader not in aud)
                        }
                        assert not hidden & set(shown), (reader, make.name)
                        assert shown == expected, (reader, make.name)

    trio.run(run, sibling_store(store_path, f"e{next(_EXAMPLES)}"))


async def test_row8_a_hidden_block_leaves_nothing_on_the_blocks_beside_it(store_path):
    """Seed row 8: "takes a hidden block's raw replay form off the blocks that share it".
    SPEC A4, 3.1.

    asides's blocks carry no raw replay forms (SPEC 3.1 defines none): a block holds only its own
    fields, so nothing of a hidden block can ride on a visible one. What is left to assert is
    the intent: the blocks a reader sees of a message with another reader's block are exactly
    the stored blocks (no extra field, nothing of the hidden block), minus their audience."""
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        stored = await ann.add_message(
            "assistant",
            [
                text("for everyone"),
                text("BOB-SECRET reasoning", ["bob"]),
                tool_use("c1", "lookup", {"q": "shared"}),
                text("for ann too", ["ann", "bob"]),
            ],
        )
        compiled = await ann.compile(max_tokens=100_000, reserve_for_response=0)
        (message,) = compiled.messages
        assert [block_to_json(b) for b in message.content] == [
            {"type": "text", "text": "for everyone"},
            {"type": "tool_use", "id": "c1", "name": "lookup", "input": {"q": "shared"}},
            {"type": "text", "text": "for ann too"},
        ]
        assert "BOB-SECRET" not in json.dumps([block_to_json(b) for b in message.content])
        assert compiled.provenance.raw_bodies[stored.id] == message.content


# -- 7. Compression requests hold only the reader's view (fast) -----------------------------------

_SHARED = st.sampled_from([("ann",), ("bob",), ("cleo",), ("ann", "bob"), ("bob", "cleo"), ("ann", "cleo")])
_MARKED = re.compile(r"(?:ANN|BOB|CLEO)-ONLY-\d+x\d+")


def _shown(request: CompletionRequest) -> set[str]:
    """The markers a compression request showed."""
    seen = "\n".join(b.text for m in request.messages for b in m.content if isinstance(b, TextBlock))
    return set(_MARKED.findall(seen))


def echo_model() -> ScriptedModel:
    """Answers every request with the markers it was shown (so a summary holds exactly what
    compression read); ``_shown`` of each recorded request gives them back."""

    def respond(request: CompletionRequest) -> Completion:
        found = _shown(request)
        return Completion("end_turn", f"MEMORY {' '.join(sorted(found))} {'x ' * 20}", Usage(25, 25))

    return ScriptedModel(respond=respond, name="echo")


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(
    conversation=st.lists(st.tuples(st.lists(_SHARED, max_size=2), st.integers(8, 20)), min_size=12, max_size=22),
    head=st.sampled_from([20, 40]),
)
def test_compression_requests_hold_only_the_readers_view(store_path, conversation, head):
    """A cheaper, always-run version of the slow C4 property in test_compression_readers.py,
    aimed at the head window: with a head window (20 or 40 tokens) before small chunks, every
    compression request made for reader X (the head it carries, prior context, the target), every
    summary record of X's namespace, and X's compile hold no marker of a block hidden from X;
    every marker X may see is in X's compile. Random conversations (12-22 messages) of plain and
    private blocks for ann, bob and cleo, after an opening message (in the head) holding a block
    for each of them. SPEC C4, A2, A3, C3."""

    async def main(path: str) -> None:
        async with open_runtime(path) as rt:
            models = {r: echo_model() for r in READERS}
            managers = {
                r: await rt.open_manager(
                    f"agents/{r}",
                    strategy=AutobiographicalStrategy(target_chunk_tokens=30, head_window_tokens=head, recent_window_tokens=0),
                    view_reader=r,
                    model=models[r],
                )
                for r in READERS
            }
            host = await rt.open_manager("host", strategy=PassthroughStrategy())
            audiences: dict[str, tuple[str, ...]] = {}
            opening = ([("ann",), ("bob",), ("cleo",)], 8)  # the head always holds a block for each reader
            for i, (private, words) in enumerate([opening, *conversation]):
                blocks = []
                for j, audience in enumerate(private):
                    marker = f"{audience[0].upper()}-ONLY-{i}x{j}"
                    audiences[marker] = audience
                    blocks.append(text(f"{marker} secret words here.", list(audience)))
                blocks.append(text(f"plain message {i}. {'words ' * words}"))
                await host.add_message("user" if i % 2 else "assistant", blocks)
            for manager in managers.values():
                await manager.drain()
            assert any(models[r].requests for r in READERS), "the premise: compression happened"
            for reader in READERS:
                hidden = {m for m, a in audiences.items() if reader not in a}
                for shown in map(_shown, models[reader].requests):
                    assert not shown & hidden, f"a request for {reader} carried {sorted(shown & hidden)}"
                stored = json.dumps(rt.store.state_items("main", f"agents/{reader}/"))
                assert not set(_MARKED.findall(stored)) & hidden
                compiled = await managers[reader].compile(**BIG)
                seen = set(_MARKED.findall("\n".join(texts(compiled))))
                assert not seen & hidden
                assert seen == set(audiences) - hidden, f"{reader} lost {sorted(set(audiences) - hidden - seen)}"

    trio.run(main, sibling_store(store_path, f"e{next(_EXAMPLES)}"))
