"""Where an audience is refused (SPEC W1, W2, P2, E; seed rows 12-16), and other malformed writes.

Every refusal raises ``MalformedContentError`` whose ``.path`` names the exact place, and leaves the
store exactly as it was: the full ``dump`` of the store and the branch head are compared before and
after each refused call.

Sections:
  1. Helpers (a recording strategy, an "unchanged" context manager)
  2. Seed row 12: add_message / edit_message (W1)
  3. Seed row 13: the context log (P2, W1)
  4. Seed rows 14, 15: compile and preview injections (W2)
  5. Seed row 16: one validator for writes and injections
  6. Bad participants, metadata and content shapes
  7. Injections and compile arguments (issue 9)
  8. Every deliberate refusal is an AsidesError that is also the builtin it replaced
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

import asides
import asides.actors
import asides.strategies
from asides import ArgumentTypeError, AsidesError, InvalidArgumentError, InvalidNameError, image, system_change
from asides.actors import Injection, MalformedContentError, MessageInjection, open_runtime
from asides.lowlevel import open_store
from asides.store import ToolUseBlock, text, thinking, tool_result, tool_use
from asides.strategies import PassthroughStrategy, WindowedPassthroughStrategy
from tests.helpers import dump, sibling_store

BIG = {"max_tokens": 1_000_000, "reserve_for_response": 0}


# -- 1. Helpers ---------------------------------------------------------------------------------


class Recorder:
    """A host strategy (passthrough selection) that records every call it gets."""

    name = "recorder"
    marks_compression_reads = True

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner or PassthroughStrategy()
        self.estimator = self.inner.estimator
        self.calls: list[str] = []

    async def initialize(self, ctx) -> None:
        self.calls.append("initialize")
        await self.inner.initialize(ctx)

    async def on_new_message(self, message, ctx) -> None:
        self.calls.append("on_new_message")

    async def select(self, ctx, budget, options):
        self.calls.append("select")
        return await self.inner.select(ctx, budget, options)

    async def tick(self, ctx) -> bool:
        self.calls.append("tick")
        return False

    def is_ready(self) -> bool:
        return True


@asynccontextmanager
async def unchanged(rt: Any, branch: str = "main") -> AsyncIterator[None]:
    """Assert that the block leaves the store exactly as it was (SPEC E)."""
    before, head = dump(rt.store), rt.store.head(branch)
    yield
    assert rt.store.head(branch) == head
    assert dump(rt.store) == before


async def refused(call: Any, path: str) -> MalformedContentError:
    with pytest.raises(MalformedContentError) as info:
        await call
    assert info.value.path == path, info.value
    assert str(info.value).startswith(f"{path}: ")
    return info.value


# Content that a write refuses, each with the path relative to the content list (SPEC W1).
# Wire-form dicts stand in for blocks whose constructors take no audience at all.
WRITE_REFUSED: list[tuple[str, list[Any], str]] = [
    ("tool call", [text("calling"), {"type": "tool_use", "id": "t1", "name": "f", "input": {}, "audience": ["ann"]}], "[1].audience"),
    ("tool result", [{"type": "tool_result", "tool_use_id": "t1", "content": "ok", "audience": ["ann"]}], "[0].audience"),
    ("system change", [{"type": "system_change", "text": "new tools", "audience": ["ann"]}], "[0].audience"),
    ("image", [text("look"), {"type": "image", "media_type": "image/png", "data": "AAAA", "audience": ["ann"]}], "[1].audience"),
    ("nested in a tool result", [text("x"), tool_result("t1", [text("ok"), text("secret", ["ann"])])], "[1].content[1].audience"),
    (
        "nested (wire form)",
        [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "s", "audience": ["ann"]}]}],
        "[0].content[0].audience",
    ),
    ("not a list: a string", [{"type": "text", "text": "x", "audience": "ann"}], "[0].audience"),
    ("not strings", [text("fine"), {"type": "text", "text": "x", "audience": ["ann", 3]}], "[1].audience"),
    ("an empty name", [{"type": "thinking", "thinking": "x", "audience": [""]}], "[0].audience"),
    ("an empty audience", [text("fine"), {"type": "text", "text": "x", "audience": []}], "[1].audience"),
    ("a name with a newline", [{"type": "text", "text": "x", "audience": ["ann\nbob"]}], "[0].audience"),
    ("an object", [{"type": "redacted_thinking", "data": "xx", "audience": {"ann": True}}], "[0].audience"),
]

# The nested places only (what a write refuses that a top-level text block would not).
NESTED_REFUSED = [
    case
    for case in WRITE_REFUSED
    if case[0] in ("tool call", "tool result", "system change", "image", "nested in a tool result", "nested (wire form)")
]


# -- 2. Seed row 12 -----------------------------------------------------------------------------


@pytest.mark.parametrize("label,content,path", WRITE_REFUSED, ids=[c[0] for c in WRITE_REFUSED])
async def test_row12_refuses_an_audience_where_a_write_may_not_put_one(store_path, label, content, path):
    """Seed row 12: "refuses an audience at write wherever a write may not put one: a tool call or
    result, a system change, a block inside another". SPEC W1, 3.3.1, E."""
    async with open_runtime(store_path) as rt:
        recorder = Recorder()
        async with rt.manager("agents/ann", strategy=recorder, view_reader="ann") as m:
            original = await m.add_message("user", [text("original")])
            await m.preview_context(**BIG)
            calls = list(recorder.calls)
            async with unchanged(rt):
                await refused(m.add_message("user", content), f"content{path}")
                await refused(m.edit_message(original.id, content), f"content{path}")
            await m.preview_context(**BIG)
            assert recorder.calls == calls + ["select"], "no strategy heard of a refused write"
            assert m.get_message(original.id) == original
            assert tuple(m.get_all_messages()) == (original,)


