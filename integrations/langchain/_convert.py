"""LangChain messages into asides blocks, and a compile's plan back into LangChain messages.

Into the log (:func:`said_of`):

* ``HumanMessage``: said by ``user``, or by its ``name`` when it has one (a supervisor handing a
  worker its task names itself);
* ``AIMessage``: the agent's own (its reader): its text, then each tool call as a tool call (an
  invalid tool call as text);
* ``ToolMessage``: the agent's own: the result of its call (``status="error"`` an error);
* ``SystemMessage``: never written (the agent's system prompt stays its own);
* any other message (``ChatMessage`` and the like): text, said by its ``role`` (else ``user``).

Content parts: text as text; ``image_url`` / ``image`` parts with a URL or inline base64 data as
images; anything else as the text ``[<type>]``.

Out of a plan (:func:`messages_of`): an assistant segment is one ``AIMessage`` (its texts joined
by a blank line; its calls as ``tool_calls``); a user segment is a ``ToolMessage`` per result
(first, in call order), then one ``HumanMessage`` for the rest: its texts, each naming its
speaker, joined by a blank line, or, with an image, a list of text and ``image_url`` parts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ...store._blocks import ContentBlock, ImageBlock, TextBlock, ToolResultBlock, ToolUseBlock
from ...store._blocks.codec import image_from_url
from ...store._names import name_problem
from ...strategies._provider_forms import openai_image_url
from ...strategies._provider_plan import NO_OUTPUT, PlanCall, PlanImage, PlanResult, PlanText, Segment, result_text
from .._shared import Said

__all__ = ["said_of", "messages_of", "is_system"]


def is_system(message: BaseMessage) -> bool:
    return isinstance(message, SystemMessage)


def _part(part: Any) -> ContentBlock:
    if isinstance(part, str):
        return TextBlock(part)
    if not isinstance(part, Mapping):
        return TextBlock(f"[{type(part).__name__}]")
    kind = part.get("type")
    if kind == "text" and isinstance(part.get("text"), str):
        return TextBlock(part["text"])
    if kind == "image_url":
        url = part.get("image_url")
        url = url.get("url") if isinstance(url, Mapping) else url
        if isinstance(url, str) and url:
            return image_from_url(url)
    if kind == "image":
        if isinstance(part.get("url"), str) and part["url"]:
            return image_from_url(part["url"])
        data = part.get("base64", part.get("data"))
        media = part.get("mime_type", part.get("media_type"))
        if isinstance(data, str) and data and isinstance(media, str) and media:
            return ImageBlock(media, data=data)
    return TextBlock(f"[{kind}]" if isinstance(kind, str) else "[part]")


def _content(content: Any) -> list[ContentBlock]:
    if isinstance(content, list):
        return [b for b in map(_part, content) if not (isinstance(b, TextBlock) and not b.text)]
    if isinstance(content, str):
        return [TextBlock(content)] if content else []
    return [_part(content)]


def _speaker(name: object, default: str) -> str:
    return name if isinstance(name, str) and name and name_problem(name) is None else default


def said_of(message: BaseMessage, reader: str) -> Said | None:
    """The message as said in the log (``None`` for a system message, which is never written)."""
    if isinstance(message, SystemMessage):
        return None
    message_id = message.id if isinstance(message.id, str) and message.id else None
    if isinstance(message, AIMessage):
        blocks = _content(message.content)
        for n, call in enumerate(message.tool_calls):
            call_id = call.get("id") or f"{message_id or 'call'}-{n}"
            blocks.append(ToolUseBlock(call_id, call["name"], dict(call.get("args") or {})))
        for bad in message.invalid_tool_calls:
            blocks.append(TextBlock(f"[invalid tool call {bad.get('name')} {bad.get('args')}]"))
        return Said(message_id, reader, tuple(blocks or [TextBlock("")]))
    if isinstance(message, ToolMessage):
        body = _content(message.content)
        inner: str | tuple[ContentBlock, ...] = (
            body[0].text if len(body) == 1 and isinstance(body[0], TextBlock) else tuple(body) if body else ""
        )
        result = ToolResultBlock(message.tool_call_id, inner, message.status == "error")
        return Said(message_id, reader, (result,))
    default = "user" if isinstance(message, HumanMessage) else str(getattr(message, "role", "user"))
    blocks = _content(message.content)
    return Said(message_id, _speaker(message.name, _speaker(default, "user")), tuple(blocks or [TextBlock("")]))


def messages_of(segments: list[Segment]) -> list[BaseMessage]:
    """The LangChain messages of a plan (see the module docstring)."""
    out: list[BaseMessage] = []
    for segment in segments:
        if segment.role == "assistant":
            texts = [i.text for i in segment.items if isinstance(i, PlanText)]
            calls = [
                {"name": i.block.name, "args": dict(i.block.input), "id": i.block.id, "type": "tool_call"}
                for i in segment.items
                if isinstance(i, PlanCall)
            ]
            out.append(AIMessage(content="\n\n".join(texts), tool_calls=calls))
            continue
        parts: list[str | dict[str, Any]] = []
        for item in segment.items:
            if isinstance(item, PlanResult):
                body = result_text(item.content) or NO_OUTPUT
                out.append(ToolMessage(content=body, tool_call_id=item.tool_use_id, status="error" if item.is_error else "success"))
            elif isinstance(item, PlanText):
                parts.append(item.text)
            elif isinstance(item, PlanImage):
                parts.append({"type": "image_url", "image_url": {"url": openai_image_url(item.block)}})
        if not parts:
            continue
        if any(isinstance(p, dict) for p in parts):
            out.append(HumanMessage(content=[{"type": "text", "text": p} if isinstance(p, str) else p for p in parts]))
        else:
            out.append(HumanMessage(content="\n\n".join(p for p in parts if isinstance(p, str))))
    return out
