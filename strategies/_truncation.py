"""Per-message truncation (``max_message_tokens``): cap how much of one raw message a compile shows."""

from __future__ import annotations

from collections.abc import Sequence

from ..store._blocks import ContentBlock, TextBlock, ToolResultBlock
from ._tokens import Estimator

__all__ = ["truncate_content", "TRUNCATED", "OMITTED"]

OMITTED = "[content omitted — context budget exceeded]"


def TRUNCATED(tokens: int) -> str:  # noqa: N802 - a text template
    return f"\n\n[truncated — original was {tokens} tokens]"


def truncate_content(
    content: Sequence[ContentBlock], cap: int | None, estimator: Estimator
) -> tuple[tuple[ContentBlock, ...], bool]:
    """Content shown within ``cap`` tokens, and whether anything was cut.

    Spends 3 x ``cap`` characters across text blocks and string tool-result contents, in block
    order: a block that fits is kept; the one that straddles is cut and marked with the message's
    original estimate; later text blocks are dropped; a later string tool result keeps its block
    with its content omitted. Other blocks pass unchanged.
    """
    content = tuple(content)
    if cap is None:
        return content, False
    original = estimator(content)
    if original <= cap:
        return content, False
    allowance = 3 * cap
    spent = 0
    cut = False
    out: list[ContentBlock] = []
    for block in content:
        if isinstance(block, TextBlock):
            if cut:
                continue
            if spent + len(block.text) <= allowance:
                out.append(block)
                spent += len(block.text)
            else:
                out.append(TextBlock(block.text[: allowance - spent] + TRUNCATED(original)))
                spent = allowance
                cut = True
        elif isinstance(block, ToolResultBlock) and isinstance(block.content, str):
            if cut:
                out.append(ToolResultBlock(block.tool_use_id, OMITTED, block.is_error))
            elif spent + len(block.content) <= allowance:
                out.append(block)
                spent += len(block.content)
            else:
                out.append(
                    ToolResultBlock(block.tool_use_id, block.content[: allowance - spent] + TRUNCATED(original), block.is_error)
                )
                spent = allowance
                cut = True
        else:
            out.append(block)
    return (tuple(out), True) if cut else (content, False)