async def test_row12_allowed_audiences_and_audience_as_tool_input_data(store_path):
    """Seed row 12 (the other half): top-level text, thinking and redacted-thinking blocks may carry
    an audience, and a key named ``audience`` inside a tool call's ``input`` is data, stored as given.
    SPEC W1, 3.3.1."""
    async with open_runtime(store_path) as rt:
        async with (
            rt.manager("agents/writer", strategy=PassthroughStrategy()) as writer,
            rt.manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann") as ann,
        ):
            data = {"audience": ["bob"], "nested": {"audience": "everyone"}}
            call = await writer.add_message("assistant", [text("searching", ["ann"]), tool_use("t1", "search", data)])
            answer = await writer.add_message("user", [tool_result("t1", [text("found")])])
            stored = writer.get_message(call.id).content[1]
            assert isinstance(stored, ToolUseBlock) and stored.input == data and stored.audience is None
            # the tool call is for everyone: ann and no reader both get it, input intact
            for m in (writer, ann):
                compiled = await m.compile(**BIG)
                calls = [b for msg in compiled.messages for b in msg.content if isinstance(b, ToolUseBlock)]
                assert [c.input for c in calls] == [data]
            ok = await writer.add_message(
                "assistant",
                [
                    thinking("t", signature="s", audience=["ann"]),
                    {"type": "redacted_thinking", "data": "zz", "audience": ["ann", "bob"]},
                    text("x", ["cleo"]),
                ],
            )
            assert [b.audience for b in writer.get_message(ok.id).content] == [("ann",), ("ann", "bob"), ("cleo",)]
            assert answer.id in {m.id for m in writer.get_all_messages()}


async def test_row12_constructors_refuse_what_a_write_would():
    """SPEC 3.1, 3.3.1: the block constructors accept an audience only where a write may carry one,
    and refuse one that is not a tuple of non-empty strings."""
    with pytest.raises(TypeError):
        tool_use("t1", "f", {}, audience=["ann"])  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        system_change("x", audience=["ann"])  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        image("image/png", data="AA", audience=["ann"])  # type: ignore[call-arg]
    for bad in ("ann", ["ann", 3], [""], {"ann"}):
        with pytest.raises(MalformedContentError) as info:
            text("x", bad)  # type: ignore[arg-type]
        assert info.value.path == "audience"
    assert text("x", ["ann", "bob"]).audience == ("ann", "bob")


