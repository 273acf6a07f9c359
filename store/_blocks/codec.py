"""The JSON wire form of content blocks.

``{"type": "text", "text": "...", "audience": ["ann"]}``: one JSON object per block, ``audience``
left out when it is ``None``. :func:`block_from_json` and :func:`content_from_json` refuse
anything malformed (an unknown type or field, a missing or mistyped field, an audience where a
write may not put one, data nested too deep) with :class:`MalformedContentError` whose ``path``
names the place. :func:`decode_block` with ``lenient=True`` is the same decoding for stored data,
keeping a misplaced or malformed audience so the reader view can read it fail-closed.

Decoding never recurses more than two blocks deep: a tool result may hold only text and image
blocks, and a nested block of any other known type is refused before it is decoded.
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from .._arguments import check_sequence
from .._errors import ArgumentTypeError, MalformedContentError
from .block_types import (
    ALL_BLOCK_TYPES,
    AUDIENCE_FIELD_TYPES,
    NESTABLE_TYPES,
    ContentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    SystemChangeBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnreadableBlock,
    audience_error,
    audience_problem,
)
from .placement import audience_refusal

__all__ = [
    "block_from_json",
    "block_to_json",
    "content_from_json",
    "content_to_json",
    "coerce_content",
    "decode_block",
    "anthropic_image_fields",
    "image_from_url",
]

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
_NESTABLE_KINDS = frozenset(cls.type for cls in NESTABLE_TYPES)
_ENCODABLE = (*ALL_BLOCK_TYPES, UnreadableBlock)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _expect_str(obj: Mapping[str, Any], key: str, path: str, *, allow_empty: bool = True, optional: bool = False) -> Any:
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


def decode_block(obj: object, path: str, *, nested: bool, lenient: bool, problems: list[str] | None) -> ContentBlock:
    """Decode one block from its wire form.

    Strict (``lenient=False``) refuses anything malformed with :class:`MalformedContentError`
    at its path. Lenient keeps a misplaced or malformed audience on its block (recording it in
    ``problems``) and still raises on anything else, which the caller of stored data turns into
    an :class:`UnreadableBlock`.
    """
    if not isinstance(obj, Mapping):
        raise MalformedContentError(path, f"a content block must be a JSON object, not {type(obj).__name__}")
    kind = obj.get("type")
    if not isinstance(kind, str) or kind not in _FIELDS:
        raise MalformedContentError(_join(path, "type"), f"unknown block type {kind!r}")
    if kind == "image" and "source" in obj:
        obj = anthropic_image_fields(obj, path)  # the Anthropic form, as the stored form
    required, optional = _FIELDS[kind]
    for key in obj:
        if key not in required and key not in optional and key not in ("type", "audience"):
            raise MalformedContentError(_join(path, key), f"a {kind} block has no field {key!r}")
    for key in required:
        if key not in obj:
            raise MalformedContentError(_join(path, key), f"a {kind} block needs {key!r}")

    audience: object = obj.get("audience")
    misplaced = False
    if audience is not None:
        apath = _join(path, "audience")
        refusal = audience_refusal(kind, nested=nested, allow_audience=True)
        problem = audience_problem(audience)
        if not lenient:
            if refusal is not None:
                raise MalformedContentError(apath, refusal)
            error = audience_error(audience, apath)
            if error is not None:
                raise error
        else:
            if problem is not None:
                problems.append(f"{apath}: {problem}")  # type: ignore[union-attr]
            elif refusal is not None:
                problems.append(f"{apath}: an audience where a write may not put one")  # type: ignore[union-attr]
            misplaced = problem is not None or refusal is not None
            if isinstance(audience, list):
                audience = tuple(audience)

    try:
        block = _construct(kind, obj, path, lenient=lenient, problems=problems)
    except MalformedContentError as exc:
        if exc.path == path or exc.path.startswith((path + ".", path + "[")):
            raise
        raise MalformedContentError(_join(path, exc.path), exc.problem) from None

    if audience is not None:
        if misplaced or not isinstance(block, AUDIENCE_FIELD_TYPES):
            object.__setattr__(block, "audience", audience)  # stored data: kept, read fail-closed
        else:
            block = attrs.evolve(block, audience=audience)
    return block


def image_from_url(url: str) -> ImageBlock:
    """An image by URL; a ``data:<media type>;base64,`` URL holds the image itself. A plain URL
    carries no media type: it is guessed from the URL's ending, ``image/*`` when nothing can be told."""
    if url.startswith("data:"):
        head, sep, data = url[len("data:") :].partition(",")
        media_type, _, encoding = head.partition(";")
        if sep and encoding == "base64" and media_type:
            return ImageBlock(media_type, data=data)
    guessed, _ = mimetypes.guess_type(url.split("?", 1)[0].split("#", 1)[0])
    return ImageBlock(guessed if guessed and guessed.startswith("image/") else "image/*", url=url)


def anthropic_image_fields(obj: Mapping[str, Any], path: str) -> dict[str, Any]:
    """An Anthropic image block (``{"type": "image", "source": {...}}``, the source ``base64``
    with its media type, or ``url``) in the stored form; its audience, if any, kept."""
    for key in obj:
        if key not in ("type", "source", "audience"):
            raise MalformedContentError(_join(path, key), f"an image block with a source has no field {key!r}")
    source = obj["source"]
    spath = _join(path, "source")
    if not isinstance(source, Mapping):
        raise MalformedContentError(spath, f"an image's source must be a JSON object, not {type(source).__name__}")
    kind = source.get("type")
    if kind == "base64":
        out = {"type": "image", "media_type": _expect_str(source, "media_type", spath, allow_empty=False)}
        out["data"] = _expect_str(source, "data", spath)
    elif kind == "url":
        image = image_from_url(_expect_str(source, "url", spath, allow_empty=False))
        out = {"type": "image", "media_type": image.media_type, "url": image.url}
    else:
        raise MalformedContentError(_join(spath, "type"), f"an image source of type {kind!r} has no asides form; base64 and url do")
    if "audience" in obj:
        out["audience"] = obj["audience"]
    return out


