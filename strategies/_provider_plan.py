"""The neutral plan a compile's provider forms are rendered from (strategies/_provider_forms.py
renders it for the Anthropic Messages API and OpenAI Chat Completions): who speaks in which of
the two roles, which tool calls stay calls, where each result goes, and the text everything else
becomes. The rules are listed in strategies/_provider_forms.py. Pure and deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..store._blocks import (
    ContentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    SystemChangeBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ._base import CompiledMessage, SourceEntry
from ._repair import STUB_RESULT  # the stub a call with no result gets, as in compiles

__all__ = [
    "CONVERSATION_CONTINUES",
    "IMAGE_TEXT",
    "INJECTION_LABEL",
    "NO_OUTPUT",
    "STUB_RESULT",
    "SYSTEM_CHANGE_PREFIX",
    "PlanCall",
    "PlanImage",
    "PlanItem",
    "PlanResult",
    "PlanText",
    "PlanThinking",
    "Role",
    "Segment",
    "compact_json",
    "foreign_call_text",
    "orphan_result_text",
    "plan",
    "result_text",
    "role_of",
    "system_change_text",
    "takes_prefix",
]

CONVERSATION_CONTINUES = "[conversation continues]"
"""The text of the user message put before an Anthropic list that would start with the assistant."""

NO_OUTPUT = "[no output]"
"""The content of a tool result that would otherwise be empty."""

IMAGE_TEXT = "[image]"
SYSTEM_CHANGE_PREFIX = "[system change]"

INJECTION_LABEL = "system_context:"
"""How the participant of a positioned injection begins (``system_context:<namespace>``): an
internal label that no provider form shows the model."""

Role = Literal["user", "assistant"]


def role_of(participant: str, source: SourceEntry | None, assistant: str) -> Role:
    """The provider role of a compiled message: ``assistant`` for the assistant's own messages and
    for every message of a memory (a ``summary`` source), ``user`` for everything else."""
    if participant == assistant or (source is not None and source.kind == "summary"):
        return "assistant"
    return "user"


def takes_prefix(participant: str, role: Role) -> bool:
    """Whether a message's first text is prefixed with ``"<participant>: "``: only in the user
    role, never for the participant ``user`` (any case) nor for an injection's internal label."""
    return role == "user" and participant.lower() != "user" and not participant.startswith(INJECTION_LABEL)


# -- the neutral plan both forms are rendered from --------------------------------------------------


@dataclass(frozen=True)
class PlanText:
    text: str
    own: bool = False  # the message's own text block (the prefix goes on the first of these)
    names_speaker: bool = False  # a rendering that already names its speaker


@dataclass(frozen=True)
class PlanImage:
    block: ImageBlock


@dataclass(frozen=True)
class PlanThinking:
    block: ThinkingBlock | RedactedThinkingBlock


@dataclass(frozen=True)
class PlanCall:
    block: ToolUseBlock


@dataclass(frozen=True)
class PlanResult:
    tool_use_id: str
    content: str | tuple[ContentBlock, ...]
    is_error: bool = False


PlanItem = PlanText | PlanImage | PlanThinking | PlanCall | PlanResult


@dataclass
class Segment:
    role: Role
    items: list[PlanItem] = field(default_factory=list)


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def result_text(content: str | tuple[ContentBlock, ...]) -> str:
    """A tool result's content as text: nested text kept, an image as ``[image]``, joined by newlines."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for inner in content:
        if isinstance(inner, TextBlock):
            if inner.text:
                parts.append(inner.text)
        elif isinstance(inner, ImageBlock):
            parts.append(IMAGE_TEXT)
    return "\n".join(parts)


def orphan_result_text(block: ToolResultBlock) -> str:
    """A tool result that answers no call of the assistant, as readable text."""
    label = "tool error" if block.is_error else "tool result"
    body = result_text(block.content)
    return f"[{label} {block.tool_use_id}] {body}" if body else f"[{label} {block.tool_use_id}]"


def foreign_call_text(participant: str, block: ToolUseBlock) -> str:
    """Another speaker's tool call, as readable text that names the speaker."""
    return f"[{participant} called tool {block.name} {compact_json(block.input)}]"


def system_change_text(block: SystemChangeBlock) -> str:
    """A system change as the text ``[system change] <text>``."""
    return f"{SYSTEM_CHANGE_PREFIX} {block.text}" if block.text else SYSTEM_CHANGE_PREFIX