# -- 3. Seed row 13 -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content,path",
    [
        ([text("note", ["ann"])], "content[0].audience"),
        ([text("fine"), thinking("t", audience=["ann"])], "content[1].audience"),
        ([tool_result("t1", [text("s", ["ann"])])], "content[0].content[0].audience"),
        ([{"type": "tool_use", "id": "t1", "name": "f", "input": {}, "audience": ["ann"]}], "content[0].audience"),
    ],
    ids=["text", "thinking", "nested", "tool call"],
)
async def test_row13_refuses_an_audience_in_a_context_entry(store_path, content, path):
    """Seed row 13: "refuses an audience in a context entry, where no view reads one". SPEC P2, W1,
    E: the log is unchanged and nothing is written."""
    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann") as m:
            source = await m.add_message("user", [text("hello")])
            first = await m.append_context_entry([text("a plain note")], source_message_id=source.id)
            async with unchanged(rt):
                await refused(m.append_context_entry(content), path)
                await refused(m.append_context_entry(content, source_message_id=source.id), path)
            assert m.get_context_entries() == (first,)
            # the next entry takes the next index: the refused ones took none
            second = await m.append_context_entry([text("another")])
            assert [e.index for e in m.get_context_entries()] == [first.index, second.index]
            assert second.index == first.index + 1


# -- 4. Seed rows 14, 15 ------------------------------------------------------------------------

INJECTION_REFUSED: list[tuple[str, list[Any], list[Any], str]] = [
    ("system, top level", [Injection("ns", "system", [text("sys", ["ann"])])], [], "injections[0].content[0].audience"),
    (
        "after_user, second injection",
        [Injection("ns", "before_user", [text("fine")]), Injection("ns", "after_user", [text("a"), text("b", ["bob"])])],
        [],
        "injections[1].content[1].audience",
    ),
    (
        "nested in a tool result",
        [Injection("ns", "before_user", [tool_result("t", [text("s", ["ann"])])])],
        [],
        "injections[0].content[0].content[0].audience",
    ),
    ("message injection", [], [MessageInjection("user", [text("x", ["bob"])])], "message_injections[0].content[0].audience"),
    (
        "message injection, nested",
        [Injection("ns", "system", [text("fine")])],
        [MessageInjection("user", [text("ok")]), MessageInjection("assistant", [tool_result("t", [text("s", ["ann"])])])],
        "message_injections[1].content[0].content[0].audience",
    ),
]


@pytest.mark.parametrize("label,injections,message_injections,path", INJECTION_REFUSED, ids=[c[0] for c in INJECTION_REFUSED])
@pytest.mark.parametrize("make", [PassthroughStrategy, WindowedPassthroughStrategy], ids=["passthrough", "windowed"])
async def test_row14_refuses_a_compile_given_an_injection_with_an_audience(store_path, label, injections, message_injections, path, make):
    """Seed row 14: "refuses a compile given an injection that declares an audience, before it
    selects anything". SPEC W2, E: ``select`` is never called and nothing is written (under the
    windowed strategy, with a budget that would move its anchor)."""
    async with open_runtime(store_path) as rt:
        recorder = Recorder(make())
        async with rt.manager("agents/ann", strategy=recorder, view_reader="ann") as m:
            for i in range(6):
                await m.add_message("user" if i % 2 else "assistant", [text(f"message {i} " * 20)])
            calls = list(recorder.calls)
            async with unchanged(rt):
                for compile_ in (m.compile, m.preview_context):
                    await refused(
                        compile_(max_tokens=200, reserve_for_response=0, injections=injections, message_injections=message_injections),
                        path,
                    )
            assert recorder.calls == calls, "select was never called"


async def test_row14_an_injection_without_an_audience_is_still_placed(store_path):
    """Seed row 14 (the other half): "... An injection without an audience is still placed."
    SPEC W2, 3.3.1."""
    async with open_runtime(store_path) as rt:
        recorder = Recorder()
        async with rt.manager("agents/ann", strategy=recorder, view_reader="ann") as m:
            await m.add_message("user", [text("question"), text("for ann", ["ann"])])
            await m.add_message("assistant", [text("answer")])
            compiled = await m.compile(
                **BIG,
                injections=[
                    Injection("mem", "system", [text("system note")]),
                    Injection("mem", "before_user", [tool_result("t", [text("nested, no audience")])]),
                    Injection("mem", "after_user", [text("after")]),
                ],
                message_injections=[MessageInjection("assistant", [text("newest")])],
            )
            assert recorder.calls.count("select") == 1
            assert compiled.system_injections == (text("system note"),)
            assert [m.participant for m in compiled.messages] == [
                "system_context:mem",
                "user",
                "system_context:mem",
                "assistant",
                "assistant",
            ]
            assert compiled.messages[1].content == (text("question"), text("for ann"))
            assert compiled.messages[-1].content == (text("newest"),)


