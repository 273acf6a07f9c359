"""Content blocks, their JSON wire form, and where an audience may stand.

A content block may name the readers it is for (``audience``). Only a message's own top-level
text, thinking and redacted-thinking blocks may carry one on a write (SPEC W1); the constructors of
the other block types take no audience at all, and :func:`block_from_json` refuses one anywhere
else, naming the path.

Data read back from disk is decoded leniently by :func:`decode_stored_content`: an audience found
where a write would refuse one (old or foreign data) is kept, so that :func:`content_for_reader`
can hide the enclosing block from readers it does not name (fail-closed, SPEC D4), and a block
that cannot be decoded at all becomes an :class:`UnreadableBlock`, hidden from every reader.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Union

import attrs

from ._errors import MalformedContentError

__all__ = [
    "Audience",
    "ContentBlock",
    "TextBlock",
    "ThinkingBlock",
    "RedactedThinkingBlock",
    "ToolUseBlock",
    "ToolResultBlock",
    "ImageBlock",
    "SystemChangeBlock",
    "UnreadableBlock",
    "text",
    "thinking",
    "redacted_thinking",
    "tool_use",
    "tool_result",
    "image",
    "system_change",
    "block_from_json",
    "block_to_json",
    "content_from_json",
    "content_to_json",
    "coerce_content",
    "check_content",
    "content_for_reader",
    "has_audience",
    "effective_audience",
    "UNREADABLE_AUDIENCE",
    "decode_stored_content",
]

Audience = tuple[str, ...] | None


def _audience_problem(value: object) -> str | None:
    """Why ``value`` is not a well-formed audience, or ``None`` when it is one."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        return f"an audience must be a list of reader names, not {type(value).__name__}"
    for name in value:
        if not isinstance(name, str):
            return f"an audience must list reader names as strings, not {type(name).__name__}"
        if not name:
            return "an audience may not name the empty reader ''"
    return None


def _convert_audience(value: object) -> Audience:
    problem = _audience_problem(value)
    if problem is not None:
        raise MalformedContentError("audience", problem)
    return None if value is None else tuple(value)  # type: ignore[arg-type]


def _require_str(field: str, *, allow_empty: bool = True, optional: bool = False):
    def check(_instance: object, _attribute: object, value: object) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str):
            raise MalformedContentError(field, f"must be a string, not {type(value).__name__}")
        if not allow_empty and not value:
            raise MalformedContentError(field, "must not be empty")

    return check


def _copy_json_object(value: object) -> dict[str, Any]:
    """A private deep copy of a JSON object, so the caller's later mutation cannot reach us."""
    if not isinstance(value, Mapping):
        raise MalformedContentError("input", f"a tool call's input must be a JSON object, not {type(value).__name__}")
    try:
        copied = json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise MalformedContentError("input", f"a tool call's input must be JSON: {exc}") from None
    return copied


@attrs.frozen(slots=True)
class TextBlock:
    """Plain text, optionally for some readers only."""

    text: str = attrs.field(validator=_require_str("text"))
    audience: Audience = attrs.field(default=None, converter=_convert_audience, kw_only=False)
    type = "text"


@attrs.frozen(slots=True)
class ThinkingBlock:
    """A model's visible reasoning; ``signature`` vouches for the turn it belongs to."""

    thinking: str = attrs.field(validator=_require_str("thinking"))
    signature: str | None = attrs.field(default=None, validator=_require_str("signature", optional=True))
    audience: Audience = attrs.field(default=None, converter=_convert_audience)
    type = "thinking"


@attrs.frozen(slots=True)
class RedactedThinkingBlock:
    """Reasoning the provider returned encrypted."""

    data: str = attrs.field(validator=_require_str("data"))
    audience: Audience = attrs.field(default=None, converter=_convert_audience)
    type = "redacted_thinking"


@attrs.frozen(slots=True)
class ToolUseBlock:
    """A tool call. A key named ``audience`` inside ``input`` is data, stored as given."""

    id: str = attrs.field(validator=_require_str("id", allow_empty=False))
    name: str = attrs.field(validator=_require_str("name", allow_empty=False))
    input: dict[str, Any] = attrs.field(factory=dict, converter=_copy_json_object, hash=False)
    # Never set by the constructor: only stored (old or foreign) data carries one, read fail-closed.
    audience: Audience = attrs.field(default=None, init=False, repr=False)
    type = "tool_use"


