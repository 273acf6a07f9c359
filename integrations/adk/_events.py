"""ADK events as lines of the shared log, and back.

**Into the log.** An event with content is read as a :class:`~.._shared.Said`: its author speaks
(``user`` for the user's input, an agent's name for its answers, tool calls and tool results), its
parts are content blocks (text as text, a thought as thinking, a function call as a tool call, a
function response as a tool result whose text is the response's ``result`` or its JSON, an image
as an image, anything else as a short text naming it). Written as one asides message (or, for a
tool call with its results, one message holding both events), whose metadata entry ``adk`` keeps
what ADK needs to rebuild every event it holds:

* ``ids``: the events' ids; ``reader``: the author; ``events``: each event as JSON without its
  content (id, invocation id, author, timestamp, actions, ...);
* ``contents``: each event's content as JSON, exactly; ``parts`` (a private message only): each
  event's blocks, so the agent that wrote it gets its calls back as calls
  (``integrations/_shared.py``). Both are copies of the content: an edit of the message drops
  them (``store._messages.CONTENT_COPIES``).

**Back.** :func:`events_of` rebuilds a message's events: exactly as appended while the message
was never edited; once edited, its first event carries the message's content as it reads now
(its other events are left out: an edit is one content for the whole message); a line a host
wrote itself is an event of its participant, with the message's id and time; an erased message
is none.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

from google.adk.events.event import Event
from google.genai import types

from ...store._blocks import (
    ContentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    SystemChangeBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    content_to_json,
)
from ...store._errors import ArgumentTypeError, InvalidArgumentError
from ...store._messages import Message
from ...store._names import check_reader
from ...strategies._provider_plan import compact_json, foreign_call_text, orphan_result_text, result_text, system_change_text
from .._shared import Said, private_blocks

__all__ = ["KEY", "USER", "audience_of", "blocks_of", "events_of", "metadata_for", "said_of", "shell_json"]

KEY = "adk"
"""The metadata key of the messages this integration writes, and its records' prefix."""
USER = "user"
"""The author ADK gives the user's input."""


def audience_of(event: Event, path: str = "event.custom_metadata") -> tuple[str, ...] | None:
    """The readers a host named for ``event`` (``custom_metadata={"audience": [...]}``), or
    ``None`` (public). Refuses an audience that is no non-empty list of readers' names."""
    meta = event.custom_metadata
    if not meta or "audience" not in meta:
        return None
    value = meta["audience"]
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ArgumentTypeError(f"{path}['audience']", f"must be a list of reader names, not {type(value).__name__}")
    if not value:
        raise InvalidArgumentError(f"{path}['audience']", "must name at least one reader: a line for no one would be seen by no one")
    return tuple(check_reader(name, f"{path}['audience'][{n}]") for n, name in enumerate(value))


def _response_text(response: Mapping[str, Any] | None) -> str:
    if not response:
        return ""
    if set(response) == {"result"} and isinstance(response["result"], str):
        return response["result"]
    try:
        return compact_json(response)
    except (TypeError, ValueError):
        return str(response)


def blocks_of(event: Event) -> tuple[ContentBlock, ...]:
    """The content blocks of ``event``'s parts (see the module docstring); ``()`` for an event
    with no content worth a line."""
    content = event.content
    if content is None or not content.parts:
        return ()
    out: list[ContentBlock] = []
    for n, part in enumerate(content.parts):
        if part.function_call is not None:
            call = part.function_call
            out.append(ToolUseBlock(call.id or f"{event.id}-{n}", call.name or "tool", dict(call.args or {})))
        elif part.function_response is not None:
            response = part.function_response
            out.append(ToolResultBlock(response.id or f"{event.id}-{n}", _response_text(response.response)))
        elif part.text is not None:
            if part.text:
                out.append(ThinkingBlock(part.text) if part.thought else TextBlock(part.text))
        elif part.inline_data is not None:
            blob = part.inline_data
            mime = blob.mime_type or "application/octet-stream"
            if mime.startswith("image/") and blob.data:
                out.append(ImageBlock(mime, data=base64.b64encode(blob.data).decode("ascii")))
            else:
                out.append(TextBlock(f"[{mime} attachment]"))
        elif part.file_data is not None:
            mime = part.file_data.mime_type or "file"
            uri = part.file_data.file_uri or ""
            if mime.startswith("image/") and uri.startswith(("http://", "https://")):
                out.append(ImageBlock(mime, url=uri))
            else:
                out.append(TextBlock(f"[{mime} {uri}]".replace(" ]", "]")))
        elif part.executable_code is not None:
            out.append(TextBlock(f"[code]\n{part.executable_code.code or ''}"))
        elif part.code_execution_result is not None:
            out.append(TextBlock(f"[code output]\n{part.code_execution_result.output or ''}"))
    return tuple(out)


