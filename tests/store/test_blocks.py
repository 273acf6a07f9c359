"""Content blocks: the JSON wire form, where an audience may stand, and the reader's view.

Covers SPEC 3.1 (content blocks, constructors, wire form), 3.3.1 (``block_to_json`` omits a
``None`` audience; constructors take an audience only where a write may carry one), A2 (the
reader's view of content), W1/W2 (where an audience is refused) and E (malformed data: refused
with a path on write, read fail-closed from disk).

Sections:
  1. Hypothesis strategies
  2. Round trips through the wire form (property)
  3. Arbitrary JSON: decoded or refused with a path, never anything else (property)
  4. W1 / W2: every place an audience is refused, with the exact path
  5. Constructors and audience normalisation
  6. content_for_reader (A2)
  7. decode_stored_content: lenient reading of stored data
  8. has_audience
"""

from __future__ import annotations

import copy
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asides import image, redacted_thinking, system_change
from asides.lowlevel import UnreadableBlock, check_content, coerce_content, has_audience
from asides.store import (
    AsidesError,
    ImageBlock,
    MalformedContentError,
    RedactedThinkingBlock,
    SystemChangeBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    block_from_json,
    block_to_json,
    content_for_reader,
    content_from_json,
    content_to_json,
    text,
    thinking,
    tool_result,
    tool_use,
)
from asides.store._blocks import decode_stored_content

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

BLOCK_CLASSES = (
    TextBlock,
    ThinkingBlock,
    RedactedThinkingBlock,
    ToolUseBlock,
    ToolResultBlock,
    ImageBlock,
    SystemChangeBlock,
)
REAL_TYPES = ["text", "thinking", "redacted_thinking", "tool_use", "tool_result", "image", "system_change"]
FIELD_NAMES = [
    "text",
    "thinking",
    "signature",
    "data",
    "id",
    "name",
    "input",
    "tool_use_id",
    "content",
    "is_error",
    "media_type",
    "url",
    "audience",
]
READERS = ["ann", "bob", "Ann", "an", "anne"]


# =============================================================================================
# 1. Hypothesis strategies
# =============================================================================================

# A reader's name: one line of printable text (no control characters, line separators or lone
# surrogates; Hypothesis draws no surrogates unless asked).
reader_names = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=8)
pool_names = st.sampled_from(READERS)


def audiences(names=reader_names):
    """None, or a list of at least one reader name (an empty audience is refused)."""
    return st.none() | st.lists(names, min_size=1, max_size=3)


# JSON that survives a JSON round trip unchanged (no NaN / infinities), for tool inputs.
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10)
)
json_data = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=12,
)
# Sometimes a key literally named "audience" inside the input: it is data (W1).
tool_inputs = st.dictionaries(st.text(max_size=8) | st.just("audience"), json_data, max_size=4)
ids = st.text(min_size=1, max_size=10)
media_types = st.sampled_from(["image/png", "image/jpeg", "image/gif"]) | st.text(min_size=1, max_size=10)


def text_blocks(aud=None):
    aud = audiences() if aud is None else aud
    return st.builds(text, st.text(max_size=20), aud)


def thinking_blocks(aud=None):
    aud = audiences() if aud is None else aud
    return st.builds(thinking, st.text(max_size=20), st.none() | st.text(max_size=10), aud)


def redacted_blocks(aud=None):
    aud = audiences() if aud is None else aud
    return st.builds(redacted_thinking, st.text(max_size=20), aud)


tool_use_blocks = st.builds(tool_use, ids, ids, tool_inputs)
image_blocks = st.builds(image, media_types, data=st.text(max_size=20)) | st.builds(image, media_types, url=st.text(max_size=20))
nested_blocks = text_blocks(st.none()) | image_blocks
tool_result_blocks = st.builds(tool_result, ids, st.text(max_size=20) | st.lists(nested_blocks, max_size=3), st.booleans())
system_change_blocks = st.builds(system_change, st.text(max_size=20))


def any_blocks(aud=None):
    aud = audiences() if aud is None else aud
    return st.one_of(
        text_blocks(aud),
        thinking_blocks(aud),
        redacted_blocks(aud),
        tool_use_blocks,
        tool_result_blocks,
        image_blocks,
        system_change_blocks,
    )


blocks = any_blocks()
contents = st.lists(blocks, max_size=5).map(tuple)
# For reader tests: audiences drawn from a small pool so that readers actually match.
pool_contents = st.lists(any_blocks(audiences(pool_names)), max_size=6).map(tuple)


# Arbitrary JSON values, with dicts biased to look like blocks (real and junk types / keys).
any_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)  # floats() includes NaN and infinities


def _blocklike(children):
    types = st.sampled_from(REAL_TYPES) | st.text(max_size=6) | any_scalars
    keys = st.sampled_from(FIELD_NAMES) | st.text(max_size=6)
    values = children | st.text(max_size=8) | st.lists(st.text(max_size=4), max_size=3) | st.booleans()
    return st.builds(
        lambda t, fields, with_type: {"type": t, **fields} if with_type else fields,
        types,
        st.dictionaries(keys, values, max_size=6),
        st.booleans() | st.just(True),
    )


any_json = st.recursive(
    any_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4) | _blocklike(children),
    max_leaves=25,
)


@st.composite
def mutated_block_json(draw):
    """The wire form of a valid block, then a few random edits (set, delete, nested edit)."""
    obj = copy.deepcopy(block_to_json(draw(blocks)))
    for _ in range(draw(st.integers(0, 3))):
        action = draw(st.sampled_from(["set", "delete", "nested"]))
        if action == "set":
            key = draw(st.sampled_from(["type", *FIELD_NAMES]) | st.text(max_size=5))
            obj[key] = draw(any_json | st.sampled_from(REAL_TYPES) | st.lists(st.text(max_size=3), max_size=2))
        elif action == "delete" and obj:
            del obj[draw(st.sampled_from(sorted(obj)))]
        elif action == "nested" and isinstance(obj.get("content"), list) and obj["content"]:
            index = draw(st.integers(0, len(obj["content"]) - 1))
            inner = obj["content"][index]
            if isinstance(inner, dict):
                key = draw(st.sampled_from(["type", *FIELD_NAMES]))
                inner[key] = draw(any_json | st.lists(st.text(max_size=3), max_size=2))
    return obj


block_json_candidates = any_json | mutated_block_json()
content_json_candidates = any_json | st.lists(block_json_candidates, max_size=4)