def prefix_first_text(items: list[PlanItem], participant: str) -> None:
    """Put ``"<participant>: "`` on the message's first own text; with no own text, on its first
    text unless that one (a rendered tool call) already names the speaker."""
    texts = [(n, item) for n, item in enumerate(items) if isinstance(item, PlanText)]
    target = next(((n, item) for n, item in texts if item.own), None)
    if target is None and texts and not texts[0][1].names_speaker:
        target = texts[0]
    if target is not None:
        n, item = target
        items[n] = PlanText(f"{participant}: {item.text}", item.own, True)


def checked_sources(messages: Sequence[CompiledMessage], sources: Sequence[SourceEntry] | None) -> list[SourceEntry | None]:
    if sources is None:
        return [None] * len(messages)
    if len(sources) != len(messages):
        raise ValueError(f"sources must hold one entry per message: {len(sources)} entries for {len(messages)} messages")
    return list(sources)


def plan(
    messages: Sequence[CompiledMessage], assistant: str, *, keep_thinking: bool, sources: Sequence[SourceEntry] | None
) -> list[Segment]:
    """Role-mapped, tool-paired, merged segments with no empty item and no empty segment."""
    entries = checked_sources(messages, sources)
    roles: list[Role] = [role_of(m.participant, entries[i], assistant) for i, m in enumerate(messages)]

    # The assistant's own calls that stay tool blocks: the first call with each id.
    kept: dict[tuple[int, int], ToolUseBlock] = {}
    seen_ids: set[str] = set()
    for i, message in enumerate(messages):
        if roles[i] != "assistant":
            continue
        for j, block in enumerate(message.content):
            if isinstance(block, ToolUseBlock) and block.id not in seen_ids:
                seen_ids.add(block.id)
                kept[(i, j)] = block

    # Each kept call claims the first not yet claimed result with its id in a later message.
    claimed: set[tuple[int, int]] = set()
    answer: dict[tuple[int, int], PlanResult] = {}
    for (i, j), call in kept.items():
        found: PlanResult | None = None
        for k in range(i + 1, len(messages)):
            for n, block in enumerate(messages[k].content):
                if isinstance(block, ToolResultBlock) and block.tool_use_id == call.id and (k, n) not in claimed:
                    claimed.add((k, n))
                    found = PlanResult(call.id, block.content, block.is_error)
                    break
            if found is not None:
                break
        answer[(i, j)] = found if found is not None else PlanResult(call.id, STUB_RESULT)

    segments: list[Segment] = []
    pending: list[PlanResult] = []  # results owed by the current run of assistant messages

    def flush() -> None:
        if pending:
            segments.append(Segment("user", list(pending)))
            pending.clear()

    for i, message in enumerate(messages):
        role = roles[i]
        items: list[PlanItem] = []
        results: list[PlanResult] = []
        held_claims = False
        for j, block in enumerate(message.content):
            if isinstance(block, TextBlock):
                if block.text:
                    items.append(PlanText(block.text, own=True))
            elif isinstance(block, SystemChangeBlock):
                items.append(PlanText(system_change_text(block)))
            elif isinstance(block, ThinkingBlock):
                if keep_thinking and role == "assistant" and block.thinking and block.signature:
                    items.append(PlanThinking(block))
            elif isinstance(block, RedactedThinkingBlock):
                if keep_thinking and role == "assistant" and block.data:
                    items.append(PlanThinking(block))
            elif isinstance(block, ImageBlock):
                items.append(PlanImage(block) if role == "user" else PlanText(IMAGE_TEXT))
            elif isinstance(block, ToolUseBlock):
                if (i, j) in kept:
                    items.append(PlanCall(block))
                    results.append(answer[(i, j)])
                else:
                    items.append(PlanText(foreign_call_text(message.participant, block), names_speaker=True))
            elif isinstance(block, ToolResultBlock):
                if (i, j) in claimed:
                    held_claims = True  # moved to follow its call
                else:
                    items.append(PlanText(orphan_result_text(block)))
            # anything else (not a compiled block) is dropped

        if takes_prefix(message.participant, role):
            prefix_first_text(items, message.participant)

        if not items and not held_claims:
            continue  # an empty message neither speaks nor ends a run of assistant messages
        if role == "user":
            flush()
        if items:
            segments.append(Segment(role, items))
        pending.extend(results)
    flush()

    merged: list[Segment] = []
    for segment in segments:
        if merged and merged[-1].role == segment.role:
            merged[-1].items.extend(segment.items)
        else:
            merged.append(Segment(segment.role, list(segment.items)))
    return merged
