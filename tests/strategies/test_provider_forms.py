"""Provider request forms of a compile: ``to_anthropic`` and ``to_openai`` (SPEC 3.3.1).

Sections:
  1. Helpers
  2. Roles, name prefixes, merging
  3. Tool pairing (own calls, stubs, other speakers, orphans)
  4. Empty blocks, audience keys, thinking, images, system changes
  5. OpenAI specifics
  6. Purity
  7. Properties (Hypothesis)
  8. Memories in the agent's own voice; injections; the SDKs' own request types (issue 12)
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ConfigDict, TypeAdapter

from asides import (
    AutobiographicalStrategy,
    ExtractiveModel,
    Injection,
    PassthroughStrategy,
    SourceEntry,
    open_runtime,
)
from asides.store._blocks import (
    image,
    redacted_thinking,
    system_change,
    text,
    thinking,
    tool_result,
    tool_use,
)
from asides.strategies._base import CompiledMessage
from asides.strategies._provider_forms import CONVERSATION_CONTINUES, NO_OUTPUT, STUB_RESULT, to_anthropic, to_openai

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- 1. Helpers ---------------------------------------------------------------------------------


def m(participant: str, *blocks: Any) -> CompiledMessage:
    return CompiledMessage(participant, blocks)


def texts_of(message: dict[str, Any]) -> list[str]:
    return [b["text"] for b in message["content"] if b["type"] == "text"]


def walk_keys(value: Any, *, skip_tool_input: bool = True) -> list[str]:
    """Every dict key in a JSON value (a tool call's ``input`` is the tool's data and skipped)."""
    keys: list[str] = []
    if isinstance(value, dict):
        for key, inner in value.items():
            keys.append(key)
            if skip_tool_input and key == "input" and value.get("type") == "tool_use":
                continue
            keys.extend(walk_keys(inner, skip_tool_input=skip_tool_input))
    elif isinstance(value, list):
        for inner in value:
            keys.extend(walk_keys(inner, skip_tool_input=skip_tool_input))
    return keys


def check_anthropic_shape(out: list[dict[str, Any]]) -> None:
    """SPEC 3.3.1: the invariants every Anthropic form keeps."""
    assert "audience" not in walk_keys(out)
    for index, message in enumerate(out):
        assert set(message) == {"role", "content"}
        assert message["role"] == ("user" if index % 2 == 0 else "assistant")
        assert message["content"], "no message is empty"
        for block in message["content"]:
            kind = block["type"]
            if kind == "text":
                assert block["text"]
            elif kind == "thinking":
                assert message["role"] == "assistant" and block["thinking"] and block["signature"]
            elif kind == "redacted_thinking":
                assert message["role"] == "assistant" and block["data"]
            elif kind == "tool_use":
                assert message["role"] == "assistant"
            elif kind == "tool_result":
                assert message["role"] == "user"
                assert block["content"]
                if isinstance(block["content"], list):
                    for inner in block["content"]:
                        assert inner["type"] in ("text", "image")
                        if inner["type"] == "text":
                            assert inner["text"]
                assert block.get("is_error", True) is True
            elif kind == "image":
                assert message["role"] == "user"
            else:  # pragma: no cover
                raise AssertionError(f"unexpected block type {kind}")
    # Every call is answered first thing in the very next message, and every result follows its call.
    for index, message in enumerate(out):
        if message["role"] != "assistant":
            continue
        call_ids = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        if not call_ids:
            continue
        assert index + 1 < len(out)
        following = out[index + 1]["content"]
        leading = [b["tool_use_id"] for b in following[: len(call_ids)] if b["type"] == "tool_result"]
        assert leading == call_ids
    all_call_ids = [b["id"] for msg in out for b in msg["content"] if b["type"] == "tool_use"]
    assert len(all_call_ids) == len(set(all_call_ids))
    for index, message in enumerate(out):
        for block in message["content"]:
            if block["type"] == "tool_result":
                assert index > 0
                previous = [b["id"] for b in out[index - 1]["content"] if b["type"] == "tool_use"]
                assert block["tool_use_id"] in previous
        results = [b for b in message["content"] if b["type"] == "tool_result"]
        assert message["content"][: len(results)] == results, "tool results come first"
        ids = [b["tool_use_id"] for b in results]
        assert len(ids) == len(set(ids))


def check_openai_shape(out: list[dict[str, Any]]) -> None:
    """SPEC 3.3.1: the invariants every OpenAI form keeps."""
    assert "audience" not in walk_keys(out, skip_tool_input=False)
    last_assistant: dict[str, Any] | None = None
    for index, message in enumerate(out):
        role = message["role"]
        assert role in ("system", "user", "assistant", "tool")
        if role == "system":
            assert index == 0 and isinstance(message["content"], str) and message["content"]
        elif role == "user":
            assert set(message) == {"role", "content"}
            content = message["content"]
            if isinstance(content, str):
                assert content
            else:
                assert content
                for part in content:
                    if part["type"] == "text":
                        assert part["text"]
                    else:
                        assert part["type"] == "image_url" and part["image_url"]["url"]
        elif role == "assistant":
            calls = message.get("tool_calls")
            if calls is not None:
                assert calls
                for call in calls:
                    assert call["type"] == "function"
                    json.loads(call["function"]["arguments"])
            if message["content"] is None:
                assert calls
            else:
                assert isinstance(message["content"], str) and message["content"]
            # every call is answered exactly once before the next non-tool message
            ids = [c["id"] for c in calls or ()]
            answered: list[str] = []
            for later in out[index + 1 :]:
                if later["role"] != "tool":
                    break
                answered.append(later["tool_call_id"])
            assert sorted(answered) == sorted(ids)
            assert len(set(ids)) == len(ids)
            last_assistant = message
        else:
            assert set(message) == {"role", "tool_call_id", "content"}
            assert isinstance(message["content"], str) and message["content"]
            assert last_assistant is not None
            assert message["tool_call_id"] in [c["id"] for c in last_assistant.get("tool_calls", ())]
        if role != "assistant" and role != "tool":
            last_assistant = None
    # adjacent messages never repeat the user or assistant role (merged)
    roles = [msg["role"] for msg in out]
    for first, second in zip(roles, roles[1:], strict=False):
        assert not (first == second and first in ("user", "assistant"))


# -- 2. Roles, name prefixes, merging -----------------------------------------------------------


def test_roles_follow_the_assistant_name():
    """SPEC 3.3.1: the assistant's messages take the assistant role, every other one the user role."""
    msgs = [m("user", text("hi")), m("ann", text("hello")), m("bob", text("yo")), m("ann", text("hey bob"))]
    out = to_anthropic(msgs, "ann")
    assert [x["role"] for x in out] == ["user", "assistant", "user", "assistant"]
    assert out[0]["content"] == [{"type": "text", "text": "hi"}]
    assert out[1]["content"] == [{"type": "text", "text": "hello"}]
    assert out[2]["content"] == [{"type": "text", "text": "bob: yo"}]
    # the same compile from bob's seat
    out_bob = to_anthropic(msgs, "bob")
    assert [x["role"] for x in out_bob] == ["user", "assistant", "user"]
    assert texts_of(out_bob[0]) == ["hi", "ann: hello"]
    assert texts_of(out_bob[2]) == ["ann: hey bob"]
    check_anthropic_shape(out)
    check_anthropic_shape(out_bob)


