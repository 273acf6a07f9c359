"""The content block types and their constructors.

Each block is a frozen ``attrs`` class that checks its fields when it is made: strings are
strings and valid Unicode (a lone surrogate cannot be stored), ids and names are not empty, a
tool call's input is a JSON object nesting at most the documented depth (copied, so the caller's
later edits cannot reach it), and a tool result holds a string or text and image blocks.

Only text, thinking and redacted-thinking blocks take an ``audience`` (see ``placement`` for
where a write may put one); the others have an ``audience`` field only so that stored data that
carries one anyway can be read fail-closed. An audience names at least one reader, each a
well-formed reader's name; leave it out (``None``) for everyone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

import attrs

from .._errors import InvalidNameError, MalformedContentError
from .._json_checks import check_json_tree, lone_surrogate_problem
from .._names import name_problem

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
    "UNREADABLE_AUDIENCE",
    "ALL_BLOCK_TYPES",
    "AUDIENCE_FIELD_TYPES",
    "NESTABLE_TYPES",
    "THINKING_TYPES",
    "audience_error",
    "audience_problem",
    "text",
    "thinking",
    "redacted_thinking",
    "tool_use",
    "tool_result",
    "image",
    "system_change",
]

Audience = tuple[str, ...] | None

EMPTY_AUDIENCE = "an audience names at least one reader; leave it out for everyone"


def _audience_check(value: object) -> tuple[str, bool] | None:
    """Why ``value`` is not a well-formed audience, and whether the fault is a name in it."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        return f"an audience must be a list of reader names, not {type(value).__name__}", False
    if not value:
        return EMPTY_AUDIENCE, False
    for name in value:
        if not isinstance(name, str):
            return f"an audience must list reader names as strings, not {type(name).__name__}", True
        if not name:
            return "an audience may not name the empty reader ''", True
        problem = name_problem(name, what="a reader's name")
        if problem is not None:
            return f"{name!a}: {problem}", True
    return None


def audience_problem(value: object) -> str | None:
    """Why ``value`` is not a well-formed audience, or ``None`` when it is one (``None``, or a
    non-empty list or tuple of reader names)."""
    found = _audience_check(value)
    return None if found is None else found[0]


def audience_error(value: object, path: str) -> MalformedContentError | None:
    """The error that refuses ``value`` as an audience at ``path``, or ``None`` when it is well
    formed: :class:`InvalidNameError` (documented for every bad name, docs/input.md) when a name
    it lists is not a reader's name, :class:`MalformedContentError` when it is not a non-empty
    list of names at all."""
    found = _audience_check(value)
    if found is None:
        return None
    problem, is_name = found
    return (InvalidNameError if is_name else MalformedContentError)(path, problem)


def _convert_audience(value: object) -> Audience:
    error = audience_error(value, "audience")
    if error is not None:
        raise error
    return None if value is None else tuple(value)  # type: ignore[arg-type]


def _require_str(field: str, *, allow_empty: bool = True, optional: bool = False) -> Callable[[Any, Any, Any], None]:
    def check(_instance: object, _attribute: object, value: object) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str):
            raise MalformedContentError(field, f"must be a string, not {type(value).__name__}")
        if not allow_empty and not value:
            raise MalformedContentError(field, "must not be empty")
        problem = lone_surrogate_problem(value)
        if problem is not None:
            raise MalformedContentError(field, problem)

    return check


def _require_bool(field: str) -> Callable[[Any, Any, Any], None]:
    def check(_instance: object, _attribute: object, value: object) -> None:
        if not isinstance(value, bool):
            raise MalformedContentError(field, f"must be true or false, not {type(value).__name__}")

    return check


def _copy_json_object(value: object) -> dict[str, Any]:
    """A private deep copy of a JSON object, so the caller's later mutation cannot reach us."""
    if not isinstance(value, Mapping):
        raise MalformedContentError("input", f"a tool call's input must be a JSON object, not {type(value).__name__}")
    check_json_tree(value, "input")
    try:
        copied: dict[str, Any] = json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
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
    if isinstance(value, str):
        problem = lone_surrogate_problem(value)
        if problem is not None:
            raise MalformedContentError("content", problem)
        return
    if isinstance(value, tuple):
        for index, block in enumerate(value):
            if not isinstance(block, NESTABLE_TYPES):
                raise MalformedContentError(
                    f"content[{index}]", f"a tool result may hold text and image blocks, not {type(block).__name__}"
                )


@attrs.frozen(slots=True)
class ToolResultBlock:
    """The result of the tool call whose id is ``tool_use_id``."""

    tool_use_id: str = attrs.field(validator=_require_str("tool_use_id", allow_empty=False))
    content: str | tuple[ContentBlock, ...] = attrs.field(default="", converter=_convert_result_content, validator=_check_result_content)
    is_error: bool = attrs.field(default=False, validator=_require_bool("is_error"))
    audience: Audience = attrs.field(default=None, init=False, repr=False)
    type = "tool_result"


def _check_image(instance: Any, _attribute: Any, _value: Any) -> None:
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


class _Unreadable:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<unreadable audience>"


#: The audience of a block no one may read (an unreadable block, a malformed stored audience).
UNREADABLE_AUDIENCE = _Unreadable()


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
        return UNREADABLE_AUDIENCE


ContentBlock: TypeAlias = (
    TextBlock | ThinkingBlock | RedactedThinkingBlock | ToolUseBlock | ToolResultBlock | ImageBlock | SystemChangeBlock
)

#: Every block type a message may hold.
ALL_BLOCK_TYPES = (
    TextBlock,
    ThinkingBlock,
    RedactedThinkingBlock,
    ToolUseBlock,
    ToolResultBlock,
    ImageBlock,
    SystemChangeBlock,
)
#: The block types whose constructor takes an audience (where a write may put one: ``placement``).
AUDIENCE_FIELD_TYPES = (TextBlock, ThinkingBlock, RedactedThinkingBlock)
#: What a tool result may hold.
NESTABLE_TYPES = (TextBlock, ImageBlock)
THINKING_TYPES = (ThinkingBlock, RedactedThinkingBlock)


# -- constructors -----------------------------------------------------------------------------


def text(s: str, audience: Sequence[str] | None = None) -> TextBlock:
    """A text block, for everyone or for the readers ``audience`` names."""
    return TextBlock(s, audience)


def thinking(thinking: str, signature: str | None = None, audience: Sequence[str] | None = None) -> ThinkingBlock:
    """A thinking block."""
    return ThinkingBlock(thinking, signature, audience)


def redacted_thinking(data: str, audience: Sequence[str] | None = None) -> RedactedThinkingBlock:
    """A redacted thinking block."""
    return RedactedThinkingBlock(data, audience)


def tool_use(id: str, name: str, input: Mapping[str, Any] | None = None) -> ToolUseBlock:  # noqa: A002
    """A tool call."""
    return ToolUseBlock(id, name, {} if input is None else input)


def tool_result(tool_use_id: str, content: str | Sequence[ContentBlock] = "", is_error: bool = False) -> ToolResultBlock:
    """A tool result answering the call ``tool_use_id``."""
    return ToolResultBlock(tool_use_id, content, is_error)


def image(media_type: str, data: str | None = None, url: str | None = None) -> ImageBlock:
    """An inline image (base64 ``data``) or one by ``url``."""
    return ImageBlock(media_type, data, url)


def system_change(s: str) -> SystemChangeBlock:
    """A record of a change to the host's system prompt or tools."""
    return SystemChangeBlock(s)