def _convert_result_content(value: object) -> str | tuple[ContentBlock, ...]:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return tuple(value)
    raise MalformedContentError("content", f"a tool result's content must be a string or a list of blocks, not {type(value).__name__}")


def _check_result_content(_instance: object, _attribute: object, value: object) -> None:
    if isinstance(value, tuple):
        for index, block in enumerate(value):
            if not isinstance(block, _NESTABLE):
                raise MalformedContentError(
                    f"content[{index}]", f"a tool result may hold text and image blocks, not {type(block).__name__}"
                )


@attrs.frozen(slots=True)
class ToolResultBlock:
    """The result of the tool call whose id is ``tool_use_id``."""

    tool_use_id: str = attrs.field(validator=_require_str("tool_use_id", allow_empty=False))
    content: str | tuple[ContentBlock, ...] = attrs.field(
        default="", converter=_convert_result_content, validator=_check_result_content
    )
    is_error: bool = attrs.field(default=False, converter=bool)
    audience: Audience = attrs.field(default=None, init=False, repr=False)
    type = "tool_result"


def _check_image(instance: ImageBlock, _attribute: object, _value: object) -> None:
    if (instance.data is None) == (instance.url is None):
        raise MalformedContentError("data", "an image holds exactly one of inline data or a url")


@attrs.frozen(slots=True)
class ImageBlock:
    """Inline media: base64 ``data`` or a ``url``, exactly one of them."""

    media_type: str = attrs.field(validator=_require_str("media_type", allow_empty=False))
    data: str | None = attrs.field(default=None, validator=_require_str("data", optional=True))
    url: str | None = attrs.field(default=None, validator=[_require_str("url", optional=True), _check_image])
    audience: Audience = attrs.field(default=None, init=False, repr=False)
    type = "image"


@attrs.frozen(slots=True)
class SystemChangeBlock:
    """A host's record of a change to its system prompt or tools."""

    text: str = attrs.field(validator=_require_str("text"))
    audience: Audience = attrs.field(default=None, init=False, repr=False)
    type = "system_change"


@attrs.frozen(slots=True)
class UnreadableBlock:
    """A stored block that could not be decoded (corrupt or foreign data).

    It is kept so that reads of the stored form report it, and it is hidden from every reader.
    ``raw`` is its JSON text as found; ``problem`` says what is wrong with it.
    """

    raw: str
    problem: str
    type = "unreadable"

    @property
    def audience(self) -> object:
        return _UNREADABLE


ContentBlock = Union[
    TextBlock, ThinkingBlock, RedactedThinkingBlock, ToolUseBlock, ToolResultBlock, ImageBlock, SystemChangeBlock
]

_ALL_BLOCKS = (
    TextBlock,
    ThinkingBlock,
    RedactedThinkingBlock,
    ToolUseBlock,
    ToolResultBlock,
    ImageBlock,
    SystemChangeBlock,
)
_AUDIENCE_ALLOWED = (TextBlock, ThinkingBlock, RedactedThinkingBlock)
_NESTABLE = (TextBlock, ImageBlock)
_THINKING = (ThinkingBlock, RedactedThinkingBlock)


class _Unreadable:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<unreadable audience>"


_UNREADABLE = _Unreadable()
#: What :func:`effective_audience` answers for an audience that names no one readable.
UNREADABLE_AUDIENCE = _UNREADABLE


# -- constructors -----------------------------------------------------------------------------


def text(s: str, audience: Sequence[str] | None = None) -> TextBlock:
    """A text block, for everyone or for the readers ``audience`` names."""
    return TextBlock(s, audience)  # type: ignore[arg-type]


def thinking(thinking: str, signature: str | None = None, audience: Sequence[str] | None = None) -> ThinkingBlock:
    """A thinking block."""
    return ThinkingBlock(thinking, signature, audience)  # type: ignore[arg-type]


def redacted_thinking(data: str, audience: Sequence[str] | None = None) -> RedactedThinkingBlock:
    """A redacted thinking block."""
    return RedactedThinkingBlock(data, audience)  # type: ignore[arg-type]