def test_prefix_rules():
    """SPEC 3.3.1: other speakers' names prefix the first text of their message; 'user' (any case)
    takes none; 'Context Manager' takes one; an injection's internal 'system_context:ns' label is
    never shown to the model (issue 9)."""
    msgs = [
        m("User", text("one"), text("two")),
        m("USER", text("three")),
        m("Context Manager", text("[Recall s1]")),
        m("system_context:ns", text("note")),
        m("bob", text(""), text("first"), text("second")),
    ]
    out = to_anthropic(msgs, "ann")
    assert len(out) == 1
    assert texts_of(out[0]) == [
        "one",
        "two",
        "three",
        "Context Manager: [Recall s1]",
        "note",
        "bob: first",
        "second",
    ]
    openai = to_openai(msgs, "ann")
    assert openai == [
        {
            "role": "user",
            "content": "one\n\ntwo\n\nthree\n\nContext Manager: [Recall s1]\n\nnote\n\nbob: first\n\nsecond",
        }
    ]


def test_assistant_text_is_never_prefixed():
    """SPEC 3.3.1: the assistant's own text goes as it is."""
    out = to_anthropic([m("user", text("q")), m("ann", text("a"))], "ann")
    assert texts_of(out[1]) == ["a"]


def test_prefix_on_own_text_not_on_rendered_call():
    """SPEC 3.3.1: the prefix marks the speaker's own text; a rendered call already names its speaker."""
    out = to_anthropic([m("bob", tool_use("b1", "search", {"q": "x"}), text("found it"))], "ann")
    assert texts_of(out[0]) == ['[bob called tool search {"q":"x"}]', "bob: found it"]
    out = to_anthropic([m("bob", tool_use("b1", "search", {}))], "ann")
    assert texts_of(out[0]) == ["[bob called tool search {}]"]
    out = to_anthropic([m("bob", system_change("tools added"))], "ann")
    assert texts_of(out[0]) == ["bob: [system change] tools added"]


