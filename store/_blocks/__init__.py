"""Content blocks, split by concern:

* :mod:`.block_types`: the block types, their constructors, and what a well-formed audience is;
* :mod:`.placement`: where an audience may stand, as one table, and ``check_content``;
* :mod:`.codec`: the JSON wire form (strict for what a caller passes, lenient for stored data);
* :mod:`.reader`: what one reader may see (``content_for_reader``) and the fail-closed decoding
  of stored content.

Everything the rest of the library uses is importable from here.
"""

from .block_types import (
    ALL_BLOCK_TYPES,
    UNREADABLE_AUDIENCE,
    Audience,
    ContentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    SystemChangeBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnreadableBlock,
    image,
    redacted_thinking,
    system_change,
    text,
    thinking,
    tool_result,
    tool_use,
)
from .codec import block_from_json, block_to_json, coerce_content, content_from_json, content_to_json
from .placement import WRITE_AUDIENCE_PLACES, check_content
from .reader import content_for_reader, decode_stored_content, effective_audience, has_audience, is_thinking

__all__ = [
    "ALL_BLOCK_TYPES",
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
    "is_thinking",
    "UNREADABLE_AUDIENCE",
    "WRITE_AUDIENCE_PLACES",
    "decode_stored_content",
]
