"""The request forms of a compile for the Anthropic Messages API and OpenAI Chat Completions.

A compile is a list of :class:`~strategies.base.CompiledMessage` by any number of participants.
A provider API knows two speakers, so :func:`to_anthropic` and :func:`to_openai` reshape it:

* a message whose participant is ``assistant`` takes the assistant role, and so does every
  message of a memory (given ``sources``, a message whose source is a ``summary``: the recall
  marker and the memory written for this agent speak in its own voice); every other message takes
  the user role. Another speaker's name is kept as a ``"<participant>: "`` prefix on the first
  text of its message (no prefix for the participant ``user``, in any case, nor for content a host
  injected into the compile, whose participant is an internal ``system_context:<namespace>``
  label);
* consecutive messages of one role are merged into one;
* every tool call is answered by its result in the very next message. Only the assistant's own
  calls stay tool blocks (the first call with a given id; a later call reusing the id is text).
  Each one's result (the first ``tool_result`` with its id in a later message) is moved to the
  front of the user message right after the assistant message holding the call; a call with no
  result anywhere later is answered by a stub result (:data:`STUB_RESULT`). Every other tool call
  and result becomes readable text;
* no block is empty, a message left with nothing is dropped, and no ``audience`` key is emitted
  (blocks are rebuilt field by field; a key named ``audience`` inside a tool call's ``input`` is
  the tool's data and is passed on unchanged).

Both functions are pure and deterministic: they do no I/O, never mutate their inputs, and the
returned structures share no mutable object with them.
"""

from __future__ import annotations

import copy
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
    "to_anthropic",
    "to_openai",
    "STUB_RESULT",
    "CONVERSATION_CONTINUES",
    "NO_OUTPUT",
    "IMAGE_TEXT",
    "INJECTION_LABEL",
    "SYSTEM_CHANGE_PREFIX",
    "Role",
    "role_of",
    "takes_prefix",
    "foreign_call_text",
    "orphan_result_text",
    "result_text",
    "system_change_text",
    "openai_image_url",
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
class _Text:
    text: str
    own: bool = False  # the message's own text block (the prefix goes on the first of these)
    names_speaker: bool = False  # a rendering that already names its speaker


@dataclass(frozen=True)
class _Image:
    block: ImageBlock


@dataclass(frozen=True)
class _Thinking:
    block: ThinkingBlock | RedactedThinkingBlock


@dataclass(frozen=True)
class _Call:
    block: ToolUseBlock


@dataclass(frozen=True)
class _Result:
    tool_use_id: str
    content: str | tuple[ContentBlock, ...]
    is_error: bool = False


_Item = _Text | _Image | _Thinking | _Call | _Result


@dataclass
class _Segment:
    role: Role
    items: list[_Item] = field(default_factory=list)


def _compact_json(value: Any) -> str:
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
    return f"[{participant} called tool {block.name} {_compact_json(block.input)}]"


def system_change_text(block: SystemChangeBlock) -> str:
    """A system change as the text ``[system change] <text>``."""
    return f"{SYSTEM_CHANGE_PREFIX} {block.text}" if block.text else SYSTEM_CHANGE_PREFIX


def _prefix_first_text(items: list[_Item], participant: str) -> None:
    """Put ``"<participant>: "`` on the message's first own text; with no own text, on its first
    text unless that one (a rendered tool call) already names the speaker."""
    texts = [(n, item) for n, item in enumerate(items) if isinstance(item, _Text)]
    target = next(((n, item) for n, item in texts if item.own), None)
    if target is None and texts and not texts[0][1].names_speaker:
        target = texts[0]
    if target is not None:
        n, item = target
        items[n] = _Text(f"{participant}: {item.text}", item.own, True)


def _checked_sources(messages: Sequence[CompiledMessage], sources: Sequence[SourceEntry] | None) -> list[SourceEntry | None]:
    if sources is None:
        return [None] * len(messages)
    if len(sources) != len(messages):
        raise ValueError(f"sources must hold one entry per message: {len(sources)} entries for {len(messages)} messages")
    return list(sources)