def _walk_json_blocks(obj):
    """Every block dict in a wire-form block, nested tool-result content included."""
    yield obj
    content = obj.get("content")
    if obj.get("type") == "tool_result" and isinstance(content, list):
        for inner in content:
            yield from _walk_json_blocks(inner)


def _no_audience_anywhere(blocks_) -> bool:
    for block in blocks_:
        for part in _walk_json_blocks(block_to_json(block)):
            if "audience" in part:
                return False
    return True


def _stored(*items):
    blocks_, _problems = decode_stored_content(list(items))
    return blocks_


# =============================================================================================
# 2. Round trips through the wire form
# =============================================================================================


@FAST
@given(blocks)
def test_block_round_trip(block):
    """SPEC 3.1 (wire form): block_from_json(block_to_json(b)) == b for every block type."""
    wire = block_to_json(block)
    # The wire form is plain JSON.
    assert json.loads(json.dumps(wire)) == wire
    assert block_from_json(wire) == block
    assert block_from_json(json.loads(json.dumps(wire))) == block


@FAST
@given(contents)
def test_content_round_trip(content):
    """SPEC 3.1 (wire form): content_from_json(content_to_json(bs)) == bs."""
    wire = content_to_json(content)
    assert isinstance(wire, list)
    assert len(wire) == len(content)
    decoded = content_from_json(wire)
    assert isinstance(decoded, tuple)
    assert decoded == content
    assert content_from_json(json.loads(json.dumps(wire))) == content


@FAST
@given(blocks)
def test_block_to_json_omits_audience_when_none(block):
    """SPEC 3.3.1: block_to_json omits `audience` when it is None (nested blocks included)."""
    wire = block_to_json(block)
    assert wire["type"] == block.type
    if block.audience is None:
        assert "audience" not in wire
    else:
        assert wire["audience"] == list(block.audience)
    if isinstance(block, ToolResultBlock) and isinstance(block.content, tuple):
        for inner in wire["content"]:
            assert "audience" not in inner


def test_round_trip_examples_of_every_shape():
    """SPEC 3.1, 3.3.1: concrete wire forms of every block type, audience present only when set."""
    cases = [
        (text("hi"), {"type": "text", "text": "hi"}),
        (text("hi", ["ann", "bob"]), {"type": "text", "text": "hi", "audience": ["ann", "bob"]}),
        (thinking("t", "sig"), {"type": "thinking", "thinking": "t", "signature": "sig"}),
        (thinking("t", audience=["ann"]), {"type": "thinking", "thinking": "t", "audience": ["ann"]}),
        (redacted_thinking("xx", ["ann"]), {"type": "redacted_thinking", "data": "xx", "audience": ["ann"]}),
        (tool_use("c1", "f", {"a": [1, {"b": None}]}), {"type": "tool_use", "id": "c1", "name": "f", "input": {"a": [1, {"b": None}]}}),
        (tool_result("c1", "ok"), {"type": "tool_result", "tool_use_id": "c1", "content": "ok"}),
        (
            tool_result("c1", [text("a"), image("image/png", url="u")], is_error=True),
            {
                "type": "tool_result",
                "tool_use_id": "c1",
                "content": [{"type": "text", "text": "a"}, {"type": "image", "media_type": "image/png", "url": "u"}],
                "is_error": True,
            },
        ),
        (image("image/png", data="AAAA"), {"type": "image", "media_type": "image/png", "data": "AAAA"}),
        (system_change("new tools"), {"type": "system_change", "text": "new tools"}),
    ]
    for block, wire in cases:
        assert block_to_json(block) == wire
        assert block_from_json(wire) == block


def test_valid_content_decodes_from_storage_without_problems():
    """SPEC 3.1, E: well-formed stored content decodes exactly, with no problems reported."""
    content = (text("a", ["ann"]), tool_use("c", "f", {"audience": "x"}), tool_result("c", [text("r")]))
    decoded, problems = decode_stored_content(content_to_json(content))
    assert decoded == content
    assert problems == []


@FAST
@given(contents)
def test_valid_content_decodes_from_storage_property(content):
    """SPEC 3.1, E: decode_stored_content(content_to_json(bs)) == (bs, no problems)."""
    decoded, problems = decode_stored_content(content_to_json(content))
    assert decoded == content
    assert problems == []


def test_wire_form_is_independent_of_the_block():
    """SPEC 3.1: a block is frozen; editing its wire form afterwards must not change the block."""
    block = tool_use("c1", "f", {"k": [1]})
    wire = block_to_json(block)
    wire["input"]["k"].append(2)
    wire["input"]["new"] = True
    assert block.input == {"k": [1]}
    assert block == tool_use("c1", "f", {"k": [1]})


# =============================================================================================
# 3. Arbitrary JSON: decoded, or refused with a path under the root, never anything else
# =============================================================================================


def _assert_refusal_under(exc: MalformedContentError, root: str) -> None:
    assert isinstance(exc, ValueError)
    assert isinstance(exc, AsidesError)
    assert isinstance(exc.path, str) and exc.path
    assert exc.path.startswith(root)


@FAST
@given(block_json_candidates)
def test_block_from_json_decodes_or_refuses_with_path(obj):
    """SPEC 3.1, E: block_from_json of any JSON value decodes or raises MalformedContentError
    whose path starts with "block"; a decoded block re-encodes to an equal block."""
    try:
        block = block_from_json(obj)
    except MalformedContentError as exc:
        _assert_refusal_under(exc, "block")
        return
    assert isinstance(block, BLOCK_CLASSES)
    assert block_from_json(block_to_json(block)) == block


@FAST
@given(content_json_candidates)
def test_content_from_json_decodes_or_refuses_with_path(obj):
    """SPEC 3.1, E: content_from_json of any JSON value decodes or raises MalformedContentError
    whose path starts with "content"; decoded content re-encodes to equal content."""
    try:
        decoded = content_from_json(obj)
    except MalformedContentError as exc:
        _assert_refusal_under(exc, "content")
        return
    assert isinstance(decoded, tuple)
    assert all(isinstance(b, BLOCK_CLASSES) for b in decoded)
    assert content_from_json(content_to_json(decoded)) == decoded