def said_of(event: Event) -> Said | None:
    """``event`` read for the log, or ``None`` when it has no content worth a line."""
    blocks = blocks_of(event)
    if not blocks:
        return None
    return Said(event.id, event.author or USER, blocks)


def shell_json(event: Event) -> dict[str, Any]:
    """``event`` as JSON without its content: what ADK needs besides the content to rebuild it."""
    return event.model_dump(mode="json", exclude_none=True, exclude={"content"}, by_alias=False)


def content_json(event: Event) -> dict[str, Any] | None:
    return None if event.content is None else event.content.model_dump(mode="json", exclude_none=True)


def metadata_for(events: Sequence[Event], blocks: Sequence[tuple[ContentBlock, ...]], *, private: bool) -> dict[str, Any]:
    """The ``adk`` metadata entry of a message holding ``events`` (``blocks``: each one's)."""
    record: dict[str, Any] = {
        "ids": [e.id for e in events],
        "reader": events[0].author or USER,
        "events": [shell_json(e) for e in events],
        "contents": [content_json(e) for e in events],
    }
    if private:
        record["parts"] = [content_to_json(b) for b in blocks]
    return {KEY: record}


def private_content(blocks: Sequence[ContentBlock], participant: str, audience: tuple[str, ...]) -> list[ContentBlock]:
    """``blocks`` for ``audience`` only (see ``integrations/_shared.py``)."""
    return private_blocks(blocks, participant, audience)


# -- back -----------------------------------------------------------------------------------------


def _part_of(block: ContentBlock, participant: str) -> types.Part | None:
    if isinstance(block, TextBlock):
        return types.Part(text=block.text)
    if isinstance(block, ThinkingBlock):
        return types.Part(text=block.thinking, thought=True)
    if isinstance(block, RedactedThinkingBlock):
        return None
    if isinstance(block, ToolUseBlock):
        return types.Part(text=foreign_call_text(participant, block))
    if isinstance(block, ToolResultBlock):
        return types.Part(text=orphan_result_text(block))
    if isinstance(block, SystemChangeBlock):
        return types.Part(text=system_change_text(block))
    if isinstance(block, ImageBlock):
        if block.data is not None:
            return types.Part(inline_data=types.Blob(mime_type=block.media_type, data=base64.b64decode(block.data)))
        return types.Part(file_data=types.FileData(mime_type=block.media_type, file_uri=block.url))
    return None


def content_now(message: Message, role: str) -> types.Content | None:
    """``message``'s content as it reads now, as ADK content (calls and results as text)."""
    parts = [p for p in (_part_of(b, message.participant) for b in message.content) if p is not None]
    return types.Content(role=role, parts=parts) if parts else None


def _record(message: Message) -> Mapping[str, Any] | None:
    record = message.metadata.get(KEY) if message.metadata else None
    return record if isinstance(record, Mapping) else None


def events_of(message: Message) -> list[Event]:
    """The events ``message`` holds (see the module docstring)."""
    if not message.content:  # an erased message
        return []
    record = _record(message)
    shells = record.get("events") if record is not None else None
    if not isinstance(shells, (list, tuple)) or not shells:
        role = "user" if message.participant == USER else "model"
        return [Event(id=message.id, author=message.participant, timestamp=message.timestamp, content=content_now(message, role))]
    contents = record.get("contents") if record is not None else None
    try:
        if isinstance(contents, (list, tuple)) and len(contents) == len(shells):
            return [
                Event.model_validate({**dict(shell), **({"content": content} if content is not None else {})})
                for shell, content in zip(shells, contents, strict=True)
            ]
        first = Event.model_validate(dict(shells[0]))
    except (ValueError, TypeError):  # a record this version cannot read: the line as it reads now
        role = "user" if message.participant == USER else "model"
        return [Event(id=message.id, author=message.participant, timestamp=message.timestamp, content=content_now(message, role))]
    role = "user" if first.author == USER else "model"
    first.content = content_now(message, role)
    return [first]


def result_of(response: types.FunctionResponse) -> str:
    """A function response's text, as the log holds it."""
    return _response_text(response.response)


def plan_result_response(name: str, tool_use_id: str, content: Any) -> types.FunctionResponse:
    """A tool result of the agent's plan as ADK's function response to its call ``name``."""
    return types.FunctionResponse(id=tool_use_id, name=name, response={"result": result_text(content)})


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