def _plan(
    messages: Sequence[CompiledMessage], assistant: str, *, keep_thinking: bool, sources: Sequence[SourceEntry] | None
) -> list[_Segment]:
    """Role-mapped, tool-paired, merged segments with no empty item and no empty segment."""
    entries = _checked_sources(messages, sources)
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
    answer: dict[tuple[int, int], _Result] = {}
    for (i, j), call in kept.items():
        found: _Result | None = None
        for k in range(i + 1, len(messages)):
            for n, block in enumerate(messages[k].content):
                if isinstance(block, ToolResultBlock) and block.tool_use_id == call.id and (k, n) not in claimed:
                    claimed.add((k, n))
                    found = _Result(call.id, block.content, block.is_error)
                    break
            if found is not None:
                break
        answer[(i, j)] = found if found is not None else _Result(call.id, STUB_RESULT)

    segments: list[_Segment] = []
    pending: list[_Result] = []  # results owed by the current run of assistant messages

    def flush() -> None:
        if pending:
            segments.append(_Segment("user", list(pending)))
            pending.clear()

    for i, message in enumerate(messages):
        role = roles[i]
        items: list[_Item] = []
        results: list[_Result] = []
        held_claims = False
        for j, block in enumerate(message.content):
            if isinstance(block, TextBlock):
                if block.text:
                    items.append(_Text(block.text, own=True))
            elif isinstance(block, SystemChangeBlock):
                items.append(_Text(system_change_text(block)))
            elif isinstance(block, ThinkingBlock):
                if keep_thinking and role == "assistant" and block.thinking and block.signature:
                    items.append(_Thinking(block))
            elif isinstance(block, RedactedThinkingBlock):
                if keep_thinking and role == "assistant" and block.data:
                    items.append(_Thinking(block))
            elif isinstance(block, ImageBlock):
                items.append(_Image(block) if role == "user" else _Text(IMAGE_TEXT))
            elif isinstance(block, ToolUseBlock):
                if (i, j) in kept:
                    items.append(_Call(block))
                    results.append(answer[(i, j)])
                else:
                    items.append(_Text(foreign_call_text(message.participant, block), names_speaker=True))
            elif isinstance(block, ToolResultBlock):
                if (i, j) in claimed:
                    held_claims = True  # moved to follow its call
                else:
                    items.append(_Text(orphan_result_text(block)))
            # anything else (not a compiled block) is dropped

        if takes_prefix(message.participant, role):
            _prefix_first_text(items, message.participant)

        if not items and not held_claims:
            continue  # an empty message neither speaks nor ends a run of assistant messages
        if role == "user":
            flush()
        if items:
            segments.append(_Segment(role, items))
        pending.extend(results)
    flush()

    merged: list[_Segment] = []
    for segment in segments:
        if merged and merged[-1].role == segment.role:
            merged[-1].items.extend(segment.items)
        else:
            merged.append(_Segment(segment.role, list(segment.items)))
    return merged


# -- Anthropic --------------------------------------------------------------------------------------


def _anthropic_image(block: ImageBlock) -> dict[str, Any]:
    if block.data is not None:
        source: dict[str, Any] = {"type": "base64", "media_type": block.media_type, "data": block.data}
    else:
        source = {"type": "url", "url": block.url}
    return {"type": "image", "source": source}


def _anthropic_result(result: _Result) -> dict[str, Any]:
    content: str | list[dict[str, Any]]
    if isinstance(result.content, str):
        content = result.content or NO_OUTPUT
    else:
        nested: list[dict[str, Any]] = []
        for inner in result.content:
            if isinstance(inner, TextBlock):
                if inner.text:
                    nested.append({"type": "text", "text": inner.text})
            elif isinstance(inner, ImageBlock):
                nested.append(_anthropic_image(inner))
        content = nested or NO_OUTPUT
    out: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.tool_use_id, "content": content}
    if result.is_error:
        out["is_error"] = True
    return out


def _anthropic_block(item: _Item) -> dict[str, Any]:
    if isinstance(item, _Text):
        return {"type": "text", "text": item.text}
    if isinstance(item, _Image):
        return _anthropic_image(item.block)
    if isinstance(item, _Thinking):
        if isinstance(item.block, ThinkingBlock):
            return {"type": "thinking", "thinking": item.block.thinking, "signature": item.block.signature}
        return {"type": "redacted_thinking", "data": item.block.data}
    if isinstance(item, _Call):
        return {
            "type": "tool_use",
            "id": item.block.id,
            "name": item.block.name,
            "input": copy.deepcopy(item.block.input),
        }
    return _anthropic_result(item)


