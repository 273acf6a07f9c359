"""Provider-shaped input: ``from_anthropic`` and ``from_openai`` (issue 12, item 2).

Sections:
  1. Anthropic messages in
  2. OpenAI messages in
  3. The SDKs' own objects, and appending what a model returned
  4. Refusals
  5. Properties: the inverse of the request forms (Hypothesis)
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asides import (
    CompiledMessage,
    MalformedContentError,
    PassthroughStrategy,
    ProviderMessage,
    from_anthropic,
    from_openai,
    image,
    open_runtime,
    redacted_thinking,
    system_change,
    text,
    thinking,
    tool_result,
    tool_use,
)
from asides.lowlevel import block_from_json, check_content
from asides.strategies._provider_forms import to_anthropic, to_openai

SOME = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def pm(participant: str, *blocks: Any) -> ProviderMessage:
    return ProviderMessage(participant, tuple(blocks))


# -- 1. Anthropic messages in -------------------------------------------------------------------


def test_anthropic_text_images_tools_and_thinking():
    """Every Anthropic block asides has a form for comes in as that block, by the participant its
    role names (``assistant=`` and ``user=`` choose the names)."""
    messages = [
        {"role": "user", "content": "Hello."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look:"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}},
                {"type": "image", "source": {"type": "url", "url": "https://e.x/photo.jpg"}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Check it.", "signature": "sig"},
                {"type": "redacted_thinking", "data": "enc"},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "contents"}, {"type": "image", "source": {"type": "url", "url": "https://e.x/x"}}],
                    "is_error": True,
                },
                {"type": "tool_result", "tool_use_id": "t2"},
            ],
        },
    ]
    before = copy.deepcopy(messages)
    got = from_anthropic(messages, assistant="ann", user="host")
    assert got == (
        pm("host", text("Hello.")),
        pm("host", text("Look:"), image("image/png", data="QUJD"), image("image/jpeg", url="https://e.x/photo.jpg")),
        pm("ann", thinking("Check it.", "sig"), redacted_thinking("enc"), text("Checking."), tool_use("t1", "read", {"path": "a"})),
        pm("host", tool_result("t1", [text("contents"), image("image/*", url="https://e.x/x")], is_error=True), tool_result("t2", "")),
    )
    assert messages == before
    participant, content = got[0]
    assert (participant, content) == ("host", (text("Hello."),))


# -- 2. OpenAI messages in ----------------------------------------------------------------------


def test_openai_roles_parts_tool_calls_and_tool_messages():
    """System and developer messages keep their role as participant; a user message's ``name``
    names its participant; image_url parts (data URLs and URLs) become images; ``tool_calls``
    become tool calls after the text; a run of ``tool`` messages goes to the front of the next
    user message, ``[tool error] `` marking an error."""
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": [{"type": "text", "text": "Use tools."}]},
        {"role": "user", "name": "bob", "content": "Hi."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "This one:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}},
                {"type": "image_url", "image_url": {"url": "https://e.x/p.gif?size=2"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Two calls.",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "g", "arguments": '{"x": [1, 2]}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "A"},
        {"role": "tool", "tool_call_id": "b", "content": "[tool error] B failed"},
        {"role": "user", "content": "Thanks."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "h", "arguments": ""}}]},
        {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "C"}]},
        {"role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]},
    ]
    got = from_openai(messages, assistant="ann")
    assert got == (
        pm("system", text("Be brief.")),
        pm("developer", text("Use tools.")),
        pm("bob", text("Hi.")),
        pm("user", text("This one:"), image("image/png", data="QUJD"), image("image/gif", url="https://e.x/p.gif?size=2")),
        pm("ann", text("Two calls."), tool_use("a", "f", {}), tool_use("b", "g", {"x": [1, 2]})),
        pm("user", tool_result("a", "A"), tool_result("b", "B failed", is_error=True), text("Thanks.")),
        pm("ann", tool_use("c", "h", {})),
        pm("user", tool_result("c", "C")),
        pm("ann", text("No.")),
    )


def test_openai_trailing_tool_messages_make_a_user_message():
    """Tool messages at the end make a user message of their own."""
    got = from_openai([{"role": "tool", "tool_call_id": "a", "content": "A"}])
    assert got == (pm("user", tool_result("a", "A")),)


# -- 3. The SDKs' own objects, and appending what a model returned ------------------------------


def test_sdk_objects_are_read():
    """A reply from either SDK (its pydantic objects, not dicts) is read as well."""
    import anthropic.types
    import openai.types.chat

    reply = anthropic.types.Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "content": [{"type": "text", "text": "On it."}, {"type": "tool_use", "id": "t1", "name": "look", "input": {"q": "x"}}],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    got = from_anthropic([{"role": "assistant", "content": reply.content}], assistant="ann")
    assert got == (pm("ann", text("On it."), tool_use("t1", "look", {"q": "x"})),)

    completion = openai.types.chat.ChatCompletion.model_validate(
        {
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": "Sure.",
                        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}],
                    },
                }
            ],
        }
    )
    got = from_openai([completion.choices[0].message], assistant="ann")
    assert got == (pm("ann", text("Sure."), tool_use("call_1", "f", {"a": 1})),)


async def test_a_host_appends_what_the_model_returned(store_path):
    """What ``from_X`` returns goes straight into ``add_message``, and compiles back as it came."""
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy())
        call = {"type": "tool_use", "id": "t1", "name": "read", "input": {}}
        returned = [
            {"role": "user", "content": [{"type": "text", "text": "What is in a?"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Reading."}, call]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "hello"}]},
        ]
        for participant, content in from_anthropic(returned, assistant="ann"):
            await ann.add_message(participant, content)
        ctx = await ann.compile()
        assert ctx.to_anthropic("ann") == returned


async def test_add_message_takes_an_anthropic_image_block(store_path):
    """An Anthropic image block (``type: image`` with a ``source``) is content ``add_message`` (and
    ``block_from_json``) accepts: it is stored as the image block it stands for. A source asides has
    no form for is refused at its path, and nothing is written."""
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy())
        stored = await ann.add_message(
            "user",
            [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}},
                {"type": "image", "source": {"type": "url", "url": "https://e.x/a.webp"}},
            ],
        )
        assert stored.content == (image("image/png", data="QUJD"), image("image/webp", url="https://e.x/a.webp"))
        assert block_from_json({"type": "image", "source": {"type": "url", "url": "https://e.x/b.png"}}) == image(
            "image/png", url="https://e.x/b.png"
        )
        with pytest.raises(MalformedContentError) as refused:
            await ann.add_message("user", [text("x"), {"type": "image", "source": {"type": "file", "file_id": "f1"}}])
        assert refused.value.path == "content[1].source.type"
        assert len(ann.get_all_messages()) == 1


# -- 4. Refusals --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "path", "words"),
    [
        ([{"role": "system", "content": "x"}], "messages[0].role", "'user' or 'assistant'"),
        ([{"role": "user", "content": [{"type": "document", "source": {}}]}], "messages[0].content[0]", "'document' block"),
        (
            [{"role": "user", "content": [{"type": "image", "source": {"type": "file", "file_id": "f"}}]}],
            "messages[0].content[0].source.type",
            "file",
        ),
        ([{"role": "user", "content": []}], "messages[0].content", "no block"),
        ([{"role": "user", "content": 3}], "messages[0].content", "string or a list"),
        (
            [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": [1]}]}],
            "messages[0].content[0].input",
            "JSON object",
        ),
        (
            [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "document"}]}]}],
            "messages[0].content[0].content[0]",
            "text and image",
        ),
        (["hello"], "messages[0]", "JSON object"),
    ],
)
def test_anthropic_refusals_name_the_place(messages, path, words):
    """Input with no asides form is refused with ``MalformedContentError`` naming the exact place."""
    with pytest.raises(MalformedContentError) as refused:
        from_anthropic(messages)
    assert refused.value.path == path
    assert words in str(refused.value)


@pytest.mark.parametrize(
    ("messages", "path", "words"),
    [
        ([{"role": "function", "name": "f", "content": "x"}], "messages[0].role", "'tool'"),
        ([{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}], "messages[0].content[0]", "'input_audio' part"),
        ([{"role": "assistant", "content": None}], "messages[0].content", "no block"),
        (
            [{"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{oops"}}]}],
            "messages[0].tool_calls[0].function.arguments",
            "must be JSON",
        ),
        (
            [{"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "[1]"}}]}],
            "messages[0].tool_calls[0].function.arguments",
            "JSON object",
        ),
        (
            [{"role": "assistant", "tool_calls": [{"id": "a", "type": "custom", "custom": {}}]}],
            "messages[0].tool_calls[0].type",
            "function calls",
        ),
        ([{"role": "user", "name": "", "content": "x"}], "messages[0].name", "non-empty"),
        ([{"role": "tool", "content": "x"}], "messages[0].tool_call_id", "string"),
    ],
)
def test_openai_refusals_name_the_place(messages, path, words):
    """As for Anthropic: refused with the exact place named."""
    with pytest.raises(MalformedContentError) as refused:
        from_openai(messages)
    assert refused.value.path == path
    assert words in str(refused.value)


# -- 5. Properties: the inverse of the request forms --------------------------------------------

nonempty = st.sampled_from(["a", "hello", "x y", "ünï", "bob: not a prefix"])
url_images = st.sampled_from([image("image/png", url="https://e.x/a.png"), image("image/jpeg", url="https://e.x/b.jpg")])
data_images = st.builds(lambda d, t: image(t, data=d), st.sampled_from(["QQ==", "Qk0="]), st.sampled_from(["image/png", "image/webp"]))
images = st.one_of(url_images, data_images)


@st.composite
def anthropic_carried(draw: Any) -> list[CompiledMessage]:
    """Compiles the Anthropic form carries as they are: user and ``ann`` alternate from a user
    turn; every call of ann's is answered first thing in the next user turn, in call order."""
    ids = (f"c{n}" for n in itertools.count())
    messages: list[CompiledMessage] = []
    pending: list[str] = []
    for turn in range(draw(st.integers(0, 6))):
        if turn % 2 == 0:
            nested = st.lists(st.one_of(st.builds(text, nonempty), images), min_size=1, max_size=2)
            results = [tool_result(i, draw(st.one_of(nonempty, nested)), draw(st.booleans())) for i in pending]
            own = draw(st.lists(st.one_of(st.builds(text, nonempty), images), min_size=0 if results else 1, max_size=3))
            messages.append(CompiledMessage("user", results + own))
            pending = []
        else:
            blocks = draw(
                st.lists(
                    st.one_of(
                        st.builds(text, nonempty),
                        st.builds(thinking, nonempty, st.sampled_from(["s1", "s2"])),
                        st.builds(redacted_thinking, st.sampled_from(["enc"])),
                        st.builds(lambda n, i: tool_use(next(ids), n, i), st.sampled_from(["f", "g"]), st.sampled_from([{}, {"q": 1}])),
                    ),
                    min_size=1,
                    max_size=4,
                )
            )
            messages.append(CompiledMessage("ann", blocks))
            pending = [b.id for b in blocks if b.type == "tool_use"]
    if pending:
        messages.append(CompiledMessage("user", [tool_result(i, "done") for i in pending]))
    return messages


