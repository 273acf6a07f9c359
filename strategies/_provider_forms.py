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
from collections.abc import Sequence
from typing import Any

from ..store._blocks import ContentBlock, ImageBlock, TextBlock, ThinkingBlock
from ._base import CompiledMessage, SourceEntry
from ._provider_plan import (
    CONVERSATION_CONTINUES,
    IMAGE_TEXT,
    INJECTION_LABEL,
    NO_OUTPUT,
    STUB_RESULT,
    SYSTEM_CHANGE_PREFIX,
    PlanCall,
    PlanImage,
    PlanItem,
    PlanResult,
    PlanText,
    PlanThinking,
    Role,
    compact_json,
    foreign_call_text,
    orphan_result_text,
    plan,
    result_text,
    role_of,
    system_change_text,
    takes_prefix,
)

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


# -- Anthropic --------------------------------------------------------------------------------------


def _anthropic_image(block: ImageBlock) -> dict[str, Any]:
    if block.data is not None:
        source: dict[str, Any] = {"type": "base64", "media_type": block.media_type, "data": block.data}
    else:
        source = {"type": "url", "url": block.url}
    return {"type": "image", "source": source}


def _anthropic_result(result: PlanResult) -> dict[str, Any]:
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


def _anthropic_block(item: PlanItem) -> dict[str, Any]:
    if isinstance(item, PlanText):
        return {"type": "text", "text": item.text}
    if isinstance(item, PlanImage):
        return _anthropic_image(item.block)
    if isinstance(item, PlanThinking):
        if isinstance(item.block, ThinkingBlock):
            return {"type": "thinking", "thinking": item.block.thinking, "signature": item.block.signature}
        return {"type": "redacted_thinking", "data": item.block.data}
    if isinstance(item, PlanCall):
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
    for segment in plan(messages, assistant, keep_thinking=True, sources=sources):
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


def _openai_tool_content(result: PlanResult) -> str:
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

    for segment in plan(messages, assistant, keep_thinking=False, sources=sources):
        if segment.role == "assistant":
            texts = [item.text for item in segment.items if isinstance(item, PlanText)]
            calls = [item.block for item in segment.items if isinstance(item, PlanCall)]
            message: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) if texts else None}
            if calls:
                message["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": compact_json(call.input)},
                    }
                    for call in calls
                ]
            out.append(message)
            continue

        parts: list[dict[str, Any]] = []
        has_image = False
        for item in segment.items:
            if isinstance(item, PlanResult):
                out.append({"role": "tool", "tool_call_id": item.tool_use_id, "content": _openai_tool_content(item)})
            elif isinstance(item, PlanText):
                parts.append({"type": "text", "text": item.text})
            elif isinstance(item, PlanImage):
                has_image = True
                parts.append({"type": "image_url", "image_url": {"url": openai_image_url(item.block)}})
        if not parts:
            continue
        if has_image:
            out.append({"role": "user", "content": parts})
        else:
            out.append({"role": "user", "content": "\n\n".join(p["text"] for p in parts)})
    return out