def _construct(kind: str, obj: Mapping[str, Any], path: str, *, lenient: bool, problems: list[str] | None) -> ContentBlock:
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
        block = ToolUseBlock(_expect_str(obj, "id", path, allow_empty=False), _expect_str(obj, "name", path, allow_empty=False), tool_input)
    elif kind == "tool_result":
        block = ToolResultBlock(
            _expect_str(obj, "tool_use_id", path, allow_empty=False),
            _result_content(obj.get("content", ""), _join(path, "content"), lenient=lenient, problems=problems),
            _expect_bool(obj, "is_error", path),
        )
    elif kind == "image":
        data = _expect_str(obj, "data", path, optional=True)
        url = _expect_str(obj, "url", path, optional=True)
        if (data is None) == (url is None):
            raise MalformedContentError(path, "an image holds exactly one of inline data or a url")
        block = ImageBlock(_expect_str(obj, "media_type", path, allow_empty=False), data, url)
    else:
        block = SystemChangeBlock(_expect_str(obj, "text", path))
    return block


def _expect_bool(obj: Mapping[str, Any], key: str, path: str) -> bool:
    value = obj.get(key, False)
    if not isinstance(value, bool):
        raise MalformedContentError(_join(path, key), "must be true or false")
    return value


def _result_content(raw: object, path: str, *, lenient: bool, problems: list[str] | None) -> str | tuple[ContentBlock, ...]:
    if isinstance(raw, str):
        return raw
    if not isinstance(raw, list):
        raise MalformedContentError(path, "a tool result's content must be a string or a list of blocks")
    inner: list[ContentBlock] = []
    for index, item in enumerate(raw):
        ipath = f"{path}[{index}]"
        kind = item.get("type") if isinstance(item, Mapping) else None
        if isinstance(kind, str) and kind in _FIELDS and kind not in _NESTABLE_KINDS:
            # refused before it is decoded, so no nesting of tool results can recurse
            raise MalformedContentError(ipath, f"a tool result may hold text and image blocks, not {kind}")
        inner.append(decode_block(item, ipath, nested=True, lenient=lenient, problems=problems))
    return tuple(inner)


def block_from_json(obj: object, *, path: str = "block") -> ContentBlock:
    """Decode one block from its wire form.

    Refuses anything malformed, and an audience anywhere but on a top-level text, thinking or
    redacted-thinking block, with :class:`MalformedContentError` whose ``path`` names the place.
    An explicit ``"audience": null`` means no audience.
    """
    return decode_block(obj, path, nested=False, lenient=False, problems=None)


def content_from_json(items: object, *, path: str = "content") -> tuple[ContentBlock, ...]:
    """Decode a message's content (a JSON list of blocks); refuses as :func:`block_from_json`."""
    if not isinstance(items, (list, tuple)):
        raise MalformedContentError(path, f"content must be a list of blocks, not {type(items).__name__}")
    return tuple(block_from_json(item, path=f"{path}[{index}]") for index, item in enumerate(items))


def block_to_json(block: ContentBlock) -> dict[str, Any]:
    """The wire form of a block. ``audience`` is omitted when it is ``None``. Refuses anything
    else than a block with ``ArgumentTypeError`` at ``block``."""
    if not isinstance(block, _ENCODABLE):
        raise ArgumentTypeError("block", f"must be a content block, not {type(block).__name__}")
    if isinstance(block, UnreadableBlock):
        try:
            return json.loads(block.raw)
        except (ValueError, RecursionError):
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
        out["content"] = block.content if isinstance(block.content, str) else [block_to_json(b) for b in block.content]
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
        raise MalformedContentError("block", f"not a content block: {type(block).__name__}")
    if block.audience is not None:
        out["audience"] = list(block.audience) if isinstance(block.audience, tuple) else block.audience
    return out


def content_to_json(blocks: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    """The wire form of a message's content (a sequence of blocks)."""
    return [block_to_json(b) for b in check_sequence(blocks, "content", "a sequence of content blocks")]


def coerce_content(content: object, *, path: str = "content") -> tuple[ContentBlock, ...]:
    """Accept a sequence of blocks (objects, or wire-form dicts) and return a tuple of blocks.

    Refuses a bare string, a non-sequence or an item that is neither a block nor its wire form.
    Audience placement is *not* judged here (wire-form dicts are decoded leniently about
    audiences, so that ``check_content`` names the place exactly as it would for block objects).
    """
    if type(content) is not list and type(content) is not tuple:  # no ABC check on the common types
        if isinstance(content, (str, bytes)) or not isinstance(content, Sequence):
            raise MalformedContentError(path, f"content must be a list of blocks, not {type(content).__name__}")
    out: list[ContentBlock] = []
    decoded = False
    for index, item in enumerate(content):
        ipath = f"{path}[{index}]"
        if isinstance(item, ALL_BLOCK_TYPES):
            out.append(item)
        elif isinstance(item, Mapping):
            out.append(decode_block(item, ipath, nested=False, lenient=True, problems=[]))
            decoded = True
        else:
            raise MalformedContentError(ipath, f"not a content block: {type(item).__name__}")
    if type(content) is tuple and not decoded:
        return content  # a tuple of blocks already: the same object, not a copy of it
    return tuple(out)
