"""Pydantic AI messages into asides blocks, and a compile's plan back into Pydantic AI messages.

Into the log (:func:`said_of`), one Pydantic AI message may give several lines:

* a ``ModelRequest``: its ``UserPromptPart`` s are said by ``user`` (text, images by URL or inline
  data, anything else as ``[<kind>]``); its ``ToolReturnPart`` s, and its ``RetryPromptPart`` s
  that answer a tool call (as error results), are the agent's own (its reader): the results of its
  calls. ``SystemPromptPart`` s are never written (the agent's system prompt stays its own), nor
  is a retry prompt that answers no call (the framework asking its model again);
* a ``ModelResponse`` is the agent's own: its text, then each tool call. Thinking is not written;
  any other part (a built-in tool's call, a file) is the text ``[<part kind>]``.

Out of a plan (:func:`messages_of`): an assistant segment is one ``ModelResponse`` (``TextPart``
s and ``ToolCallPart`` s); a user segment one ``ModelRequest``: a ``ToolReturnPart`` per result
(first, in call order; an error result's content starts ``[tool error]``), then one
``UserPromptPart`` holding the rest, each line naming its speaker.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from pydantic_ai.messages import (
    BinaryContent,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from ...store._blocks import ContentBlock, ImageBlock, TextBlock, ToolResultBlock, ToolUseBlock
from ...store._blocks.codec import image_from_url
from ...strategies._provider_plan import NO_OUTPUT, PlanCall, PlanImage, PlanResult, PlanText, Segment, compact_json, result_text
from .._shared import Said

__all__ = ["said_of", "messages_of", "system_parts"]


def system_parts(message: ModelMessage) -> list[SystemPromptPart]:
    """The system prompt parts of a message (kept for the agent, never written)."""
    if not isinstance(message, ModelRequest):
        return []
    return [p for p in message.parts if isinstance(p, SystemPromptPart)]


def _user_blocks(content: Any) -> list[ContentBlock]:
    items = [content] if isinstance(content, str) else list(content)
    out: list[ContentBlock] = []
    for item in items:
        if isinstance(item, str):
            if item:
                out.append(TextBlock(item))
        elif isinstance(item, ImageUrl):
            out.append(image_from_url(item.url))
        elif isinstance(item, BinaryContent) and item.is_image:
            out.append(ImageBlock(item.media_type, data=base64.b64encode(item.data).decode("ascii")))
        else:
            out.append(TextBlock(f"[{getattr(item, 'kind', type(item).__name__)}]"))
    return out


def _return_content(content: Any) -> str:
    return content if isinstance(content, str) else compact_json(_jsonable(content))


def _jsonable(value: Any) -> Any:
    try:
        from pydantic_core import to_jsonable_python

        return to_jsonable_python(value)
    except Exception:
        return repr(value)


def said_of(message: ModelMessage, message_id: str, reader: str) -> list[Said]:
    """The lines ``message`` gives in the log (see the module docstring), named
    ``<message_id>/<n>``."""
    lines: list[Said] = []
    if isinstance(message, ModelRequest):
        for n, part in enumerate(message.parts):
            part_id = f"{message_id}/{n}"
            if isinstance(part, UserPromptPart):
                blocks = _user_blocks(part.content)
                lines.append(Said(part_id, "user", tuple(blocks or [TextBlock("")])))
            elif isinstance(part, ToolReturnPart):
                lines.append(Said(part_id, reader, (ToolResultBlock(part.tool_call_id, _return_content(part.content)),)))
            elif isinstance(part, RetryPromptPart) and part.tool_name is not None:
                lines.append(Said(part_id, reader, (ToolResultBlock(part.tool_call_id, part.model_response(), True),)))
        return _merged(lines)
    said: list[ContentBlock] = []
    for answer in message.parts:
        if isinstance(answer, TextPart):
            if answer.content:
                said.append(TextBlock(answer.content))
        elif isinstance(answer, ToolCallPart):
            said.append(ToolUseBlock(answer.tool_call_id, answer.tool_name, answer.args_as_dict()))
        elif isinstance(answer, ThinkingPart):
            continue
        else:
            said.append(TextBlock(f"[{getattr(answer, 'part_kind', type(answer).__name__)}]"))
    return [Said(f"{message_id}/0", reader, tuple(said or [TextBlock("")]))]


def _merged(lines: list[Said]) -> list[Said]:
    """Consecutive results of one request as one line (the results of one turn of calls)."""
    out: list[Said] = []
    for line in lines:
        results = all(isinstance(b, ToolResultBlock) for b in line.content)
        if out and results and all(isinstance(b, ToolResultBlock) for b in out[-1].content):
            out[-1] = Said(out[-1].id, out[-1].participant, out[-1].content + line.content)
        else:
            out.append(line)
    return out


def _decoded(block: ImageBlock) -> Any:
    if block.url is not None:
        return ImageUrl(url=block.url)
    try:
        return BinaryContent(data=base64.b64decode(block.data or ""), media_type=block.media_type)
    except (binascii.Error, ValueError):
        return "[image]"


def messages_of(segments: list[Segment]) -> list[ModelMessage]:
    """The Pydantic AI messages of a plan (see the module docstring)."""
    out: list[ModelMessage] = []
    names: dict[str, str] = {}
    for segment in segments:
        if segment.role == "assistant":
            parts: list[Any] = []
            for item in segment.items:
                if isinstance(item, PlanText):
                    parts.append(TextPart(content=item.text))
                elif isinstance(item, PlanCall):
                    names[item.block.id] = item.block.name
                    parts.append(ToolCallPart(tool_name=item.block.name, args=dict(item.block.input), tool_call_id=item.block.id))
            if parts:
                out.append(ModelResponse(parts=parts))
            continue
        request: list[Any] = []
        user: list[Any] = []
        for item in segment.items:
            if isinstance(item, PlanResult):
                body = result_text(item.content) or NO_OUTPUT
                content = f"[tool error] {body}" if item.is_error else body
                request.append(
                    ToolReturnPart(tool_name=names.get(item.tool_use_id, "tool"), content=content, tool_call_id=item.tool_use_id)
                )
            elif isinstance(item, PlanText):
                user.append(item.text)
            elif isinstance(item, PlanImage):
                user.append(_decoded(item.block))
        if user:
            if all(isinstance(u, str) for u in user):
                request.append(UserPromptPart(content="\n\n".join(user)))
            else:
                request.append(UserPromptPart(content=user))
        if request:
            out.append(ModelRequest(parts=request))
    return out