def test_consecutive_same_role_messages_merge():
    """SPEC 3.3.1: consecutive same-role messages are merged into one, in order."""
    msgs = [
        m("user", text("a")),
        m("bob", text("b")),
        m("ann", text("c")),
        m("ann", text("d")),
        m("carol", text("e")),
    ]
    out = to_anthropic(msgs, "ann")
    assert out == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "bob: b"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "c"}, {"type": "text", "text": "d"}]},
        {"role": "user", "content": [{"type": "text", "text": "carol: e"}]},
    ]
    assert to_openai(msgs, "ann") == [
        {"role": "user", "content": "a\n\nbob: b"},
        {"role": "assistant", "content": "c\n\nd"},
        {"role": "user", "content": "carol: e"},
    ]


def test_empty_message_between_does_not_split_a_merge():
    """SPEC 3.3.1: a message left with nothing is dropped, and its neighbours merge."""
    msgs = [m("ann", text("a")), m("bob", text("")), m("ann", text("b"))]
    out = to_anthropic(msgs, "ann")
    assert out == [
        {"role": "user", "content": [{"type": "text", "text": CONVERSATION_CONTINUES}]},
        {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    ]


def test_anthropic_starts_with_user():
    """SPEC 3.3.1: an Anthropic list starting with the assistant gets a leading user message."""
    out = to_anthropic([m("ann", text("recalled")), m("user", text("next"))], "ann")
    assert out[0] == {"role": "user", "content": [{"type": "text", "text": "[conversation continues]"}]}
    assert [x["role"] for x in out] == ["user", "assistant", "user"]
    # OpenAI needs no such message
    assert to_openai([m("ann", text("recalled"))], "ann") == [{"role": "assistant", "content": "recalled"}]


def test_empty_input():
    """SPEC 3.3.1: no messages give no messages (OpenAI: only the system message)."""
    assert to_anthropic([], "ann") == []
    assert to_openai([], "ann") == []
    assert to_openai([], "ann", [text("be brief")]) == [{"role": "system", "content": "be brief"}]


# -- 3. Tool pairing -----------------------------------------------------------------------------


def test_own_call_with_adjacent_result_stays_blocks():
    """SPEC 3.3.1: the assistant's own call and its result in the next message stay tool blocks."""
    msgs = [
        m("user", text("weather?")),
        m("ann", text("checking"), tool_use("t1", "weather", {"city": "Oslo"})),
        m("user", tool_result("t1", "rain"), text("thanks")),
    ]
    out = to_anthropic(msgs, "ann")
    assert out[1]["content"] == [
        {"type": "text", "text": "checking"},
        {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Oslo"}},
    ]
    assert out[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "rain"},
        {"type": "text", "text": "thanks"},
    ]
    check_anthropic_shape(out)
    assert to_openai(msgs, "ann") == [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": "checking",
            "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Oslo"}'}}],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "rain"},
        {"role": "user", "content": "thanks"},
    ]


def test_distant_result_is_moved_adjacent_and_first():
    """SPEC 3.3.1: a result further on is moved to the front of the user message right after the call."""
    msgs = [
        m("ann", tool_use("t1", "read", {"path": "a"})),
        m("bob", text("meanwhile")),
        m("user", text("and")),
        m("tool-runner", tool_result("t1", [text("file a"), image("image/png", data="AAAA")])),
        m("ann", text("done")),
    ]
    out = to_anthropic(msgs, "ann")
    check_anthropic_shape(out)
    assert [x["role"] for x in out] == ["user", "assistant", "user", "assistant"]
    assert out[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [
            {"type": "text", "text": "file a"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
        ],
    }
    assert texts_of(out[2]) == ["bob: meanwhile", "and"]
    assert texts_of(out[3]) == ["done"]
    openai = to_openai(msgs, "ann")
    check_openai_shape(openai)
    assert openai == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "read", "arguments": '{"path":"a"}'}}],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "file a\n[image]"},
        {"role": "user", "content": "bob: meanwhile\n\nand"},
        {"role": "assistant", "content": "done"},
    ]


def test_result_that_was_alone_in_its_message_keeps_later_turns_apart():
    """SPEC 3.3.1: a moved result does not make the assistant's turns before and after it merge."""
    msgs = [
        m("user", text("go")),
        m("ann", tool_use("t1", "a", {})),
        m("user", tool_result("t1", "r1")),
        m("ann", tool_use("t2", "b", {})),
        m("user", tool_result("t2", "r2")),
        m("ann", text("all done")),
    ]
    out = to_anthropic(msgs, "ann")
    check_anthropic_shape(out)
    assert [[b["type"] for b in x["content"]] for x in out] == [
        ["text"],
        ["tool_use"],
        ["tool_result"],
        ["tool_use"],
        ["tool_result"],
        ["text"],
    ]