@FAST
@given(block_json_candidates, st.sampled_from(["content[3]", "messages[0].content[1]", "x"]))
def test_block_from_json_custom_root_path(obj, root):
    """SPEC 3.1, E: the root ``path`` changes where a refusal is reported and nothing else: the
    same value decodes to the same block under either root, or is refused under both, at the same
    place below the root and for the same reason."""
    try:
        default = block_from_json(obj)
    except MalformedContentError as exc:
        with pytest.raises(MalformedContentError) as info:
            block_from_json(obj, path=root)
        _assert_refusal_under(info.value, root)
        assert info.value.path == root + exc.path[len("block") :]
        assert info.value.problem == exc.problem
        return
    block = block_from_json(obj, path=root)
    assert block == default
    assert isinstance(block, BLOCK_CLASSES)
    assert block_to_json(block) == block_to_json(default)


@FAST
@given(content_json_candidates)
def test_decode_stored_content_never_raises_and_reads_fail_closed(obj):
    """SPEC E, A2: decode_stored_content never raises on any JSON; whatever it returns is read
    fail-closed by content_for_reader (no unreadable block and no audience ever reaches a reader)."""
    decoded, problems = decode_stored_content(obj)
    assert isinstance(decoded, tuple)
    assert isinstance(problems, list) and all(isinstance(p, str) for p in problems)
    assert all(isinstance(b, (*BLOCK_CLASSES, UnreadableBlock)) for b in decoded)
    if any(isinstance(b, UnreadableBlock) for b in decoded):
        assert problems
    for reader in [None, *READERS]:
        view = content_for_reader(decoded, reader)
        assert not any(isinstance(b, UnreadableBlock) for b in view)
        assert _no_audience_anywhere(view)


def test_non_json_tool_input_is_refused_with_path():
    """SPEC 3.1, E: a tool call input holding NaN (not JSON) is refused, naming `input`."""
    obj = {"type": "tool_use", "id": "a", "name": "f", "input": {"x": math.nan}}
    with pytest.raises(MalformedContentError) as info:
        block_from_json(obj)
    assert info.value.path == "block.input"
    with pytest.raises(MalformedContentError) as info:
        content_from_json([{"type": "text", "text": "a"}, obj])
    assert info.value.path == "content[1].input"


def test_nested_constructor_refusal_names_nested_path():
    """SPEC 3.1 (`.path` names the place), E: an error inside a tool result's content names it."""
    nested = {"type": "tool_use", "id": "a", "name": "f", "input": {"x": math.nan}}
    obj = {"type": "tool_result", "tool_use_id": "t", "content": [nested]}
    with pytest.raises(MalformedContentError) as info:
        content_from_json([obj])
    assert info.value.path.startswith("content[0].content[0]")


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        ("text", "block"),
        (None, "block"),
        ([{"type": "text", "text": "a"}], "block"),
        ({"text": "a"}, "block.type"),
        ({"type": "nope", "text": "a"}, "block.type"),
        ({"type": 3}, "block.type"),
        ({"type": "text"}, "block.text"),
        ({"type": "text", "text": 1}, "block.text"),
        ({"type": "text", "text": "a", "junk": 1}, "block.junk"),
        ({"type": "thinking", "thinking": "t", "signature": 5}, "block.signature"),
        ({"type": "tool_use", "id": "", "name": "f", "input": {}}, "block.id"),
        ({"type": "tool_use", "id": "a", "name": "f", "input": []}, "block.input"),
        ({"type": "tool_use", "id": "a", "name": "f"}, "block.input"),
        ({"type": "tool_result", "tool_use_id": "a", "content": 5}, "block.content"),
        ({"type": "tool_result", "tool_use_id": "a", "is_error": "yes"}, "block.is_error"),
        ({"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text"}]}, "block.content[0].text"),
        (
            {"type": "tool_result", "tool_use_id": "a", "content": [{"type": "system_change", "text": "x"}]},
            "block.content[0]",
        ),
        ({"type": "image", "media_type": "image/png"}, "block"),
        ({"type": "image", "media_type": "image/png", "data": "d", "url": "u"}, "block"),
    ],
)
def test_malformed_block_paths(obj, path):
    """SPEC 3.1, E: malformed blocks are refused with a path naming the place."""
    with pytest.raises(MalformedContentError) as info:
        block_from_json(obj)
    assert info.value.path == path


@pytest.mark.parametrize("obj", ["abc", {"type": "text", "text": "a"}, None, 3])
def test_content_from_json_requires_a_list(obj):
    """SPEC 3.1, E: content that is not a list is refused at the root path."""
    with pytest.raises(MalformedContentError) as info:
        content_from_json(obj)
    assert info.value.path == "content"


# =============================================================================================
# 4. W1 / W2: where an audience is refused, with the exact path
# =============================================================================================

TEXT = {"type": "text", "text": "plain"}
NO_AUDIENCE_WIRE = {
    "tool_use": {"type": "tool_use", "id": "c1", "name": "f", "input": {"q": 1}},
    "tool_result": {"type": "tool_result", "tool_use_id": "c1", "content": "ok"},
    "system_change": {"type": "system_change", "text": "tools changed"},
    "image_data": {"type": "image", "media_type": "image/png", "data": "AAAA"},
    "image_url": {"type": "image", "media_type": "image/png", "url": "https://x/y.png"},
}


def _with(obj, **fields):
    out = copy.deepcopy(obj)
    out.update(fields)
    return out


@pytest.mark.parametrize("kind", sorted(NO_AUDIENCE_WIRE))
def test_w1_audience_on_non_text_block_refused_by_block_from_json(kind):
    """SPEC W1, 3.3.1: block_from_json refuses an audience on a tool call, tool result, system
    change or image, naming `block.audience`."""
    obj = _with(NO_AUDIENCE_WIRE[kind], audience=["ann"])
    with pytest.raises(MalformedContentError) as info:
        block_from_json(obj)
    assert info.value.path == "block.audience"


@pytest.mark.parametrize("kind", sorted(NO_AUDIENCE_WIRE))
def test_w1_audience_on_non_text_block_refused_by_content_from_json(kind):
    """SPEC W1: content_from_json refuses it at `content[2].audience`."""
    items = [TEXT, _with(TEXT, audience=["ann"]), _with(NO_AUDIENCE_WIRE[kind], audience=["ann"])]
    with pytest.raises(MalformedContentError) as info:
        content_from_json(items)
    assert info.value.path == "content[2].audience"