def to_anthropic(
    messages: Sequence[CompiledMessage], assistant: str, *, sources: Sequence[SourceEntry] | None = None
) -> list[dict[str, Any]]:
    """The ``messages`` of an Anthropic Messages API request for ``assistant``.

    ``sources`` (one entry per message, as a compile's provenance gives them) lets the memories
    written for ``assistant`` speak as the assistant; without it only ``assistant``'s own
    messages do. A ``ValueError`` is raised when it does not hold one entry per message.

    Promises: roles alternate ``user``/``assistant`` starting with ``user`` (a list that would start
    with the assistant gets a leading ``[conversation continues]`` user message); every
    ``tool_use`` block is one of the assistant's own calls and the very next message opens with a
    ``tool_result`` for each of its calls, in call order (the real result moved there, or
    :data:`STUB_RESULT`); every ``tool_result`` block answers a ``tool_use`` of the message just
    before it; other speakers' calls and results, and results with no call, are text; other
    speakers' names prefix their first text; thinking appears only in assistant messages and only
    with a signature, redacted thinking only in assistant messages; an image in an assistant
    message becomes the text ``[image]``; a system change becomes ``[system change] <text>``; no
    text or content is empty and no ``audience`` key is emitted. An empty input gives ``[]``.
    """
    out: list[dict[str, Any]] = []
    for segment in _plan(messages, assistant, keep_thinking=True, sources=sources):
        out.append({"role": segment.role, "content": [_anthropic_block(item) for item in segment.items]})
    if out and out[0]["role"] == "assistant":
        out.insert(0, {"role": "user", "content": [{"type": "text", "text": CONVERSATION_CONTINUES}]})
    return out


# -- OpenAI -----------------------------------------------------------------------------------------


def openai_image_url(block: ImageBlock) -> str:
    """An image as an OpenAI ``image_url``: inline data as a data URL, else its URL."""
    if block.data is not None:
        return f"data:{block.media_type};base64,{block.data}"
    return block.url  # type: ignore[return-value]


def _openai_tool_content(result: _Result) -> str:
    body = result_text(result.content) or NO_OUTPUT
    return f"[tool error] {body}" if result.is_error else body


def to_openai(
    messages: Sequence[CompiledMessage],
    assistant: str,
    system: Sequence[ContentBlock] = (),
    *,
    sources: Sequence[SourceEntry] | None = None,
) -> list[dict[str, Any]]:
    """The ``messages`` of an OpenAI Chat Completions request for ``assistant``.

    ``sources`` is as for :func:`to_anthropic`: with it, memories speak as the assistant.

    Promises: a leading ``{"role": "system", "content": text}`` when ``system`` holds non-empty
    text blocks (their texts joined by a blank line; other blocks are ignored); then user and
    assistant messages, consecutive ones of one role merged. An assistant message has
    ``content`` (its texts joined by a blank line, or ``None`` only when it has ``tool_calls`` and
    no text) and ``tool_calls`` only when it makes calls (``arguments`` is compact JSON). Right
    after it comes exactly one ``{"role": "tool", "tool_call_id", "content"}`` message per call,
    in call order (the real result as text, ``[tool error] `` before an error's text, or
    :data:`STUB_RESULT`), before any user text of that turn. A user message's ``content`` is a
    string (texts joined by a blank line) or, when it holds an image, a list of ``text`` and
    ``image_url`` parts (inline data as a data URL). Thinking is dropped; an image in a tool
    result or an assistant message becomes ``[image]``; other speakers' calls and results,
    results with no call, and system changes are text; other speakers' names prefix their first
    text. No content is empty and no ``audience`` key is emitted. The list may start with an
    assistant message.
    """
    out: list[dict[str, Any]] = []
    system_texts = [b.text for b in system if isinstance(b, TextBlock) and b.text]
    if system_texts:
        out.append({"role": "system", "content": "\n\n".join(system_texts)})

    for segment in _plan(messages, assistant, keep_thinking=False, sources=sources):
        if segment.role == "assistant":
            texts = [item.text for item in segment.items if isinstance(item, _Text)]
            calls = [item.block for item in segment.items if isinstance(item, _Call)]
            message: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) if texts else None}
            if calls:
                message["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": _compact_json(call.input)},
                    }
                    for call in calls
                ]
            out.append(message)
            continue

        parts: list[dict[str, Any]] = []
        has_image = False
        for item in segment.items:
            if isinstance(item, _Result):
                out.append({"role": "tool", "tool_call_id": item.tool_use_id, "content": _openai_tool_content(item)})
            elif isinstance(item, _Text):
                parts.append({"type": "text", "text": item.text})
            elif isinstance(item, _Image):
                has_image = True
                parts.append({"type": "image_url", "image_url": {"url": openai_image_url(item.block)}})
        if not parts:
            continue
        if has_image:
            out.append({"role": "user", "content": parts})
        else:
            out.append({"role": "user", "content": "\n\n".join(p["text"] for p in parts)})
    return out