def test_parallel_calls_in_consecutive_messages_are_answered_together():
    """SPEC 3.3.1: calls in consecutive assistant messages merge; their results follow in call order."""
    msgs = [
        m("user", text("go")),
        m("ann", tool_use("t1", "a", {})),
        m("ann", tool_use("t2", "b", {})),
        m("user", tool_result("t2", "r2"), tool_result("t1", "r1")),
    ]
    out = to_anthropic(msgs, "ann")
    check_anthropic_shape(out)
    assert [b["id"] for b in out[1]["content"]] == ["t1", "t2"]
    assert [b["tool_use_id"] for b in out[2]["content"]] == ["t1", "t2"]
    openai = to_openai(msgs, "ann")
    check_openai_shape(openai)
    assert [x["role"] for x in openai] == ["user", "assistant", "tool", "tool"]


def test_unanswered_call_gets_a_stub():
    """SPEC 3.3.1: an own call with no result anywhere later is answered by the stub result."""
    msgs = [m("user", text("go")), m("ann", text("let me look"), tool_use("t1", "ls", {}))]
    out = to_anthropic(msgs, "ann")
    check_anthropic_shape(out)
    assert out[-1] == {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": STUB_RESULT}]}
    assert STUB_RESULT == (
        "[this call's result isn't shown in this context. If you need its output and the tool only reads, "
        "call it again; you'll get what it returns now.]"
    )
    openai = to_openai(msgs, "ann")
    check_openai_shape(openai)
    assert openai[-1] == {"role": "tool", "tool_call_id": "t1", "content": STUB_RESULT}


def test_result_before_its_call_is_text_and_call_gets_stub():
    """SPEC 3.3.1: only a result in a later message answers a call; an earlier one is readable text."""
    msgs = [m("user", tool_result("t1", "early")), m("ann", tool_use("t1", "x", {}))]
    out = to_anthropic(msgs, "ann")
    check_anthropic_shape(out)
    assert out[0]["content"] == [{"type": "text", "text": "[tool result t1] early"}]
    assert out[2]["content"] == [{"type": "tool_result", "tool_use_id": "t1", "content": STUB_RESULT}]


def test_other_speakers_calls_and_results_become_text():
    """SPEC 3.3.1: another speaker's tool call and its result are readable text, never tool blocks."""
    msgs = [
        m("user", text("hi")),
        m("bob", text("I'll check"), tool_use("b1", "search", {"q": "ünï", "n": 2})),
        m("bob", tool_result("b1", "found", is_error=False)),
        m("carol", tool_result("c9", [text("bad"), image("image/png", url="https://x/y.png")], is_error=True)),
        m("ann", text("ok")),
    ]
    out = to_anthropic(msgs, "ann")
    check_anthropic_shape(out)
    assert texts_of(out[0]) == [
        "hi",
        "bob: I'll check",
        '[bob called tool search {"q":"ünï","n":2}]',
        "bob: [tool result b1] found",
        "carol: [tool error c9] bad\n[image]",
    ]
    assert all(b["type"] == "text" for x in out for b in x["content"])
    openai = to_openai(msgs, "ann")
    check_openai_shape(openai)
    assert [x["role"] for x in openai] == ["user", "assistant"]


def test_orphan_result_in_an_assistant_message_is_text():
    """SPEC 3.3.1: a result with no call at all is readable text, in whichever role it stands."""
    out = to_anthropic([m("user", text("q")), m("ann", tool_result("zz", "", is_error=True))], "ann")
    check_anthropic_shape(out)
    assert out[1]["content"] == [{"type": "text", "text": "[tool error zz]"}]


def test_duplicate_result_is_text():
    """SPEC 3.3.1: a second result for an answered call is text, so each call has exactly one result."""
    msgs = [
        m("ann", tool_use("t1", "a", {})),
        m("user", tool_result("t1", "first")),
        m("user", tool_result("t1", "second")),
    ]
    out = to_anthropic(msgs, "ann")
    check_anthropic_shape(out)
    assert out[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "first"},
        {"type": "text", "text": "[tool result t1] second"},
    ]


def test_reused_call_id_is_text():
    """SPEC 3.3.1: a second own call reusing an id is text (tool use ids must be unique)."""
    msgs = [
        m("ann", tool_use("t1", "a", {})),
        m("user", tool_result("t1", "r")),
        m("ann", tool_use("t1", "a", {"again": True})),
    ]
    out = to_anthropic(msgs, "ann")
    check_anthropic_shape(out)
    assert out[-1]["content"] == [{"type": "text", "text": '[ann called tool a {"again":true}]'}]


def test_result_inside_an_assistant_message_is_moved():
    """SPEC 3.3.1: a result for an own call found in a later assistant message still moves to the user side."""
    msgs = [m("user", text("q")), m("ann", tool_use("t1", "a", {})), m("ann", tool_result("t1", "r"), text("so"))]
    out = to_anthropic(msgs, "ann")
    check_anthropic_shape(out)
    assert out[1]["content"][0]["type"] == "tool_use"
    assert texts_of(out[1]) == ["so"]
    assert out[2]["content"] == [{"type": "tool_result", "tool_use_id": "t1", "content": "r"}]