@st.composite
def openai_carried(draw: Any) -> list[CompiledMessage]:
    """Compiles the OpenAI form carries as they are: user and ``ann`` alternate from a user turn;
    a user turn answers ann's calls first (plain text results), then holds one text, or images
    with any texts; ann says at most one text, then makes its calls."""
    ids = (f"c{n}" for n in itertools.count())
    messages: list[CompiledMessage] = []
    pending: list[str] = []
    for turn in range(draw(st.integers(0, 6))):
        if turn % 2 == 0:
            results = [tool_result(i, draw(nonempty), draw(st.booleans())) for i in pending]
            shape = draw(st.sampled_from(["text", "images"] + (["none"] if results else [])))
            if shape == "text":
                own = [text(draw(nonempty))]
            elif shape == "images":
                own = draw(st.lists(st.one_of(st.builds(text, nonempty), images), min_size=1, max_size=3))
                if not any(b.type == "image" for b in own):
                    own.append(draw(images))
            else:
                own = []
            messages.append(CompiledMessage("user", results + own))
            pending = []
        else:
            says = [text(draw(nonempty))] if draw(st.booleans()) else []
            calls = [tool_use(next(ids), "f", {"n": n}) for n in range(draw(st.integers(0 if says else 1, 2)))]
            messages.append(CompiledMessage("ann", says + calls))
            pending = [c.id for c in calls]
    if pending:
        messages.append(CompiledMessage("user", [tool_result(i, "done") for i in pending]))
    return messages