def tool_use(id: str, name: str, input: Mapping[str, Any] | None = None) -> ToolUseBlock:  # noqa: A002
    """A tool call."""
    return ToolUseBlock(id, name, {} if input is None else input)  # type: ignore[arg-type]


def tool_result(
    tool_use_id: str, content: str | Sequence[ContentBlock] = "", is_error: bool = False
) -> ToolResultBlock:
    """A tool result answering the call ``tool_use_id``."""
    return ToolResultBlock(tool_use_id, content, is_error)  # type: ignore[arg-type]


def image(media_type: str, data: str | None = None, url: str | None = None) -> ImageBlock:
    """An inline image (base64 ``data``) or one by ``url``."""
    return ImageBlock(media_type, data, url)


def system_change(s: str) -> SystemChangeBlock:
    """A record of a change to the host's system prompt or tools."""
    return SystemChangeBlock(s)


# -- JSON wire form ---------------------------------------------------------------------------

_FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # type: (required keys, optional keys), "type" and "audience" aside
    "text": (frozenset({"text"}), frozenset()),
    "thinking": (frozenset({"thinking"}), frozenset({"signature"})),
    "redacted_thinking": (frozenset({"data"}), frozenset()),
    "tool_use": (frozenset({"id", "name", "input"}), frozenset()),
    "tool_result": (frozenset({"tool_use_id"}), frozenset({"content", "is_error"})),
    "image": (frozenset({"media_type"}), frozenset({"data", "url"})),
    "system_change": (frozenset({"text"}), frozenset()),
}
_MAY_HOLD_AUDIENCE = frozenset({"text", "thinking", "redacted_thinking"})


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _expect_str(obj: Mapping[str, Any], key: str, path: str, *, allow_empty: bool = True, optional: bool = False):
    if key not in obj and optional:
        return None
    value = obj.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise MalformedContentError(_join(path, key), f"must be a string, not {type(value).__name__}")
    if not allow_empty and not value:
        raise MalformedContentError(_join(path, key), "must not be empty")
    return value


def _decode(obj: object, path: str, *, nested: bool, lenient: bool, problems: list[str] | None) -> ContentBlock:
    """Decode one block. Strict mode raises ``MalformedContentError``; lenient mode keeps
    misplaced or malformed audiences (recording them in ``problems``) and still raises on
    anything else, which the caller turns into an :class:`UnreadableBlock`."""
    if not isinstance(obj, Mapping):
        raise MalformedContentError(path, f"a content block must be a JSON object, not {type(obj).__name__}")
    kind = obj.get("type")
    if not isinstance(kind, str) or kind not in _FIELDS:
        raise MalformedContentError(_join(path, "type"), f"unknown block type {kind!r}")
    required, optional = _FIELDS[kind]
    for key in obj:
        if key not in required and key not in optional and key not in ("type", "audience"):
            raise MalformedContentError(_join(path, key), f"a {kind} block has no field {key!r}")
    for key in required:
        if key not in obj:
            raise MalformedContentError(_join(path, key), f"a {kind} block needs {key!r}")

    audience: object = obj.get("audience")
    if audience is not None:
        apath = _join(path, "audience")
        problem = _audience_problem(audience)
        if not lenient:
            if nested:
                raise MalformedContentError(apath, "an audience may only stand on a message's own top-level blocks")
            if kind not in _MAY_HOLD_AUDIENCE:
                raise MalformedContentError(apath, f"a {kind} block may not carry an audience")
            if problem is not None:
                raise MalformedContentError(apath, problem)
        else:
            if problem is not None:
                problems.append(f"{apath}: {problem}")  # type: ignore[union-attr]
            elif nested or kind not in _MAY_HOLD_AUDIENCE:
                problems.append(f"{apath}: an audience where a write may not put one")  # type: ignore[union-attr]
            if isinstance(audience, list):
                audience = tuple(audience)

    try:
        block = _construct(kind, obj, path, nested=nested, lenient=lenient, problems=problems)
    except MalformedContentError as exc:
        if exc.path == path or exc.path.startswith((path + ".", path + "[")):
            raise
        raise MalformedContentError(_join(path, exc.path), exc.problem) from None

    if audience is not None:
        if lenient and (isinstance(block, _AUDIENCE_ALLOWED) is False or _audience_problem(audience) is not None):
            object.__setattr__(block, "audience", audience)
        else:
            block = attrs.evolve(block, audience=audience)  # type: ignore[misc]
    return block