@pytest.mark.parametrize("kind", sorted(NO_AUDIENCE_WIRE))
@pytest.mark.parametrize("allow_audience", [True, False])
def test_w1_audience_on_non_text_block_refused_by_check_content(kind, allow_audience):
    """SPEC W1, W2: check_content refuses an audience on a tool call, tool result, system change
    or image (blocks built leniently from wire form), naming `content[2].audience`."""
    blocks_ = coerce_content([TEXT, TEXT, _with(NO_AUDIENCE_WIRE[kind], audience=["ann"])])
    assert blocks_[2].audience == ("ann",)
    with pytest.raises(MalformedContentError) as info:
        check_content(blocks_, path="content", allow_audience=allow_audience)
    assert info.value.path == "content[2].audience"
    # The same from stored-like data.
    stored = _stored(TEXT, TEXT, _with(NO_AUDIENCE_WIRE[kind], audience=["ann"]))
    with pytest.raises(MalformedContentError) as info:
        check_content(stored, path="content", allow_audience=allow_audience)
    assert info.value.path == "content[2].audience"


@pytest.mark.parametrize(
    "make",
    [
        lambda: ToolUseBlock("c1", "f", {}, audience=("ann",)),
        lambda: tool_use("c1", "f", {}, audience=["ann"]),
        lambda: ToolResultBlock("c1", "ok", audience=("ann",)),
        lambda: tool_result("c1", "ok", audience=["ann"]),
        lambda: ImageBlock("image/png", data="AAAA", audience=("ann",)),
        lambda: image("image/png", data="AAAA", audience=["ann"]),
        lambda: SystemChangeBlock("x", audience=("ann",)),
        lambda: system_change("x", audience=["ann"]),
    ],
)
def test_w1_constructors_of_non_text_blocks_take_no_audience(make):
    """SPEC 3.3.1, W1: only text, thinking and redacted-thinking constructors accept an audience."""
    with pytest.raises(TypeError):
        make()


NESTED_WITH_AUDIENCE = {
    "type": "tool_result",
    "tool_use_id": "c1",
    "content": [_with(TEXT, audience=["ann"])],
}


def test_w1_nested_audience_refused_by_content_from_json():
    """SPEC W1, 3.1: an audience nested in a tool result is refused at `content[2].content[0].audience`."""
    items = [TEXT, TEXT, NESTED_WITH_AUDIENCE]
    with pytest.raises(MalformedContentError) as info:
        content_from_json(items)
    assert info.value.path == "content[2].content[0].audience"
    with pytest.raises(MalformedContentError) as info:
        block_from_json(NESTED_WITH_AUDIENCE)
    assert info.value.path == "block.content[0].audience"


def test_w1_nested_audience_on_second_nested_block_and_on_image():
    """SPEC W1: the path names the nested block that carries it (index and image included)."""
    obj = {
        "type": "tool_result",
        "tool_use_id": "c1",
        "content": [TEXT, _with(NO_AUDIENCE_WIRE["image_url"], audience=["ann"])],
    }
    with pytest.raises(MalformedContentError) as info:
        content_from_json([obj])
    assert info.value.path == "content[0].content[1].audience"


@pytest.mark.parametrize("allow_audience", [True, False])
def test_w1_nested_audience_refused_by_check_content(allow_audience):
    """SPEC W1, W2: check_content refuses an audience nested in a tool result at
    `content[2].content[0].audience` (block objects and wire-form dicts alike)."""
    second = text("b", ["ann"]) if allow_audience else text("b")
    as_objects = (text("a"), second, tool_result("c1", [text("x", ["ann"])]))
    with pytest.raises(MalformedContentError) as info:
        check_content(as_objects, path="content", allow_audience=allow_audience)
    assert info.value.path == "content[2].content[0].audience"
    from_wire = coerce_content([TEXT, TEXT, NESTED_WITH_AUDIENCE])
    with pytest.raises(MalformedContentError) as info:
        check_content(from_wire, path="content", allow_audience=allow_audience)
    assert info.value.path == "content[2].content[0].audience"


MALFORMED_AUDIENCES = [
    pytest.param([], id="empty"),
    pytest.param(["ann\n"], id="newline-in-name"),
    pytest.param(["ann", "b\x00b"], id="nul-in-name"),
    pytest.param(["x" * 257], id="name-too-long"),
    pytest.param("ann", id="str"),
    pytest.param(["ann", 1], id="list-with-int"),
    pytest.param([1], id="int-only"),
    pytest.param([""], id="empty-name"),
    pytest.param(["ann", ""], id="ann-and-empty"),
    pytest.param({"ann": True}, id="dict"),
    pytest.param(7, id="int"),
    pytest.param([["ann"]], id="nested-list"),
]


@pytest.mark.parametrize("audience", MALFORMED_AUDIENCES)
@pytest.mark.parametrize("kind", ["text", "thinking", "redacted_thinking"])
def test_w1_malformed_audience_refused_by_from_json(audience, kind):
    """SPEC W1, 3.1: an audience that is not a list of non-empty strings is refused with a path."""
    base = {
        "text": {"type": "text", "text": "x"},
        "thinking": {"type": "thinking", "thinking": "x"},
        "redacted_thinking": {"type": "redacted_thinking", "data": "x"},
    }[kind]
    obj = _with(base, audience=audience)
    with pytest.raises(MalformedContentError) as info:
        block_from_json(obj)
    assert info.value.path == "block.audience"
    with pytest.raises(MalformedContentError) as info:
        content_from_json([TEXT, obj])
    assert info.value.path == "content[1].audience"


@pytest.mark.parametrize("audience", MALFORMED_AUDIENCES)
def test_w1_malformed_audience_refused_by_check_content(audience):
    """SPEC W1: check_content refuses a malformed audience at `content[1].audience`."""
    for blocks_ in (
        coerce_content([TEXT, _with(TEXT, audience=audience)]),
        _stored(TEXT, _with(TEXT, audience=audience)),
    ):
        with pytest.raises(MalformedContentError) as info:
            check_content(blocks_, path="content", allow_audience=True)
        assert info.value.path == "content[1].audience"


def test_w1_well_formed_top_level_audiences_are_accepted():
    """SPEC W1: top-level text, thinking and redacted-thinking blocks may carry an audience;
    check_content accepts them and changes nothing."""
    content = (
        text("a", ["ann"]),
        thinking("t", "sig", ["ann", "bob"]),
        redacted_thinking("d", ["bob"]),
        tool_use("c1", "f", {}),
        tool_result("c1", [text("r"), image("image/png", url="u")]),
        system_change("s"),
        image("image/png", data="AAAA"),
    )
    snapshot = content_to_json(content)
    assert check_content(content, path="content", allow_audience=True) is None
    assert content_to_json(content) == snapshot
    assert content_from_json(snapshot) == content
    assert check_content(coerce_content(snapshot), path="content", allow_audience=True) is None