@pytest.mark.parametrize("make", [PassthroughStrategy, WindowedPassthroughStrategy], ids=["passthrough", "windowed"])
async def test_row15_refuses_a_preview_whose_message_injections_declare_an_audience(store_path, make):
    """Seed row 15: "refuses a preview given select options whose messageInjections declare an
    audience". SPEC W2: ``MalformedContentError`` naming the place; nothing is written; ``select``
    never runs. The same preview without the audience goes through."""
    async with open_runtime(store_path) as rt:
        recorder = Recorder(make())
        async with rt.manager("agents/ann", strategy=recorder, view_reader="ann") as m:
            await m.add_message("user", [text("hi")])
            calls = list(recorder.calls)
            bad = [MessageInjection("user", [text("fine")]), MessageInjection("user", [text("a"), thinking("t", audience=["ann"])])]
            async with unchanged(rt):
                await refused(m.preview_context(**BIG, message_injections=bad), "message_injections[1].content[1].audience")
            assert recorder.calls == calls
            good = [MessageInjection("user", [text("fine")]), MessageInjection("user", [text("a"), thinking("t")])]
            async with unchanged(rt):
                preview = await m.preview_context(**BIG, message_injections=good)
            assert [msg.content for msg in preview.messages[-2:]] == [(text("fine"),), (text("a"), thinking("t"))]
            assert [e.kind for e in preview.provenance.entries] == ["raw", "injection", "injection"]


# -- 5. Seed row 16 -----------------------------------------------------------------------------


@pytest.mark.parametrize("label,content,path", NESTED_REFUSED, ids=[c[0] for c in NESTED_REFUSED])
async def test_row16_same_nested_audiences_found_at_write_and_in_injections(store_path, label, content, path):
    """Seed row 16: "finds the same nested audiences at write and in a compile's injection". SPEC
    W1, W2: every place ``add_message`` refuses is refused in compile injections (each position)
    and message injections too, with the same path below the content list."""
    async with open_runtime(store_path) as rt:
        recorder = Recorder()
        async with rt.manager("agents/ann", strategy=recorder, view_reader="ann") as m:
            await m.add_message("user", [text("hi")])
            calls = list(recorder.calls)
            async with unchanged(rt):
                await refused(m.add_message("user", content), f"content{path}")
                for position in ("system", "before_user", "after_user"):
                    injection = Injection("ns", position, content)
                    await refused(m.compile(**BIG, injections=[injection]), f"injections[0].content{path}")
                    await refused(m.preview_context(**BIG, injections=[injection]), f"injections[0].content{path}")
                message_injection = MessageInjection("user", content)
                await refused(m.compile(**BIG, message_injections=[message_injection]), f"message_injections[0].content{path}")
                await refused(m.preview_context(**BIG, message_injections=[message_injection]), f"message_injections[0].content{path}")
            assert recorder.calls == calls


# -- 6. Bad participants, metadata and content shapes -------------------------------------------