def test_error_and_empty_results():
    """SPEC 3.3.1: is_error appears only when set; an empty result gets a placeholder, never empty."""
    msgs = [
        m("ann", tool_use("t1", "a", {}), tool_use("t2", "b", {})),
        m("user", tool_result("t1", "", is_error=True), tool_result("t2", [text("")])),
    ]
    out = to_anthropic(msgs, "ann")
    check_anthropic_shape(out)
    assert out[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": NO_OUTPUT, "is_error": True},
        {"type": "tool_result", "tool_use_id": "t2", "content": NO_OUTPUT},
    ]
    openai = to_openai(msgs, "ann")
    check_openai_shape(openai)
    assert openai[-2:] == [
        {"role": "tool", "tool_call_id": "t1", "content": f"[tool error] {NO_OUTPUT}"},
        {"role": "tool", "tool_call_id": "t2", "content": NO_OUTPUT},
    ]


# -- 4. Empty blocks, audience, thinking, images, system changes ------------------------------


def test_no_empty_blocks_and_empty_messages_dropped():
    """SPEC 3.3.1: empty text blocks are dropped; a message left with nothing is dropped."""
    msgs = [m("user", text(""), text("x"), text("")), m("ann", text("")), m("bob", thinking("t", "sig"))]
    out = to_anthropic(msgs, "ann")
    assert out == [{"role": "user", "content": [{"type": "text", "text": "x"}]}]
    assert to_openai(msgs, "ann") == [{"role": "user", "content": "x"}]


def test_no_audience_key_anywhere():
    """SPEC 3.3.1: no ``audience`` key anywhere in either form, even for blocks built with one."""
    msgs = [
        m("user", text("hi", audience=["ann"])),
        m(
            "ann",
            thinking("hmm", "sig", audience=["ann"]),
            redacted_thinking("xx", audience=["ann"]),
            text("a", audience=["ann"]),
            tool_use("t1", "f", {"k": 1}),
        ),
        m("user", tool_result("t1", [text("r")])),
    ]
    out = to_anthropic(msgs, "ann")
    assert "audience" not in walk_keys(out, skip_tool_input=False)
    check_anthropic_shape(out)
    assert "audience" not in walk_keys(to_openai(msgs, "ann", [text("sys", audience=["ann"])]), skip_tool_input=False)


def test_audience_key_inside_tool_input_is_data():
    """SPEC 3.3.1 with SPEC 3.1: a key named ``audience`` inside a tool call's input is the tool's data."""
    out = to_anthropic([m("ann", tool_use("t1", "mail", {"audience": "all"}))], "ann")
    assert out[1]["content"][0]["input"] == {"audience": "all"}


def test_thinking_kept_only_signed_and_in_assistant_turns():
    """SPEC 3.3.1: thinking stays only in assistant turns and only with a signature; OpenAI drops it."""
    msgs = [
        m("user", text("q"), thinking("user thought", "sig"), redacted_thinking("enc")),
        m("ann", thinking("unsigned"), thinking("signed", "s1"), redacted_thinking("enc2"), text("a")),
        m("bob", thinking("bob thought", "s2"), text("b")),
    ]
    out = to_anthropic(msgs, "ann")
    check_anthropic_shape(out)
    assert out[0]["content"] == [{"type": "text", "text": "q"}]
    assert out[1]["content"] == [
        {"type": "thinking", "thinking": "signed", "signature": "s1"},
        {"type": "redacted_thinking", "data": "enc2"},
        {"type": "text", "text": "a"},
    ]
    assert out[2]["content"] == [{"type": "text", "text": "bob: b"}]
    openai = to_openai(msgs, "ann")
    assert openai == [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "bob: b"},
    ]


def test_thinking_only_message_dropped_in_openai_and_neighbours_merge():
    """SPEC 3.3.1: OpenAI drops thinking, so a thinking-only assistant message vanishes there."""
    msgs = [m("user", text("a")), m("ann", thinking("t", "s")), m("bob", text("b"))]
    assert to_openai(msgs, "ann") == [{"role": "user", "content": "a\n\nbob: b"}]
    assert [x["role"] for x in to_anthropic(msgs, "ann")] == ["user", "assistant", "user"]


def test_images():
    """SPEC 3.3.1: images stay image blocks in user turns (base64 or url); OpenAI uses image_url parts."""
    msgs = [
        m("bob", image("image/png", data="QUJD"), text("look")),
        m("user", image("image/jpeg", url="https://e.x/p.jpg")),
        m("ann", text("nice"), image("image/png", data="Wlla")),
    ]
    out = to_anthropic(msgs, "ann")
    check_anthropic_shape(out)
    assert out[0]["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}},
        {"type": "text", "text": "bob: look"},
        {"type": "image", "source": {"type": "url", "url": "https://e.x/p.jpg"}},
    ]
    assert out[1]["content"] == [{"type": "text", "text": "nice"}, {"type": "text", "text": "[image]"}]
    openai = to_openai(msgs, "ann")
    check_openai_shape(openai)
    assert openai == [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}},
                {"type": "text", "text": "bob: look"},
                {"type": "image_url", "image_url": {"url": "https://e.x/p.jpg"}},
            ],
        },
        {"role": "assistant", "content": "nice\n\n[image]"},
    ]