@pytest.mark.parametrize(
    "block",
    [
        text("a", ["ann"]),
        thinking("t", audience=["ann"]),
        redacted_thinking("d", ["ann"]),
    ],
    ids=["text", "thinking", "redacted"],
)
def test_w2_no_audience_allowed_in_injections(block):
    """SPEC W2: without allow_audience (injections, context entries) even a top-level text
    audience is refused, naming `injections[0].content[1].audience`."""
    with pytest.raises(MalformedContentError) as info:
        check_content((text("plain"), block), path="injections[0].content", allow_audience=False)
    assert info.value.path == "injections[0].content[1].audience"


def test_w2_nested_audience_in_injection_refused():
    """SPEC W2: an audience nested in an injection's tool result is refused with its path."""
    content = (tool_result("c1", [text("x"), text("y", ["ann"])]),)
    with pytest.raises(MalformedContentError) as info:
        check_content(content, path="message_injections[1].content", allow_audience=False)
    assert info.value.path == "message_injections[1].content[0].content[1].audience"


@FAST
@given(st.lists(any_blocks(st.none()), max_size=5).map(tuple))
def test_w2_content_without_audience_is_accepted_everywhere(content):
    """SPEC W1, W2: content with no audience passes check_content in both modes."""
    assert check_content(content, path="injections[0].content", allow_audience=False) is None
    assert check_content(content, path="content", allow_audience=True) is None


@FAST
@given(contents)
def test_w1_generated_top_level_audiences_pass_check_content(content):
    """SPEC W1: any content built through the constructors passes a write's check."""
    assert check_content(content, path="content", allow_audience=True) is None


def test_w1_audience_key_inside_tool_input_is_data():
    """SPEC W1: a field named `audience` inside a tool call's input is data, stored as given."""
    wire = {"type": "tool_use", "id": "c1", "name": "share", "input": {"audience": ["ann"], "x": {"audience": 3}}}
    block = block_from_json(wire)
    assert block.audience is None
    assert block.input == {"audience": ["ann"], "x": {"audience": 3}}
    assert block_to_json(block) == wire
    assert content_from_json([wire]) == (block,)
    made = tool_use("c1", "share", {"audience": ["ann"], "x": {"audience": 3}})
    assert made == block
    for allow in (True, False):
        assert check_content((block,), path="content", allow_audience=allow) is None
        assert check_content(coerce_content([wire]), path="content", allow_audience=allow) is None
    assert not has_audience((block,))
    view = content_for_reader((block,), None)
    assert view[0] is block


# =============================================================================================
# 5. Constructors and audience normalisation
# =============================================================================================


def test_constructor_normalises_list_to_tuple():
    """SPEC 3.1: the constructor normalises a list audience to a tuple."""
    block = text("x", ["ann"])
    assert block.audience == ("ann",)
    assert isinstance(block.audience, tuple)
    assert text("x", ("ann", "bob")).audience == ("ann", "bob")
    assert thinking("t", None, ["ann"]).audience == ("ann",)
    assert redacted_thinking("d", ["ann"]).audience == ("ann",)
    assert TextBlock("x", ["ann"]).audience == ("ann",)
    assert text("x").audience is None
    assert text("x", ["ann"]) == text("x", ("ann",))


def test_constructor_does_not_share_the_callers_list():
    """SPEC 3.1: the block's audience does not change when the caller's list does."""
    names = ["ann"]
    block = text("x", names)
    names.append("bob")
    assert block.audience == ("ann",)


@pytest.mark.parametrize("audience", ["ann", [1], [""], ["ann", None], 5, {"ann"}, [], (), ["ann\n"], ["a\x00"], ["\udc80"], ["x" * 257]])
@pytest.mark.parametrize(
    "make",
    [
        lambda a: text("x", a),
        lambda a: thinking("x", None, a),
        lambda a: redacted_thinking("x", a),
        lambda a: TextBlock("x", a),
    ],
    ids=["text", "thinking", "redacted_thinking", "TextBlock"],
)
def test_constructor_refuses_malformed_audience(make, audience):
    """SPEC 3.1, W1: an audience that is not a sequence of non-empty strings is refused."""
    with pytest.raises(MalformedContentError) as info:
        make(audience)
    assert isinstance(info.value, ValueError)
    assert "audience" in info.value.path


@pytest.mark.parametrize("make", [text, lambda s, a: thinking(s, None, a), redacted_thinking], ids=["text", "thinking", "redacted"])
@pytest.mark.parametrize("empty", [[], ()], ids=["list", "tuple"])
def test_constructor_refuses_an_empty_audience(make, empty):
    """An empty audience is refused with a message that says what to do instead; ``None`` is
    the audience of a block for everyone."""
    with pytest.raises(MalformedContentError) as info:
        make("x", empty)
    assert info.value.path == "audience"
    assert info.value.problem == "an audience names at least one reader; leave it out for everyone"
    assert make("x", None).audience is None


def test_stored_empty_audience_names_no_one():
    """An empty audience found in stored data (written before it was refused) is reported and
    names no one: the block is hidden from every reader and from no reader."""
    stored, problems = decode_stored_content([{"type": "text", "text": "x", "audience": []}])
    assert problems and "at least one reader" in problems[0]
    assert stored[0].audience == ()
    assert has_audience(stored)
    for reader in [None, *READERS]:
        assert content_for_reader(stored, reader) == ()


def test_constructor_refuses_malformed_fields():
    """SPEC 3.1, E: malformed block fields are refused with MalformedContentError."""
    bad = [
        lambda: text(3),
        lambda: tool_use("", "f"),
        lambda: tool_use("c", ""),
        lambda: tool_use("c", "f", ["not", "a", "dict"]),
        lambda: tool_use("c", "f", {"x": math.nan}),
        lambda: tool_result("", "x"),
        lambda: tool_result("c", 5),
        lambda: tool_result("c", [system_change("x")]),
        lambda: tool_result("c", [tool_use("a", "b")]),
        lambda: image("image/png"),
        lambda: image("image/png", data="d", url="u"),
        lambda: image("", data="d"),
    ]
    for make in bad:
        with pytest.raises(MalformedContentError):
            make()


def test_tool_use_input_is_copied():
    """SPEC 3.1, W1: the input is stored as given at construction; later caller edits don't reach it."""
    payload = {"a": [1, 2], "audience": ["ann"]}
    block = tool_use("c", "f", payload)
    payload["a"].append(3)
    payload["b"] = 1
    assert block.input == {"a": [1, 2], "audience": ["ann"]}


