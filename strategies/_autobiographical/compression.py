"""The texts of compression requests, and how messages and summaries are shown in them.

Requests hold only two participants, ``user`` and ``assistant``, already shaped so that an adapter
can send them as they are: view messages reduced to text, summaries as recall pairs, the memory
point marker, the target, and the instruction.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ...store._blocks import (
    ContentBlock,
    ImageBlock,
    SystemChangeBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ...store._messages import Message
from .._base import CompiledMessage
from .._tokens import Estimator
from .._truncation import truncate_content
from .records import Summary

__all__ = [
    "SYSTEM",
    "MARKER",
    "L1_INSTRUCTION",
    "MERGE_INSTRUCTION",
    "TRANSITION_SYSTEM",
    "TRANSITION_REQUEST",
    "CONTEXT_MANAGER",
    "reduce_message",
    "recall_pair",
    "recall_messages",
    "system_text",
]

CONTEXT_MANAGER = "Context Manager"
SYSTEM = (
    "You are {participant}. You are writing your own memory of part of a conversation, to rely on later when its "
    "messages are no longer in view."
)
MARKER = "[Memory point] Everything from here to the next instruction is what your next memory covers."
L1_INSTRUCTION = (
    "Write your memory of the stretch since the memory point. Write as yourself, in the first person, as notes you "
    "will rely on when these messages are gone. Keep what you need to carry on: names, numbers, file paths, commands, "
    "decisions and why they were made, what was asked of you and is still open, and anything you promised. Leave out "
    "what your earlier memories already hold. If the stretch was routine, say so in a sentence or two. Aim for about "
    "{target} tokens. Write only the memory itself: no preamble, no headings, no closing remarks."
)
MERGE_INSTRUCTION = (
    "You have just re-read {what} covering this period, in order. Combine it into one level-{k} memory of the whole "
    "period: what happened, what was decided and why, what is still open, and the concrete details you would need to "
    "carry on. Write as yourself, in the first person, in order of events. Aim for about {target} tokens. Write only "
    "the memory itself: no preamble, no headings, no closing remarks."
)
TRANSITION_SYSTEM = "You write short transition notes between topics of one conversation. Be concise."
TRANSITION_REQUEST = (
    "The conversation is moving on to a new topic. Write a short transition note, two or three paragraphs, that "
    "carries over what matters: the original goal and what was achieved, the findings, decisions and open questions, "
    "and anything the next topic should refer back to."
)


def system_text(participant: str) -> str:
    return SYSTEM.format(participant=participant)


def _reduce_blocks(blocks: Sequence[ContentBlock]) -> list[str]:
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolUseBlock):
            payload = json.dumps(block.input, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
            parts.append(f"[tool call {block.name} {payload}]")
        elif isinstance(block, ToolResultBlock):
            inner = block.content if isinstance(block.content, str) else "\n".join(_reduce_blocks(block.content))
            parts.append(f"[tool error] {inner}" if block.is_error else f"[tool result] {inner}")
        elif isinstance(block, ImageBlock):
            parts.append("[image]")
        elif isinstance(block, SystemChangeBlock):
            parts.append(f"[system change] {block.text}")
        # thinking and redacted thinking are dropped
    return parts


def reduce_message(message: Message, *, summary_participant: str, cap: int, estimator: Estimator) -> CompiledMessage | None:
    """A view message as a compression request shows it (text only: tool traffic, images and
    system changes as bracketed text, thinking dropped; a prefix naming any speaker but ``user``
    and the summary participant; truncated to ``cap``), or ``None`` when no text is left."""
    parts = [p for p in _reduce_blocks(message.content) if p]
    if not parts:
        return None
    if message.participant == summary_participant:
        role = "assistant"
    else:
        role = "user"
        if message.participant.lower() != "user" and message.participant != CONTEXT_MANAGER:
            parts[0] = f"{message.participant}: {parts[0]}"
    content, _cut = truncate_content(tuple(TextBlock(p) for p in parts), cap, estimator)
    return CompiledMessage(role, content)


def recall_pair(summary: Summary) -> tuple[CompiledMessage, CompiledMessage]:
    """A summary as shown in a request: ``user`` ``[Recall <id>]`` then ``assistant`` text."""
    return (CompiledMessage("user", (TextBlock(f"[Recall {summary.id}]"),)), CompiledMessage("assistant", (TextBlock(summary.text),)))


def recall_messages(summary: Summary, summary_participant: str) -> tuple[CompiledMessage, CompiledMessage]:
    """A summary as a compile renders it: ``Context Manager`` ``[Recall <id>]`` then the
    summary text by ``summary_participant``."""
    return (
        CompiledMessage(CONTEXT_MANAGER, (TextBlock(f"[Recall {summary.id}]"),)),
        CompiledMessage(summary_participant, (TextBlock(summary.text),)),
    )
