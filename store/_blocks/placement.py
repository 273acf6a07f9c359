"""Where an audience may stand: one table, read by every check.

A message write (``add_message``, ``edit_message``, and the wire form ``block_from_json``
decodes) may put an audience only where :data:`WRITE_AUDIENCE_PLACES` says: on a message's own
top-level text, thinking and redacted-thinking blocks. Nowhere else: not on a tool call, a tool
result, a system change or an image, and not on any block nested inside a tool result. A context
entry or a compile's injection may hold no audience anywhere, since nothing reads one there.

The codec (strict decoding refuses, lenient decoding of stored data reports) and
:func:`check_content` (block objects) both ask :func:`audience_refusal`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final

from .._errors import MalformedContentError
from .block_types import ALL_BLOCK_TYPES, ContentBlock, ToolResultBlock, audience_error

__all__ = ["Depth", "WRITE_AUDIENCE_PLACES", "audience_refusal", "check_content"]


class Depth(enum.Enum):
    """How deep a block stands in a message's content."""

    TOP = "a message's own block"
    NESTED = "a block inside a tool result"


#: Block type -> the depths at which a message write may give it an audience. A type with no
#: depths never carries one on a write. Injections and context entries refuse every audience.
WRITE_AUDIENCE_PLACES: Final[Mapping[str, frozenset[Depth]]] = MappingProxyType(
    {
        "text": frozenset({Depth.TOP}),
        "thinking": frozenset({Depth.TOP}),
        "redacted_thinking": frozenset({Depth.TOP}),
        "tool_use": frozenset(),
        "tool_result": frozenset(),
        "image": frozenset(),
        "system_change": frozenset(),
    }
)

NOWHERE = "no audience may stand here: nothing reads one in this place"
ONLY_TOP = "an audience may only stand on a message's own top-level blocks"


def audience_refusal(kind: str, *, nested: bool, allow_audience: bool) -> str | None:
    """Why an audience on a ``kind`` block at this depth is refused, or ``None`` where it may
    stand. ``allow_audience`` is true for a message write, false for a context entry or an
    injection (which refuse every audience)."""
    if not allow_audience:
        return NOWHERE
    depth = Depth.NESTED if nested else Depth.TOP
    if depth in WRITE_AUDIENCE_PLACES.get(kind, frozenset()):
        return None
    if nested:
        return ONLY_TOP
    return f"a {kind} block may not carry an audience"


def check_content(blocks: Sequence[ContentBlock], *, path: str, allow_audience: bool) -> None:
    """Refuse an audience where it may not stand, or one that is not well formed, naming the
    path (``content[2].content[0].audience``).

    With ``allow_audience`` (a message write), a message's own top-level text, thinking and
    redacted-thinking blocks may carry a well-formed audience; nothing else may. Without it (a
    context entry, a compile injection), no block may carry one anywhere. Returns ``None`` or
    raises :class:`MalformedContentError` (:class:`InvalidNameError` for a name in an audience
    that is not a reader's name); it never changes anything.
    """
    for index, block in enumerate(blocks):
        bpath = f"{path}[{index}]"
        if not isinstance(block, ALL_BLOCK_TYPES):
            raise MalformedContentError(bpath, f"not a content block: {type(block).__name__}")
        own = block.audience
        if own is not None:
            apath = f"{bpath}.audience"
            refusal = audience_refusal(block.type, nested=False, allow_audience=allow_audience)
            if refusal is not None:
                raise MalformedContentError(apath, refusal)
            error = audience_error(own, apath)
            if error is not None:
                raise error
        if isinstance(block, ToolResultBlock) and isinstance(block.content, tuple):
            for inner_index, inner in enumerate(block.content):
                if inner.audience is not None:
                    ipath = f"{bpath}.content[{inner_index}].audience"
                    refusal = audience_refusal(inner.type, nested=True, allow_audience=allow_audience)
                    if refusal is not None:
                        raise MalformedContentError(ipath, refusal)
                    error = audience_error(inner.audience, ipath)  # pragma: no cover - no nested audience is allowed today
                    if error is not None:
                        raise error