def as_provider(messages: list[CompiledMessage]) -> tuple[ProviderMessage, ...]:
    return tuple(ProviderMessage(m.participant, m.content) for m in messages)


@SOME
@given(anthropic_carried())
def test_property_from_anthropic_inverts_to_anthropic(messages):
    """Property: for compiles the Anthropic form carries as they are, ``from_anthropic(to_anthropic(
    ctx))`` gives the compiled participants and content back."""
    assert from_anthropic(to_anthropic(messages, "ann"), assistant="ann") == as_provider(messages)


@SOME
@given(openai_carried())
def test_property_from_openai_inverts_to_openai(messages):
    """Property: the same for the OpenAI form."""
    assert from_openai(to_openai(messages, "ann"), assistant="ann") == as_provider(messages)


PARTICIPANTS = ["ann", "bob", "user", "Context Manager"]
short = st.sampled_from(["", "a", "x y"])
any_blocks = st.one_of(
    st.builds(text, short),
    st.builds(thinking, short, st.sampled_from([None, "sig"])),
    st.builds(redacted_thinking, st.sampled_from(["", "enc"])),
    st.builds(tool_use, st.sampled_from(["t1", "t2", "t3"]), st.sampled_from(["f", "g"]), st.sampled_from([{}, {"q": "ü"}])),
    st.builds(
        tool_result,
        st.sampled_from(["t1", "t2", "t3"]),
        st.one_of(short, st.lists(st.one_of(st.builds(text, short), images), max_size=2)),
        st.booleans(),
    ),
    images,
    st.builds(system_change, short),
)
any_compile = st.lists(st.builds(CompiledMessage, st.sampled_from(PARTICIPANTS), st.lists(any_blocks, max_size=4)), max_size=8)


@SOME
@given(any_compile)
def test_property_provider_forms_are_fixed_points(messages):
    """Property: for any compile, reading a provider form back and writing it again gives the same
    form (``to_X(from_X(to_X(ctx))) == to_X(ctx)``), and everything read back is content
    ``add_message`` accepts (blocks, no audience, never empty)."""
    anthropic = to_anthropic(messages, "ann")
    back = from_anthropic(anthropic, assistant="ann")
    assert to_anthropic([CompiledMessage(p, c) for p, c in back], "ann") == anthropic
    openai = to_openai(messages, "ann")
    again = from_openai(openai, assistant="ann")
    assert to_openai([CompiledMessage(p, c) for p, c in again], "ann") == openai
    for message in back + again:
        assert message.participant and message.content
        check_content(message.content, path="content", allow_audience=True)