def test_image_only_message_from_another_speaker():
    """SPEC 3.3.1: an image-only message has no text to prefix and is kept as the image."""
    out = to_anthropic([m("bob", image("image/png", data="QQ=="))], "ann")
    assert out == [
        {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QQ=="}}]}
    ]


def test_system_change_becomes_text():
    """SPEC 3.3.1 (STRATEGIES 8): a system change is the text ``[system change] <text>``."""
    out = to_anthropic([m("user", system_change("new tool: grep"))], "ann")
    assert out == [{"role": "user", "content": [{"type": "text", "text": "[system change] new tool: grep"}]}]
    assert to_openai([m("ann", system_change("x"))], "ann") == [{"role": "assistant", "content": "[system change] x"}]


# -- 5. OpenAI specifics -------------------------------------------------------------------------


def test_openai_system_message():
    """SPEC 3.3.1: OpenAI gets a leading system message from the text blocks of ``system``."""
    out = to_openai([m("user", text("hi"))], "ann", [text("be kind"), image("image/png", data="QQ=="), text(""), text("be brief")])
    assert out == [{"role": "system", "content": "be kind\n\nbe brief"}, {"role": "user", "content": "hi"}]
    assert to_openai([m("user", text("hi"))], "ann", [text("")]) == [{"role": "user", "content": "hi"}]


def test_openai_tool_messages_come_before_user_text_of_the_turn():
    """SPEC 3.3.1: the results of the assistant's calls follow it as tool messages, before the turn's user text."""
    msgs = [
        m("ann", text("two calls"), tool_use("a", "f", {}), tool_use("b", "g", {"x": [1, 2]})),
        m("user", text("by the way")),
        m("tools", tool_result("b", "B"), tool_result("a", "A")),
    ]
    out = to_openai(msgs, "ann")
    check_openai_shape(out)
    assert out == [
        {
            "role": "assistant",
            "content": "two calls",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "g", "arguments": '{"x":[1,2]}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "A"},
        {"role": "tool", "tool_call_id": "b", "content": "B"},
        {"role": "user", "content": "by the way"},
    ]


def test_openai_assistant_without_calls_has_no_tool_calls_key():
    """SPEC 3.3.1: ``tool_calls`` is omitted when the assistant makes no call."""
    out = to_openai([m("ann", text("x"))], "ann")
    assert "tool_calls" not in out[0]


# -- 6. Purity -----------------------------------------------------------------------------------


def test_inputs_never_mutated_and_outputs_unshared():
    """SPEC 3.3.1: the forms are pure: inputs unchanged, outputs deterministic and not aliasing inputs."""
    call = tool_use("t1", "f", {"nested": {"k": [1]}})
    msgs = [m("ann", call), m("user", tool_result("t1", "r"))]
    before = copy.deepcopy(msgs)
    first = to_anthropic(msgs, "ann")
    assert first == to_anthropic(msgs, "ann")
    assert to_openai(msgs, "ann") == to_openai(msgs, "ann")
    first[1]["content"][0]["input"]["nested"]["k"].append(2)
    assert call.input == {"nested": {"k": [1]}}
    assert msgs == before


# -- 7. Properties -------------------------------------------------------------------------------

PARTICIPANTS = ["ann", "bob", "user", "Context Manager"]
IDS = ["t1", "t2", "t3", "t4"]

short_text = st.sampled_from(["", "a", "hello", "x y"])
json_inputs = st.dictionaries(st.sampled_from(["q", "n", "deep"]), st.one_of(st.integers(), short_text), max_size=2)
images = st.one_of(
    st.builds(image, st.just("image/png"), data=st.sampled_from(["QQ==", "Qk0="])),
    st.builds(lambda u: image("image/jpeg", url=u), st.sampled_from(["https://e.x/a.jpg"])),
)
nested = st.lists(st.one_of(st.builds(text, short_text), images), max_size=3)
blocks = st.one_of(
    st.builds(text, short_text),
    st.builds(thinking, short_text, st.sampled_from([None, "", "sig"])),
    st.builds(redacted_thinking, st.sampled_from(["", "enc"])),
    st.builds(tool_use, st.sampled_from(IDS), st.sampled_from(["f", "g"]), json_inputs),
    st.builds(tool_result, st.sampled_from(IDS), st.one_of(short_text, nested), st.booleans()),
    st.builds(tool_use, st.sampled_from(IDS), st.sampled_from(["f", "g"]), json_inputs),
    st.builds(tool_result, st.sampled_from(IDS), st.one_of(short_text, nested), st.booleans()),
    images,
    st.builds(system_change, short_text),
)
message_lists = st.lists(
    st.builds(lambda p, c: CompiledMessage(p, c), st.sampled_from(PARTICIPANTS), st.lists(blocks, max_size=4)),
    max_size=8,
)


@FAST
@given(message_lists)
def test_property_anthropic_form_is_valid(msgs):
    """SPEC 3.3.1 (property): for any compile, the Anthropic form alternates user/assistant starting
    with user, answers every call first thing in the very next message, puts every result right
    after its call, has no empty content and no audience key; and it is deterministic."""
    before = copy.deepcopy(msgs)
    out = to_anthropic(msgs, "ann")
    check_anthropic_shape(out)
    assert out == to_anthropic(msgs, "ann")
    assert msgs == before
    # every own call survives as a tool block or, for a reused id, as text
    own_ids = {b.id for msg in msgs if msg.participant == "ann" for b in msg.content if b.type == "tool_use"}
    emitted_ids = {b["id"] for x in out for b in x["content"] if b["type"] == "tool_use"}
    assert emitted_ids == own_ids


@FAST
@given(message_lists, st.lists(st.builds(text, short_text), max_size=2))
def test_property_openai_form_is_valid(msgs, system):
    """SPEC 3.3.1 (property): for any compile, every OpenAI assistant tool call is answered by exactly
    one following tool message before the next non-tool message, every tool message answers a call of
    the nearest preceding assistant message, nothing is empty and no audience key appears."""
    before = copy.deepcopy(msgs)
    out = to_openai(msgs, "ann", system)
    check_openai_shape(out)
    assert out == to_openai(msgs, "ann", system)
    assert msgs == before
    own_ids = {b.id for msg in msgs if msg.participant == "ann" for b in msg.content if b.type == "tool_use"}
    called = {c["id"] for x in out if x["role"] == "assistant" for c in x.get("tool_calls", ())}
    assert called == own_ids


@FAST
@given(message_lists)
def test_property_every_text_is_kept(msgs):
    """SPEC 3.3.1 (property): every non-empty text of the compile is found in the Anthropic form."""
    out = to_anthropic(msgs, "bob")
    flat = json.dumps(out, ensure_ascii=False)
    for msg in msgs:
        for block in msg.content:
            if block.type == "text" and block.text:
                assert json.dumps(block.text)[1:-1] in flat


# -- 8. Memories in the agent's own voice; injections; the SDKs' own request types (issue 12) ----


def _force(value: Any) -> Any:
    """Walk a pydantic-validated value, iterating the lazy iterables so every item is validated."""
    if isinstance(value, dict):
        return {k: _force(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, bytes, int, float, bool)):
        return value
    return [_force(v) for v in value]  # a list, or a pydantic ValidatorIterator


def anthropic_request_valid(out: list[dict[str, Any]]) -> None:
    """Every message and block of ``out`` validates as the Anthropic SDK's request params
    (``ContentBlockParam``, unknown keys refused)."""
    from anthropic.types import ContentBlockParam

    blocks = TypeAdapter(ContentBlockParam, config=ConfigDict(extra="forbid"))
    for message in out:
        assert message["role"] in ("user", "assistant")
        for block in message["content"]:
            _force(blocks.validate_python(block))


def openai_request_valid(out: list[dict[str, Any]]) -> None:
    """Every message of ``out`` validates as the OpenAI SDK's ``ChatCompletionMessageParam``."""
    from openai.types.chat import ChatCompletionMessageParam

    adapter = TypeAdapter(ChatCompletionMessageParam, config=ConfigDict(extra="forbid"))
    for message in out:
        _force(adapter.validate_python(message))


def test_summary_sources_speak_as_the_assistant():
    """Issue 12: a memory's recall marker and text (``summary`` sources) take the assistant role
    in both forms, whoever their participant, merge with the assistant's own lines around them,
    and alternate with the user turns; without sources they stay where the participant puts them."""
    recall = SourceEntry("summary", ("m1", "m2"), "L1-1")
    msgs = [
        m("user", text("Where do we meet?")),
        m("Context Manager", text("[Recall L1-1]")),
        m("assistant", text("- user: We meet in Lisbon.")),
        m("ann", text("I remember.")),
        m("bob", text("Good.")),
    ]
    sources = [SourceEntry("raw", ("m0",)), recall, recall, SourceEntry("raw", ("m3",)), SourceEntry("raw", ("m4",))]
    out = to_anthropic(msgs, "ann", sources=sources)
    check_anthropic_shape(out)
    anthropic_request_valid(out)
    assert out == [
        {"role": "user", "content": [{"type": "text", "text": "Where do we meet?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "[Recall L1-1]"},
                {"type": "text", "text": "- user: We meet in Lisbon."},
                {"type": "text", "text": "I remember."},
            ],
        },
        {"role": "user", "content": [{"type": "text", "text": "bob: Good."}]},
    ]
    openai = to_openai(msgs, "ann", sources=sources)
    check_openai_shape(openai)
    openai_request_valid(openai)
    assert openai == [
        {"role": "user", "content": "Where do we meet?"},
        {"role": "assistant", "content": "[Recall L1-1]\n\n- user: We meet in Lisbon.\n\nI remember."},
        {"role": "user", "content": "bob: Good."},
    ]
    plain = to_anthropic(msgs, "ann")
    assert [x["role"] for x in plain] == ["user", "assistant", "user"]
    assert texts_of(plain[0])[1] == "Context Manager: [Recall L1-1]"


def test_a_memory_first_gets_a_user_turn_before_it():
    """Issue 12: a compile that opens with a memory still starts with a user turn (Anthropic)."""
    recall = SourceEntry("summary", ("m1",), "L1-1")
    out = to_anthropic([m("Context Manager", text("[Recall L1-1]")), m("x", text("memo"))], "ann", sources=[recall, recall])
    check_anthropic_shape(out)
    assert [x["role"] for x in out] == ["user", "assistant"]
    assert texts_of(out[1]) == ["[Recall L1-1]", "memo"]


def test_sources_must_match_the_messages():
    """Issue 12: ``sources`` holds one entry per message, or the call is refused."""
    with pytest.raises(ValueError, match="one entry per message"):
        to_anthropic([m("user", text("a"))], "ann", sources=[])
    with pytest.raises(ValueError, match="one entry per message"):
        to_openai([m("user", text("a"))], "ann", sources=[SourceEntry("raw"), SourceEntry("raw")])


async def test_compiled_memories_speak_in_the_agents_voice_end_to_end(store_path):
    """Issue 12: ``ctx.to_anthropic(assistant="ann")`` and ``ctx.to_openai("ann")`` of a compressed
    compile put every memory and recall marker in ann's assistant turns (never in a user turn, never
    as ``Context Manager:`` or ``assistant:``), alternate correctly, and validate as each SDK's own
    request types."""
    async with open_runtime(store_path, model=ExtractiveModel()) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        strategy = AutobiographicalStrategy(target_chunk_tokens=30, head_window_tokens=0, recent_window_tokens=40, holdback_chunks=0)
        ann = await rt.open_manager("agents/ann", strategy=strategy, view_reader="ann")
        for i in range(24):
            speaker = ("user", "ann", "bob")[i % 3]
            await host.add_message(speaker, [text(f"Line {i} about the venue and the budget of the workshop.")])
        await ann.drain()
        ctx = await ann.compile(max_tokens=100_000)
        memories = [msg for msg, src in zip(ctx.messages, ctx.provenance.entries, strict=True) if src.kind == "summary"]
        assert memories, "the compile holds memories"
        memory_texts = {b.text for msg in memories for b in msg.content}

        out = ctx.to_anthropic("ann")
        check_anthropic_shape(out)
        anthropic_request_valid(out)
        for message in out:
            for block in message["content"]:
                if block["type"] != "text":
                    continue
                if block["text"] in memory_texts:
                    assert message["role"] == "assistant"
                if message["role"] == "user":
                    assert "[Recall" not in block["text"]
                    assert not block["text"].startswith(("Context Manager:", "assistant:"))
        assert memory_texts <= {b["text"] for x in out if x["role"] == "assistant" for b in x["content"]}

        openai = ctx.to_openai("ann")
        check_openai_shape(openai)
        openai_request_valid(openai)
        for message in openai:
            if message["role"] == "user":
                assert "[Recall" not in message["content"]
        joined = "\n\n".join(x["content"] or "" for x in openai if x["role"] == "assistant")
        assert all(t in joined for t in memory_texts)


async def test_injected_content_reaches_the_model_without_internal_labels(store_path):
    """Issue 9 and 12: positioned injections reach the model as their text alone, never behind a
    ``system_context:<namespace>:`` label, in both forms."""
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        await ann.add_message("user", [text("Book the room.")])
        ctx = await ann.compile(
            injections=[
                Injection("agents/ann", "before_user", [text("Remember the deposit.")]),
                Injection("agents/ann", "after_user", [text("Today is Monday.")]),
            ]
        )
        assert any(msg.participant.startswith("system_context:") for msg in ctx.messages)
        for form in (ctx.to_anthropic("ann"), ctx.to_openai("ann")):
            dumped = json.dumps(form)
            assert "system_context" not in dumped
            assert "Remember the deposit." in dumped and "Today is Monday." in dumped


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message_lists)
def test_property_forms_are_valid_sdk_requests(msgs):
    """Issue 12 (property): for any compile, both forms validate as the SDKs' own request types."""
    anthropic_request_valid(to_anthropic(msgs, "ann"))
    openai_request_valid(to_openai(msgs, "ann"))