def test_tool_result_content_list_becomes_tuple():
    """SPEC 3.1: a tool result's content is a str or a tuple of blocks."""
    block = tool_result("c", [text("a"), image("image/png", url="u")])
    assert isinstance(block.content, tuple)
    assert block.content == (text("a"), image("image/png", url="u"))
    assert tool_result("c").content == ""
    assert tool_result("c", "s").is_error is False


# =============================================================================================
# 6. content_for_reader (SPEC A2)
# =============================================================================================


def test_reader_view_returns_same_tuple_when_nothing_has_audience():
    """SPEC A2 (and A6 fast path): with no audience anywhere, the very same tuple comes back."""
    content = (text("a"), tool_use("c", "f", {"audience": 1}), tool_result("c", [text("r")]), system_change("s"))
    for reader in (None, "ann"):
        assert content_for_reader(content, reader) is content
    assert content_for_reader((), "ann") == ()


def test_reader_view_of_a_list_holds_same_objects():
    """SPEC A2: a list with no audience comes back as a tuple of the very same objects."""
    content = [text("a"), image("image/png", url="u")]
    view = content_for_reader(content, "ann")
    assert isinstance(view, tuple)
    assert len(view) == 2 and all(v is b for v, b in zip(view, content, strict=True))


def test_reader_view_keeps_named_block_without_audience_and_drops_others():
    """SPEC A2: no-audience blocks are kept (same objects); a block naming the reader is kept
    without its audience; every other audience block is dropped."""
    plain1, plain2 = text("everyone"), tool_use("c", "f", {"q": 1})
    for_ann = text("for ann", ["ann", "bob"])
    for_bob = thinking("bob thinks", "sig", ["bob"])
    redacted_ann = redacted_thinking("zz", ["ann"])
    content = (plain1, for_ann, for_bob, plain2, redacted_ann)

    ann = content_for_reader(content, "ann")
    assert ann == (plain1, text("for ann"), plain2, redacted_thinking("zz"))
    assert ann[0] is plain1 and ann[2] is plain2
    assert all(b.audience is None for b in ann)
    assert "audience" not in block_to_json(ann[1])

    bob = content_for_reader(content, "bob")
    assert bob == (plain1, text("for ann"), thinking("bob thinks", "sig"), plain2)
    assert bob[0] is plain1 and bob[3] is plain2
    assert bob[2].signature == "sig"

    assert content_for_reader(content, "carol") == (plain1, plain2)
    # The input is not changed.
    assert for_ann.audience == ("ann", "bob")


def test_reader_none_drops_every_audience_block():
    """SPEC A2: with reader=None every block with an audience is dropped, even ()."""
    plain = text("p")
    content = (text("a", ["ann"]), plain, thinking("t", audience=["bob"]))
    view = content_for_reader(content, None)
    assert view == (plain,)
    assert view[0] is plain


@pytest.mark.parametrize(
    ("audience", "reader", "visible"),
    [
        (["ann"], "ann", True),
        (["ann"], "Ann", False),
        (["Ann"], "ann", False),
        (["ann"], "an", False),
        (["ann"], "anne", False),
        (["ann"], "ann ", False),
        (["an"], "ann", False),
        (["ann", "bob"], "bob", True),
    ],
)
def test_reader_names_match_exactly(audience, reader, visible):
    """SPEC A2: names match exactly: case-sensitive, no prefixes, no trimming."""
    view = content_for_reader((text("x", audience),), reader)
    assert view == ((text("x"),) if visible else ())


@pytest.mark.parametrize("audience", MALFORMED_AUDIENCES)
def test_malformed_stored_audience_names_no_one(audience):
    """SPEC A2, E: an audience that is not a list of non-empty strings (stored data) names no
    one: hidden from every reader and from None, even one it seems to name."""
    plain = text("plain")
    stored, problems = decode_stored_content([block_to_json(plain), {"type": "text", "text": "x", "audience": audience}])
    assert problems, "a malformed audience is reported"
    assert stored[0] == plain
    assert stored[1].audience is not None
    for reader in [None, *READERS, "1", "['ann']"]:
        view = content_for_reader(stored, reader)
        assert view == (plain,)
        assert view[0] is stored[0]


def test_nested_stored_audience_hides_whole_tool_result():
    """SPEC A2, D4: an audience nested in a tool result (stored data) hides the whole tool result
    from readers it does not name; the named reader gets it with no audience anywhere."""
    call = {"type": "tool_use", "id": "c1", "name": "f", "input": {}}
    result = {
        "type": "tool_result",
        "tool_use_id": "c1",
        "content": [
            {"type": "text", "text": "public part"},
            {"type": "text", "text": "secret", "audience": ["ann"]},
            {"type": "image", "media_type": "image/png", "url": "u"},
        ],
    }
    stored, problems = decode_stored_content([call, result])
    assert problems
    assert has_audience(stored)
    for reader in (None, "bob", "Ann", "an"):
        view = content_for_reader(stored, reader)
        assert view == (stored[0],)
        assert view[0] is stored[0]
    ann = content_for_reader(stored, "ann")
    assert ann[0] is stored[0]
    assert ann[1] == tool_result("c1", [text("public part"), text("secret"), image("image/png", url="u")])
    assert _no_audience_anywhere(ann)


def test_nested_stored_audiences_intersect():
    """SPEC A2, D4: several audiences on one tool result (own and nested) each restrict it."""
    result = {
        "type": "tool_result",
        "tool_use_id": "c1",
        "audience": ["ann", "bob"],
        "content": [
            {"type": "text", "text": "a", "audience": ["ann", "bob", "carol"]},
            {"type": "image", "media_type": "image/png", "data": "AA", "audience": ["bob"]},
        ],
    }
    stored = _stored(result)
    assert content_for_reader(stored, "ann") == ()
    assert content_for_reader(stored, "carol") == ()
    bob = content_for_reader(stored, "bob")
    assert bob == (tool_result("c1", [text("a"), image("image/png", data="AA")]),)
    assert _no_audience_anywhere(bob)


def test_nested_malformed_audience_hides_tool_result_from_everyone():
    """SPEC A2, E: a malformed nested audience names no one: the tool result is hidden from all."""
    result = {"type": "tool_result", "tool_use_id": "c1", "content": [{"type": "text", "text": "x", "audience": "ann"}]}
    stored = _stored(result)
    for reader in [None, *READERS]:
        assert content_for_reader(stored, reader) == ()