def _construct(
    kind: str, obj: Mapping[str, Any], path: str, *, nested: bool, lenient: bool, problems: list[str] | None
) -> ContentBlock:
    block: ContentBlock
    if kind == "text":
        block = TextBlock(_expect_str(obj, "text", path))
    elif kind == "thinking":
        block = ThinkingBlock(_expect_str(obj, "thinking", path), _expect_str(obj, "signature", path, optional=True))
    elif kind == "redacted_thinking":
        block = RedactedThinkingBlock(_expect_str(obj, "data", path))
    elif kind == "tool_use":
        tool_input = obj["input"]
        if not isinstance(tool_input, Mapping):
            raise MalformedContentError(_join(path, "input"), "a tool call's input must be a JSON object")
        block = ToolUseBlock(
            _expect_str(obj, "id", path, allow_empty=False), _expect_str(obj, "name", path, allow_empty=False), tool_input
        )
    elif kind == "tool_result":
        raw = obj.get("content", "")
        content: str | tuple[ContentBlock, ...]
        if isinstance(raw, str):
            content = raw
        elif isinstance(raw, list):
            inner = []
            for index, item in enumerate(raw):
                ipath = f"{_join(path, 'content')}[{index}]"
                nested_block = _decode(item, ipath, nested=True, lenient=lenient, problems=problems)
                if not isinstance(nested_block, _NESTABLE):
                    raise MalformedContentError(ipath, f"a tool result may hold text and image blocks, not {nested_block.type}")
                inner.append(nested_block)
            content = tuple(inner)
        else:
            raise MalformedContentError(_join(path, "content"), "a tool result's content must be a string or a list of blocks")
        is_error = obj.get("is_error", False)
        if not isinstance(is_error, bool):
            raise MalformedContentError(_join(path, "is_error"), "must be true or false")
        block = ToolResultBlock(_expect_str(obj, "tool_use_id", path, allow_empty=False), content, is_error)
    elif kind == "image":
        data = _expect_str(obj, "data", path, optional=True)
        url = _expect_str(obj, "url", path, optional=True)
        if (data is None) == (url is None):
            raise MalformedContentError(path, "an image holds exactly one of inline data or a url")
        block = ImageBlock(_expect_str(obj, "media_type", path, allow_empty=False), data, url)
    else:
        block = SystemChangeBlock(_expect_str(obj, "text", path))
    return block


def block_from_json(obj: object, *, path: str = "block") -> ContentBlock:
    """Decode one block from its wire form.

    Refuses anything malformed, and an audience anywhere but on a top-level text, thinking or
    redacted-thinking block, with :class:`MalformedContentError` whose ``path`` names the place.
    An explicit ``"audience": null`` means no audience.
    """
    return _decode(obj, path, nested=False, lenient=False, problems=None)


def content_from_json(items: object, *, path: str = "content") -> tuple[ContentBlock, ...]:
    """Decode a message's content (a JSON list of blocks); refuses as :func:`block_from_json`."""
    if not isinstance(items, (list, tuple)):
        raise MalformedContentError(path, f"content must be a list of blocks, not {type(items).__name__}")
    return tuple(block_from_json(item, path=f"{path}[{index}]") for index, item in enumerate(items))