@pytest.mark.parametrize(
    "participant,content,metadata,path",
    [
        ("", [text("x")], None, "participant"),
        (None, [text("x")], None, "participant"),
        (5, [text("x")], None, "participant"),
        ("user", [text("x")], ["not", "a", "mapping"], "metadata"),
        ("user", [text("x")], {"when": object()}, "metadata"),
        ("user", [text("x")], {"nan": float("nan")}, "metadata"),
        ("user", [text("x")], {"set": {1, 2}}, "metadata"),
        ("user", "a bare string", None, "content"),
        ("user", [text("ok"), 42], None, "content[1]"),
        ("user", [text("ok"), {"type": "no-such-block"}], None, "content[1].type"),
        ("user", [{"type": "text"}], None, "content[0].text"),
        ("user", [{"type": "text", "text": "x", "colour": "red"}], None, "content[0].colour"),
    ],
    ids=[
        "empty",
        "none",
        "int",
        "list metadata",
        "object value",
        "nan",
        "set value",
        "bare string",
        "not a block",
        "unknown type",
        "missing field",
        "unknown field",
    ],
)
async def test_add_message_refuses_a_bad_participant_metadata_or_content_with_a_path(store_path, participant, content, metadata, path):
    """SPEC 3.2, D2, E: ``add_message`` with a bad participant, metadata that is not a JSON object,
    or content that is not a list of blocks is refused with ``MalformedContentError`` naming the
    place, and nothing is written; no strategy hears of it."""
    async with open_runtime(store_path) as rt:
        recorder = Recorder()
        async with rt.manager("agents/ann", strategy=recorder, view_reader="ann") as m:
            await m.add_message("user", [text("before")])
            await m.preview_context(**BIG)
            calls = list(recorder.calls)
            async with unchanged(rt):
                await refused(m.add_message(participant, content, metadata=metadata), path)
            await m.preview_context(**BIG)
            assert recorder.calls == calls + ["select"]
            assert len(m.get_all_messages()) == 1


async def test_an_empty_audience_says_what_to_do_instead(store_path):
    """Issue 10 item 4: ``audience=[]`` is refused: an audience names at least one reader; leave it
    out for everyone."""
    with pytest.raises(MalformedContentError) as info:
        text("x", [])
    assert info.value.problem == "an audience names at least one reader; leave it out for everyone"
    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=PassthroughStrategy()) as m:
            async with unchanged(rt):
                error = await refused(m.add_message("user", [{"type": "text", "text": "x", "audience": []}]), "content[0].audience")
            assert "leave it out for everyone" in error.problem


# -- 7. Injections and compile arguments (issue 9) ----------------------------------------------


async def test_an_injection_refuses_a_manager_for_its_namespace(store_path):
    """Issue 9: ``Injection`` checks its namespace: a manager passed instead of a name is refused
    with an AsidesError that says to pass its ``.namespace``; so is a name no namespace can have."""
    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=PassthroughStrategy()) as m:
            with pytest.raises(InvalidNameError) as info:
                Injection(m, "system", [text("x")])  # type: ignore[arg-type]
            assert isinstance(info.value, AsidesError)
            assert info.value.path == "namespace"
            assert ".namespace" in info.value.problem
            for bad in (5, "agents/\udc80", "a\nb"):
                with pytest.raises(InvalidNameError):
                    Injection(bad, "system", [text("x")])  # type: ignore[arg-type]
            assert Injection(m.namespace, "system", [text("x")]).namespace == "agents/ann"
            assert Injection(None, "system", [text("x")]).namespace == "default"  # type: ignore[arg-type]
            with pytest.raises(InvalidNameError) as info:
                MessageInjection("bad\x00", [text("x")])
            assert info.value.path == "participant"


@pytest.mark.parametrize("position", ["middle", "", None, "System"])
def test_an_unknown_injection_position_is_both_an_asides_error_and_a_value_error(position):
    """Issue 9: an unknown injection position raises an error that is an AsidesError and a
    ValueError, exported as the same class from asides and asides.actors."""
    with pytest.raises(InvalidArgumentError) as info:
        Injection("ns", position, [text("x")])  # type: ignore[arg-type]
    assert isinstance(info.value, AsidesError) and isinstance(info.value, ValueError)
    assert info.value.path == "position"
    assert asides.InvalidArgumentError is asides.actors.InvalidArgumentError