@pytest.mark.parametrize(
    "wire",
    [
        {"type": "tool_use", "id": "c1", "name": "f", "input": {"q": 1}},
        {"type": "tool_result", "tool_use_id": "c1", "content": "ok"},
        {"type": "system_change", "text": "s"},
        {"type": "image", "media_type": "image/png", "url": "u"},
    ],
    ids=["tool_use", "tool_result", "system_change", "image"],
)
def test_stored_audience_on_non_text_block_hides_it_from_others(wire):
    """SPEC A2, D4: an audience on a stored tool call (or other non-text block) hides it from
    readers it does not name; the named reader gets it without the audience."""
    plain = text("p")
    stored, problems = decode_stored_content([block_to_json(plain), _with(wire, audience=["ann"])])
    assert problems
    for reader in (None, "bob", "Ann"):
        view = content_for_reader(stored, reader)
        assert view == (stored[0],)
        assert view[0] is stored[0]
    ann = content_for_reader(stored, "ann")
    assert ann[0] is stored[0]
    assert ann[1] == block_from_json(wire)
    assert ann[1].audience is None
    assert block_to_json(ann[1]) == wire


def test_unreadable_block_is_hidden_from_every_reader():
    """SPEC A2, E: a stored block that cannot be decoded is hidden from every reader."""
    plain = text("p")
    stored, problems = decode_stored_content([{"type": "hologram", "x": 1}, block_to_json(plain)])
    assert isinstance(stored[0], UnreadableBlock)
    assert problems
    for reader in [None, *READERS]:
        view = content_for_reader(stored, reader)
        assert view == (plain,)
        assert view[0] is stored[1]


@FAST
@given(pool_contents, st.none() | pool_names)
def test_reader_view_model(content, reader):
    """SPEC A2: against a model: each block without an audience is kept as the same object; each
    block whose audience names the reader is kept as its wire form minus `audience`; nothing
    else is kept; order is preserved."""
    view = content_for_reader(content, reader)
    expected = []
    for block in content:
        if block.audience is None:
            expected.append(block)
        elif reader is not None and reader in block.audience:
            wire = block_to_json(block)
            del wire["audience"]
            expected.append(wire)
    assert len(view) == len(expected)
    for got, want in zip(view, expected, strict=True):
        if isinstance(want, dict):
            assert got.audience is None
            assert block_to_json(got) == want
        else:
            assert got is want
    assert _no_audience_anywhere(view)
    if not has_audience(content):
        assert view is content


# =============================================================================================
# 7. decode_stored_content: lenient reading of stored data
# =============================================================================================


@pytest.mark.parametrize(
    "item",
    [
        {"type": "hologram"},
        {"type": "text"},
        {"type": "text", "text": 5},
        {"type": "text", "text": "a", "extra": 1},
        "just a string",
        None,
        [1, 2],
        {"type": "tool_result", "tool_use_id": "c", "content": [{"type": "tool_use", "id": "a", "name": "b", "input": {}}]},
        {"type": "image", "media_type": "image/png"},
    ],
)
def test_decode_stored_content_turns_undecodable_blocks_into_unreadable(item):
    """SPEC E, A2: decode_stored_content never raises; an undecodable block becomes an
    UnreadableBlock (hidden from every reader) and a problem is reported."""
    plain = {"type": "text", "text": "ok"}
    stored, problems = decode_stored_content([plain, item, plain])
    assert len(stored) == 3
    assert stored[0] == text("ok") and stored[2] == text("ok")
    assert isinstance(stored[1], UnreadableBlock)
    assert isinstance(stored[1].problem, str) and stored[1].problem
    assert json.loads(stored[1].raw) == item
    assert len(problems) == 1 and isinstance(problems[0], str)
    assert has_audience(stored)
    for reader in [None, *READERS]:
        assert content_for_reader(stored, reader) == (text("ok"), text("ok"))


@pytest.mark.parametrize("items", [{"type": "text", "text": "x"}, "text", None, 5])
def test_decode_stored_content_of_non_list(items):
    """SPEC E: stored content that is not a list becomes one unreadable block, with a problem."""
    stored, problems = decode_stored_content(items)
    assert len(stored) == 1 and isinstance(stored[0], UnreadableBlock)
    assert problems
    for reader in (None, "ann"):
        assert content_for_reader(stored, reader) == ()


def test_decode_stored_content_keeps_misplaced_audience_and_reports_it():
    """SPEC E, D4: an audience where a write would refuse one is kept (read fail-closed) and
    reported, with the path in the problem."""
    stored, problems = decode_stored_content(
        [{"type": "text", "text": "a"}, {"type": "tool_use", "id": "c", "name": "f", "input": {}, "audience": ["ann"]}]
    )
    assert isinstance(stored[1], ToolUseBlock)
    assert stored[1].audience == ("ann",)
    assert len(problems) == 1
    assert "content[1].audience" in problems[0]


# =============================================================================================
# 8. has_audience
# =============================================================================================


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ((), False),
        ((text("a"), thinking("t"), redacted_thinking("d")), False),
        ((tool_use("c", "f", {"audience": ["ann"]}),), False),
        ((tool_result("c", [text("a"), image("image/png", url="u")]), system_change("s")), False),
        ((text("a"), text("b", ["ann"])), True),
        ((thinking("t", audience=["ann"]),), True),
        ((redacted_thinking("d", ["ann"]),), True),
        ((tool_result("c", [text("x", ["ann"])]),), True),
    ],
)
def test_has_audience_for_constructed_content(content, expected):
    """SPEC A2, W1: has_audience says whether any block, top-level or nested, has an audience."""
    assert has_audience(content) is expected


@pytest.mark.parametrize(
    "item",
    [
        {"type": "text", "text": "x", "audience": "ann"},
        {"type": "text", "text": "x", "audience": [1]},
        {"type": "tool_use", "id": "c", "name": "f", "input": {}, "audience": ["ann"]},
        {"type": "image", "media_type": "image/png", "url": "u", "audience": ["ann"]},
        {"type": "tool_result", "tool_use_id": "c", "content": [{"type": "text", "text": "x", "audience": ["ann"]}]},
        {"type": "hologram"},
    ],
    ids=["str-audience", "int-audience", "tool_use", "image", "nested", "unreadable"],
)
def test_has_audience_for_stored_content(item):
    """SPEC A2, E: stored audiences (malformed, misplaced, nested) and unreadable blocks count."""
    assert has_audience(_stored({"type": "text", "text": "plain"}, item))
    assert not has_audience(_stored({"type": "text", "text": "plain"}))


