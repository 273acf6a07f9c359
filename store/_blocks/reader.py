"""What one reader may see of content, and the lenient decoding of stored content it reads.

:func:`content_for_reader` keeps a block with no audience, keeps a block whose audience names the
reader (without the audience), and drops every other block that has one. Stored data is read
fail-closed: an audience found where a write would refuse one (old or foreign data) restricts the
whole top-level block that holds it, an audience that is not well formed names no one, and a
block that cannot be decoded at all becomes an :class:`UnreadableBlock`, hidden from every reader.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import attrs

from .._arguments import check_sequence, check_str
from .._errors import MalformedContentError
from .._stored_json import holds_duplicate
from .block_types import (
    AUDIENCE_FIELD_TYPES,
    THINKING_TYPES,
    UNREADABLE_AUDIENCE,
    ContentBlock,
    ImageBlock,
    SystemChangeBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnreadableBlock,
    audience_problem,
)
from .codec import decode_block

__all__ = ["content_for_reader", "has_audience", "effective_audience", "is_thinking", "decode_stored_content"]


def effective_audience(block: object) -> object:
    """Who may see ``block``: ``None`` (everyone), a frozenset of reader names, or
    :data:`UNREADABLE_AUDIENCE` (no one).

    A block's own audience and every audience nested in a tool result all restrict who may see
    the top-level block (fail-closed reading of old or foreign data). An audience that is not well
    formed (empty, not a list of reader names, a name no reader can have) names no one.
    """
    if isinstance(block, UnreadableBlock):
        return UNREADABLE_AUDIENCE
    own = getattr(block, "audience", None)
    if own is None and not isinstance(block, ToolResultBlock):
        return None  # no audience of its own, and none nested
    names: frozenset[str] | None = None
    candidates = [own] if own is not None else []
    if isinstance(block, ToolResultBlock) and isinstance(block.content, tuple):
        candidates.extend(inner.audience for inner in block.content if getattr(inner, "audience", None) is not None)
    for audience in candidates:
        if audience_problem(audience) is not None:
            return UNREADABLE_AUDIENCE
        names = frozenset(audience) if names is None else names & frozenset(audience)
    return names


def _without_audiences(block: ContentBlock) -> ContentBlock:
    if isinstance(block, AUDIENCE_FIELD_TYPES):
        return attrs.evolve(block, audience=None)
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
    """What ``reader`` may see of ``blocks``.

    Keeps a block with no audience (the same object); keeps a block whose audience names
    ``reader``, returned without any audience field; drops every other block that has one. With
    ``reader=None`` every block with an audience is dropped. An audience that is not well formed
    names no one. Names match exactly. An audience nested in a tool result, or
    on a block type that may not carry one, hides the whole top-level block from readers it does
    not name. When nothing is dropped or stripped, the result holds the very same objects.
    Refuses ``blocks`` that are not a sequence and a ``reader`` that is not ``None`` or a
    string with ``ArgumentTypeError``.
    """
    if not isinstance(blocks, tuple):
        check_sequence(blocks, "blocks", "a sequence of content blocks")
    if reader is not None and not isinstance(reader, str):
        check_str(reader, "reader", optional=True)
    kept: list[ContentBlock] | None = None
    for index, block in enumerate(blocks):
        names = effective_audience(block)
        if names is None:
            if kept is not None:
                kept.append(block)
            continue
        if kept is None:
            kept = list(blocks[:index])
        if reader is not None and isinstance(names, frozenset) and reader in names:
            kept.append(_without_audiences(block))
    if kept is None:
        return blocks if isinstance(blocks, tuple) else tuple(blocks)
    return tuple(kept)


def has_audience(blocks: Sequence[ContentBlock]) -> bool:
    """Whether any block (or a block nested in a tool result) carries an audience, or is unreadable."""
    for block in blocks:  # a loop, not any() over a generator: this runs for every message written
        if (type(block) is not TextBlock or block.audience is not None) and effective_audience(block) is not None:
            return True
    return False


def is_thinking(block: object) -> bool:
    """Whether ``block`` is a thinking or redacted-thinking block."""
    return isinstance(block, THINKING_TYPES)


def _json_text(value: object) -> str:
    """The JSON text of a stored value that could not be decoded, as well as it can be told."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)
    except RecursionError:  # foreign data nested too deep for the encoder (writes refuse it)
        return json.dumps({"type": "unreadable", "problem": f"a {type(value).__name__} nested too deep to show"})


def decode_stored_content(items: object) -> tuple[tuple[ContentBlock, ...], list[str]]:
    """Decode content read back from disk, never refusing it.

    Returns the blocks and a list of problems found (for the caller to report once). A
    misplaced or malformed audience is kept on its block (read fail-closed by
    :func:`content_for_reader`); a block that cannot be decoded, or that gives a key twice
    anywhere in it (``store._stored_json``: which of the two values counts cannot be told),
    becomes an :class:`UnreadableBlock`; content that is not a list becomes one unreadable block.
    """
    problems: list[str] = []
    if not isinstance(items, list):
        raw = _json_text(items)
        problems.append(f"content: not a list of blocks: {raw[:80]}")
        return (UnreadableBlock(raw, "content is not a list of blocks"),), problems  # type: ignore[return-value]
    out: list[ContentBlock] = []
    for index, item in enumerate(items):
        path = f"content[{index}]"
        if holds_duplicate(item):
            problem = f"{path}: an object in the block gives a key twice"
            problems.append(problem)
            out.append(UnreadableBlock(_json_text(item), problem))  # type: ignore[arg-type]
            continue
        try:
            out.append(decode_block(item, path, nested=False, lenient=True, problems=problems))
        except MalformedContentError as exc:
            problems.append(str(exc))
            out.append(UnreadableBlock(_json_text(item), str(exc)))  # type: ignore[arg-type]
    return tuple(out), problems