def block_to_json(block: ContentBlock) -> dict[str, Any]:
    """The wire form of a block. ``audience`` is omitted when it is ``None``."""
    if isinstance(block, UnreadableBlock):
        try:
            return json.loads(block.raw)
        except ValueError:
            return {"type": "unreadable", "raw": block.raw}
    out: dict[str, Any] = {"type": block.type}
    if isinstance(block, TextBlock):
        out["text"] = block.text
    elif isinstance(block, ThinkingBlock):
        out["thinking"] = block.thinking
        if block.signature is not None:
            out["signature"] = block.signature
    elif isinstance(block, RedactedThinkingBlock):
        out["data"] = block.data
    elif isinstance(block, ToolUseBlock):
        out["id"] = block.id
        out["name"] = block.name
        out["input"] = json.loads(json.dumps(block.input, ensure_ascii=False))
    elif isinstance(block, ToolResultBlock):
        out["tool_use_id"] = block.tool_use_id
        out["content"] = (
            block.content if isinstance(block.content, str) else [block_to_json(b) for b in block.content]
        )
        if block.is_error:
            out["is_error"] = True
    elif isinstance(block, ImageBlock):
        out["media_type"] = block.media_type
        if block.data is not None:
            out["data"] = block.data
        else:
            out["url"] = block.url
    elif isinstance(block, SystemChangeBlock):
        out["text"] = block.text
    else:  # pragma: no cover - the union is closed
        raise TypeError(f"not a content block: {block!r}")
    if block.audience is not None:
        out["audience"] = list(block.audience) if isinstance(block.audience, tuple) else block.audience
    return out