@pytest.mark.parametrize(
    ("arguments", "path", "error"),
    [
        ({"max_tokens": -1}, "max_tokens", InvalidArgumentError),
        ({"reserve_for_response": -5}, "reserve_for_response", InvalidArgumentError),
        ({"max_tokens": "100"}, "max_tokens", ArgumentTypeError),
        ({"max_tokens": 1.5}, "max_tokens", ArgumentTypeError),
        ({"reserve_for_response": True}, "reserve_for_response", ArgumentTypeError),
        ({"injections": Injection("ns", "system", [text("x")])}, "injections", ArgumentTypeError),
        ({"message_injections": "not a list"}, "message_injections", ArgumentTypeError),
    ],
    ids=[
        "negative-max-tokens",
        "negative-reserve",
        "str-max-tokens",
        "float-max-tokens",
        "bool-reserve",
        "one-injection",
        "str-injections",
    ],
)
@pytest.mark.parametrize("preview", [False, True], ids=["compile", "preview"])
async def test_compile_refuses_bad_arguments_before_selecting(store_path, arguments, path, error, preview):
    """Issue 9: a negative ``max_tokens`` (or reserve) given to ``compile`` or ``preview_context``
    raises an error that is both an AsidesError and a ValueError, naming the argument; a wrong
    type is also a TypeError. ``select`` is never called and nothing is written."""
    async with open_runtime(store_path) as rt:
        recorder = Recorder()
        async with rt.manager("agents/ann", strategy=recorder) as m:
            await m.add_message("user", [text("hi")])
            calls = list(recorder.calls)
            call = m.preview_context if preview else m.compile
            async with unchanged(rt):
                with pytest.raises(error) as info:
                    await call(**{"max_tokens": 1000, "reserve_for_response": 0, **arguments})
            assert isinstance(info.value, AsidesError) and isinstance(info.value, ValueError)
            if error is ArgumentTypeError:
                assert isinstance(info.value, TypeError)
            assert info.value.path == path
            assert recorder.calls == calls


# -- 8. Every deliberate refusal is an AsidesError --------------------------------------------


async def test_argument_refusals_are_asides_errors_and_keep_their_builtin(store_path):
    """Issue 9: each error the API raises on purpose is an AsidesError; one that used to be a
    ValueError or TypeError still is one, and names the argument."""
    from asides import AutobiographicalStrategy, WindowedPassthroughStrategy

    def check(exc: BaseException, builtin: type[BaseException], path: str) -> None:
        assert isinstance(exc, AsidesError), exc
        assert isinstance(exc, builtin), exc
        assert exc.path == path  # type: ignore[attr-defined]

    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=PassthroughStrategy()) as m:
            await m.add_message("user", [text("hi")])
            cases: list[tuple[Any, type[BaseException], str]] = [
                (lambda: rt.open_manager("ns", strategy=None), TypeError, "strategy"),
                (lambda: rt.open_manager("ns", strategy=PassthroughStrategy(), view_filter=5), TypeError, "view_filter"),
                (lambda: rt.open_manager("ns", strategy=PassthroughStrategy(), view_reader=""), ValueError, "view_reader"),
                (lambda: rt.open_manager(7, strategy=PassthroughStrategy()), ValueError, "namespace"),
                (lambda: m.derive(branch="child", strategy=PassthroughStrategy(), at_sequence=999), ValueError, "at_sequence"),
                (lambda: rt.reopen_derived("main", strategy=PassthroughStrategy()), ValueError, "branch"),
            ]
            async with unchanged(rt):
                for call, builtin, path in cases:
                    with pytest.raises(AsidesError) as info:
                        await call()
                    check(info.value, builtin, path)
                with pytest.raises(AsidesError) as info:
                    m.search_summaries("x", limit=-1)
                check(info.value, ValueError, "limit")
    async with open_runtime(sibling_store(store_path, "second")) as rt:
        async with rt.manager("agents/ann", strategy=AutobiographicalStrategy()) as m:
            with pytest.raises(AsidesError) as info:
                await m.reset_head_window(5)  # type: ignore[arg-type]
            check(info.value, TypeError, "text")
    for make, path in [
        (lambda: WindowedPassthroughStrategy(re_anchor_fraction=0), "re_anchor_fraction"),
        (lambda: AutobiographicalStrategy(target_chunk_tokens=0), "target_chunk_tokens"),
        (lambda: AutobiographicalStrategy(summary_participant=""), "summary_participant"),
    ]:
        with pytest.raises(AsidesError) as info:
            make()
        check(info.value, ValueError, path)
    with pytest.raises(AsidesError) as info:
        async with open_store(store_path + ".2", synchronous="SOMETIMES"):
            pass
    check(info.value, ValueError, "synchronous")