@FAST
@given(pool_contents)
def test_has_audience_matches_reader_none_view(content):
    """SPEC A2: has_audience is False exactly when every reader sees the content unchanged."""
    any_audience = any(b.audience is not None for b in content) or any(
        isinstance(b, ToolResultBlock) and isinstance(b.content, tuple) and any(i.audience is not None for i in b.content) for b in content
    )
    assert has_audience(content) is any_audience
    if not any_audience:
        assert content_for_reader(content, None) is content


# =============================================================================================
# 9. The placement table, nesting depth and text that cannot be stored
# =============================================================================================

MAX_DEPTH = 64  # documented in docs/input.md


def _nested_dicts(depth: int) -> dict:
    """An object ``depth`` levels deep: {"a": {"a": ... {} }}."""
    value: dict = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def test_placement_table_matches_the_constructors():
    """The one table of where a write may put an audience agrees with the block types: exactly
    the types whose constructor takes an audience may carry one, and only at the top level."""
    import inspect

    from asides.store._blocks import WRITE_AUDIENCE_PLACES
    from asides.store._blocks.placement import Depth

    assert set(WRITE_AUDIENCE_PLACES) == {cls.type for cls in BLOCK_CLASSES}
    for cls in BLOCK_CLASSES:
        takes_audience = "audience" in inspect.signature(cls).parameters
        assert (WRITE_AUDIENCE_PLACES[cls.type] == {Depth.TOP}) is takes_audience, cls
        assert Depth.NESTED not in WRITE_AUDIENCE_PLACES[cls.type]


def test_tool_input_at_the_depth_limit_is_accepted():
    """A tool call's input nesting exactly the documented depth is stored as given."""
    deep = _nested_dicts(MAX_DEPTH)
    block = tool_use("c", "f", deep)
    assert block.input == deep
    assert block_from_json(block_to_json(block)) == block


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1_000, 100_000])
def test_tool_input_nested_too_deep_is_refused_at_its_path(depth):
    """A tool call's input nested deeper than the limit is refused with MalformedContentError at
    the first level past it, by the constructor, block_from_json and content_from_json alike;
    never RecursionError."""
    deep = _nested_dicts(depth)
    expected = "input" + ".a" * MAX_DEPTH
    with pytest.raises(MalformedContentError) as info:
        tool_use("c", "f", deep)
    assert info.value.path == expected
    assert "64 levels" in info.value.problem
    with pytest.raises(MalformedContentError) as info:
        block_from_json({"type": "tool_use", "id": "c", "name": "f", "input": deep})
    assert info.value.path == "block." + expected
    with pytest.raises(MalformedContentError) as info:
        content_from_json([TEXT, {"type": "tool_use", "id": "c", "name": "f", "input": deep}])
    assert info.value.path == "content[1]." + expected


def test_deep_lists_in_tool_input_name_their_indexes():
    """The path names list indexes and escapes odd keys."""
    value: object = []
    for _ in range(MAX_DEPTH):
        value = [value]
    with pytest.raises(MalformedContentError) as info:
        tool_use("c", "f", {"odd key": value})
    assert info.value.path == "input['odd key']" + "[0]" * (MAX_DEPTH - 1)


def test_tool_results_nested_in_tool_results_are_refused_without_recursing():
    """A tool result inside a tool result, 1,000 deep, is refused at the first nested one (a tool
    result holds text and image blocks only), never RecursionError; stored, it is unreadable."""
    obj: dict = {"type": "text", "text": "bottom"}
    for _ in range(1_000):
        obj = {"type": "tool_result", "tool_use_id": "t", "content": [obj]}
    with pytest.raises(MalformedContentError) as info:
        block_from_json(obj)
    assert info.value.path == "block.content[0]"
    with pytest.raises(MalformedContentError) as info:
        content_from_json([obj])
    assert info.value.path == "content[0].content[0]"
    stored, problems = decode_stored_content([obj, TEXT])
    assert isinstance(stored[0], UnreadableBlock) and problems
    assert content_for_reader(stored, "ann") == (text("plain"),)


def test_deep_stored_tool_input_is_unreadable_not_an_error():
    """Stored (foreign) content with a tool input past the limit decodes to an unreadable block,
    hidden from every reader."""
    stored, problems = decode_stored_content([{"type": "tool_use", "id": "c", "name": "f", "input": _nested_dicts(500)}])
    assert isinstance(stored[0], UnreadableBlock)
    assert problems
    assert content_for_reader(stored, None) == ()


@pytest.mark.parametrize(
    ("make", "path"),
    [
        (lambda: text("bad \udc80"), "text"),
        (lambda: thinking("ok", "sig\ud800"), "signature"),
        (lambda: redacted_thinking("\udfff"), "data"),
        (lambda: tool_use("c\udc80", "f"), "id"),
        (lambda: tool_use("c", "f", {"k": ["ok", "\udc80"]}), "input.k[1]"),
        (lambda: tool_use("c", "f", {"\udc80": 1}), "input['\\udc80']"),
        (lambda: tool_result("c", "res \udc80"), "content"),
        (lambda: image("image/png", url="http://x/\udc80"), "url"),
        (lambda: system_change("\ud800"), "text"),
    ],
)
def test_text_with_a_lone_surrogate_is_refused_at_its_field(make, path):
    """A lone surrogate cannot be stored, so a block holding one is refused when it is made,
    naming the field; the message shows the surrogate escaped, so it always prints."""
    with pytest.raises(MalformedContentError) as info:
        make()
    assert info.value.path == path
    assert "valid Unicode" in info.value.problem
    str(info.value).encode("utf-8")  # printable


def test_wire_form_with_a_lone_surrogate_is_refused_at_its_path():
    """block_from_json names the place of a lone surrogate, nested blocks included."""
    obj = {"type": "tool_result", "tool_use_id": "t", "content": [TEXT, {"type": "text", "text": "\udc80"}]}
    with pytest.raises(MalformedContentError) as info:
        content_from_json([TEXT, obj])
    assert info.value.path == "content[1].content[1].text"


def test_block_from_json_custom_root_names_the_nested_place():
    """A concrete case of the custom-root property: the path continues below the root."""
    with pytest.raises(MalformedContentError) as info:
        block_from_json({"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text"}]}, path="messages[0].content[1]")
    assert info.value.path == "messages[0].content[1].content[0].text"