def content_to_json(blocks: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    """The wire form of a message's content."""
    return [block_to_json(b) for b in blocks]


# -- validation shared by writes, context entries and compile injections ----------------------


def coerce_content(content: object, *, path: str = "content") -> tuple[ContentBlock, ...]:
    """Accept a sequence of blocks (objects, or wire-form dicts) and return a tuple of blocks.

    Refuses a bare string, a non-sequence or an item that is neither a block nor its wire form.
    Audience placement is *not* judged here; see :func:`check_content`.
    """
    if isinstance(content, (str, bytes)) or not isinstance(content, Sequence):
        raise MalformedContentError(path, f"content must be a list of blocks, not {type(content).__name__}")
    out: list[ContentBlock] = []
    for index, item in enumerate(content):
        ipath = f"{path}[{index}]"
        if isinstance(item, _ALL_BLOCKS):
            out.append(item)
        elif isinstance(item, Mapping):
            out.append(_decode_for_check(item, ipath))
        else:
            raise MalformedContentError(ipath, f"not a content block: {type(item).__name__}")
    return tuple(out)


def _decode_for_check(item: Mapping[str, Any], path: str) -> ContentBlock:
    # Decode leniently about audiences so that check_content names the place exactly as it
    # would for block objects; everything else is strict.
    problems: list[str] = []
    return _decode(item, path, nested=False, lenient=True, problems=problems)


def check_content(blocks: Sequence[ContentBlock], *, path: str, allow_audience: bool) -> None:
    """Refuse an audience where it may not stand (SPEC W1, W2), naming the path.

    With ``allow_audience`` (a message write), a message's own top-level text, thinking and
    redacted-thinking blocks may carry a well-formed audience; nothing else may. Without it (a
    context entry, a compile injection), no block may carry one anywhere. Returns ``None`` or
    raises :class:`MalformedContentError`; it never changes anything.
    """
    for index, block in enumerate(blocks):
        bpath = f"{path}[{index}]"
        if not isinstance(block, _ALL_BLOCKS):
            raise MalformedContentError(bpath, f"not a content block: {type(block).__name__}")
        own = block.audience
        if own is not None:
            apath = f"{bpath}.audience"
            if not allow_audience:
                raise MalformedContentError(apath, "no audience may stand here: nothing reads one in this place")
            if not isinstance(block, _AUDIENCE_ALLOWED):
                raise MalformedContentError(apath, f"a {block.type} block may not carry an audience")
            problem = _audience_problem(own)
            if problem is not None:
                raise MalformedContentError(apath, problem)
        if isinstance(block, ToolResultBlock) and isinstance(block.content, tuple):
            for inner_index, inner in enumerate(block.content):
                if inner.audience is not None:
                    raise MalformedContentError(
                        f"{bpath}.content[{inner_index}].audience",
                        "an audience may only stand on a message's own top-level blocks",
                    )


# -- the reader's view of content (SPEC A2) ---------------------------------------------------


def effective_audience(block: object) -> object:
    """Who may see ``block``: ``None`` (everyone), a frozenset of reader names, or
    :data:`UNREADABLE_AUDIENCE` (no one).

    A block's own audience and every audience nested in a tool result all restrict who may see
    the top-level block (fail-closed reading of old or foreign data, SPEC D4).
    """
    if isinstance(block, UnreadableBlock):
        return _UNREADABLE
    names: frozenset[str] | None = None
    own = getattr(block, "audience", None)
    candidates = [own] if own is not None else []
    if isinstance(block, ToolResultBlock) and isinstance(block.content, tuple):
        candidates.extend(inner.audience for inner in block.content if getattr(inner, "audience", None) is not None)
    for audience in candidates:
        if not isinstance(audience, (tuple, list)) or not all(isinstance(n, str) and n for n in audience):
            return _UNREADABLE
        names = frozenset(audience) if names is None else names & frozenset(audience)
    return names


def _without_audiences(block: ContentBlock) -> ContentBlock:
    if isinstance(block, _AUDIENCE_ALLOWED):
        return attrs.evolve(block, audience=None)  # type: ignore[misc]
    if isinstance(block, ToolUseBlock):
        return ToolUseBlock(block.id, block.name, block.input)
    if isinstance(block, ToolResultBlock):
        content = block.content
        if isinstance(content, tuple):
            content = tuple(_without_audiences(inner) for inner in content)
        return ToolResultBlock(block.tool_use_id, content, block.is_error)
    if isinstance(block, ImageBlock):
        return ImageBlock(block.media_type, block.data, block.url)
    if isinstance(block, SystemChangeBlock):
        return SystemChangeBlock(block.text)
    return block


def content_for_reader(blocks: Sequence[ContentBlock], reader: str | None) -> tuple[ContentBlock, ...]:
    """What ``reader`` may see of ``blocks`` (SPEC A2).

    Keeps a block with no audience (the same object); keeps a block whose audience names
    ``reader``, returned without any audience field; drops every other block that has one. With
    ``reader=None`` every block with an audience is dropped. An audience that is not a list of
    non-empty strings names no one. Names match exactly. An audience nested in a tool result, or
    on a block type that may not carry one, hides the whole top-level block from readers it does
    not name. When nothing is dropped or stripped, the result holds the very same objects.
    """
    kept: list[ContentBlock] | None = None
    for index, block in enumerate(blocks):
        names = effective_audience(block)
        if names is None:
            if kept is not None:
                kept.append(block)
            continue
        if kept is None:
            kept = list(blocks[:index])
        if reader is not None and names is not _UNREADABLE and reader in names:  # type: ignore[operator]
            kept.append(_without_audiences(block))
    if kept is None:
        return blocks if isinstance(blocks, tuple) else tuple(blocks)
    return tuple(kept)


def has_audience(blocks: Sequence[ContentBlock]) -> bool:
    """Whether any block (or a block nested in a tool result) carries an audience, or is unreadable."""
    return any(effective_audience(block) is not None for block in blocks)


def is_thinking(block: object) -> bool:
    """Whether ``block`` is a thinking or redacted-thinking block."""
    return isinstance(block, _THINKING)


# -- lenient decoding of stored data ----------------------------------------------------------


def decode_stored_content(items: object) -> tuple[tuple[ContentBlock, ...], list[str]]:
    """Decode content read back from disk, never refusing it.

    Returns the blocks and a list of problems found (for the caller to report once). A
    misplaced or malformed audience is kept on its block (read fail-closed by
    :func:`content_for_reader`); a block that cannot be decoded becomes an
    :class:`UnreadableBlock`; content that is not a list becomes one unreadable block.
    """
    problems: list[str] = []
    if not isinstance(items, list):
        raw = json.dumps(items, ensure_ascii=False)
        problems.append(f"content: not a list of blocks: {raw[:80]}")
        return (UnreadableBlock(raw, "content is not a list of blocks"),), problems
    out: list[ContentBlock] = []
    for index, item in enumerate(items):
        path = f"content[{index}]"
        try:
            out.append(_decode(item, path, nested=False, lenient=True, problems=problems))
        except MalformedContentError as exc:
            problems.append(str(exc))
            out.append(UnreadableBlock(json.dumps(item, ensure_ascii=False), str(exc)))  # type: ignore[arg-type]
    return tuple(out), problems
