"""Responses input items in: who says each one, the content blocks asides compiles from, and the
item itself kept exactly.

An item the SDK hands a session is stored as one asides message:

* its **participant**: ``user``, ``system`` or ``developer`` for a message item of that role
  (lines everyone in the conversation hears as they are); everything else (the agent's messages,
  its tool calls and their outputs, reasoning, and any item type asides does not know) is the
  agent's own: its reader's name, or ``assistant`` for a session with no reader;
* its **content blocks**, what compiles, memories and other agents read: text, images, tool calls
  and results as blocks; reasoning, and items with no readable form, as an unsigned thinking block
  naming the item type, which no provider form and no compression request shows;
* the **item itself**, as JSON text in the message's metadata (``openai_agents.item``), with the
  reader of the session that added it (``openai_agents.reader``). ``get_items`` returns this text
  parsed, so an item comes back exactly as it was added, for as long as the message is never
  edited: the text is a copy of the content as added, and an edit (a host's) changes the content
  only, so an edited message is rendered from its content instead (see ``_render``).

A private item (``add_items(items, audience=[...])``, and, with ``private_tool_calls``, every
tool call and tool output the agent adds: ``integrations/_rules.py``) has every block carry that
audience; blocks that may not carry one (tool calls and results, images, system changes) are
written as their readable text instead, so the whole message is hidden from every other reader.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ...store._blocks import (
    ContentBlock,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ...store._blocks.codec import image_from_url
from ...store._errors import MalformedContentError
from ...store._messages import Message
from ...store._stored_json import holds_duplicate, read_stored_json
from ...strategies._provider_forms import IMAGE_TEXT
from .._rules import tool_audience
from .._shared import Prepared as PreparedItem
from .._shared import private_blocks

__all__ = [
    "METADATA_KEY",
    "SHARED_PARTICIPANTS",
    "PreparedItem",
    "SessionRecord",
    "prepare_item",
    "prepare_items",
    "session_record",
    "shared_role",
    "speaker_of",
]

METADATA_KEY = "openai_agents"
"""The metadata key under which a stored item and the reader that added it are kept."""

SHARED_PARTICIPANTS = frozenset({"user", "system", "developer"})
"""The participants whose items every agent of a conversation gets as they are."""

_MESSAGE_ROLES = ("user", "assistant", "system", "developer")


def speaker_of(reader: str | None) -> str:
    """The participant an agent's own items are stored as: its reader, else ``assistant``."""
    return reader if reader is not None else "assistant"


@attrs.frozen(slots=True)
class SessionRecord:
    """What a stored message says about the session item it holds."""

    #: ``None`` once the message was edited: the store drops the saved copy with the edit
    #: (``store._messages.CONTENT_COPIES``), and the item is then rendered from the content.
    item_json: str | None
    reader: str | None

    def item(self) -> Any:
        """A fresh copy of the item, exactly as it was added (only for a message never edited)."""
        if self.item_json is None:
            raise ValueError("the saved item went with an edit; render the message from its content")
        return json.loads(self.item_json)


def session_record(message: Message) -> SessionRecord | None:
    """The session item ``message`` holds, or ``None`` (a message a host wrote directly)."""
    record = message.metadata.get(METADATA_KEY) if message.metadata else None
    if not isinstance(record, Mapping):
        return None
    item_json, reader = record.get("item"), record.get("reader")
    if not (item_json is None or isinstance(item_json, str)) or not (reader is None or isinstance(reader, str)):
        return None
    if item_json is None:  # an edit dropped the saved copy: who added it stays known
        return SessionRecord(None, reader)
    try:  # stored JSON, read the one way stored JSON is read: a key given twice is no item
        parsed = read_stored_json(item_json)
    except ValueError:
        return None
    if not isinstance(parsed, dict) or holds_duplicate(parsed):
        return None
    return SessionRecord(item_json, reader)


# -- content blocks of an item ----------------------------------------------------------------


def _part_blocks(part: Any) -> list[ContentBlock]:
    """A message content part (or a tool output part) as blocks."""
    if isinstance(part, str):
        return [TextBlock(part)]
    if not isinstance(part, Mapping):
        return [TextBlock(f"[{type(part).__name__}]")]
    kind = part.get("type")
    if kind in ("input_text", "output_text", "text") and isinstance(part.get("text"), str):
        return [TextBlock(part["text"])]
    if kind == "refusal" and isinstance(part.get("refusal"), str):
        return [TextBlock(part["refusal"])]
    if kind == "input_image":
        url = part.get("image_url")
        return [image_from_url(url)] if isinstance(url, str) and url else [TextBlock(IMAGE_TEXT)]
    if kind == "input_file":
        name = part.get("filename")
        return [TextBlock(f"[file {name}]" if isinstance(name, str) and name else "[file]")]
    return [TextBlock(f"[{kind}]" if isinstance(kind, str) else "[part]")]


def _content_blocks(content: Any) -> list[ContentBlock]:
    if isinstance(content, list):
        blocks = [b for part in content for b in _part_blocks(part)]
        return blocks or [TextBlock("")]
    return _part_blocks(content if content is not None else "")


def _arguments(raw: Any) -> dict[str, Any]:
    """A call's arguments as a JSON object: parsed when they are one, else kept under ``arguments``."""
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    return {"arguments": raw}


def _output(raw: Any) -> str | tuple[ContentBlock, ...]:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        nested = [b for part in raw for b in _part_blocks(part) if isinstance(b, (TextBlock, ImageBlock))]
        return tuple(nested)
    return json.dumps(raw, ensure_ascii=False, sort_keys=True)


def _nonempty(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def item_blocks(item: Mapping[str, Any]) -> list[ContentBlock]:
    """The content blocks an item compiles as (see the module docstring)."""
    kind = item.get("type")
    if kind in (None, "message") and item.get("role") in _MESSAGE_ROLES:
        return _content_blocks(item.get("content"))
    call_id = _nonempty(item.get("call_id"))
    if kind in ("function_call", "custom_tool_call") and call_id and _nonempty(item.get("name")):
        tool_input = _arguments(item.get("arguments")) if kind == "function_call" else {"input": item.get("input")}
        return [ToolUseBlock(call_id, item["name"], tool_input)]
    if kind in ("function_call_output", "custom_tool_call_output") and call_id:
        return [ToolResultBlock(call_id, _output(item.get("output")))]
    if kind == "reasoning":
        summary = item.get("summary")
        parts = [p.get("text") for p in summary if isinstance(p, Mapping)] if isinstance(summary, list) else []
        return [ThinkingBlock("\n".join(p for p in parts if isinstance(p, str)) or "[reasoning]")]
    if isinstance(kind, str) and call_id:
        if kind.endswith("_output"):
            return [ToolResultBlock(call_id, f"[{kind}]")]
        return [ToolUseBlock(call_id, kind, {})]
    return [ThinkingBlock(f"[{kind}]" if isinstance(kind, str) else "[item]")]


def shared_role(item: Mapping[str, Any]) -> str | None:
    """The role of a shared message item (``user``, ``system``, ``developer``), else ``None``."""
    role = item.get("role")
    if item.get("type") in (None, "message") and role in SHARED_PARTICIPANTS:
        return str(role)
    return None


def participant_of(item: Mapping[str, Any], speaker: str) -> str:
    """Who says ``item``: the role of a shared message item, else the agent (``speaker``)."""
    return shared_role(item) or speaker


def prepare_item(
    item: object, index: int, *, speaker: str, reader: str | None, audience: tuple[str, ...] | None, private_tool_calls: bool
) -> PreparedItem:
    """The message that stores ``item`` (the ``index``-th of a batch): for ``audience`` only when
    one is given, else for the agent's reader alone when it is a tool call or output of the
    agent's own and ``private_tool_calls`` holds (:func:`~.._rules.tool_audience`). Refuses,
    with :class:`MalformedContentError` at ``items[<index>]``, an item that is not a JSON object
    or holds what JSON cannot (NaN, a lone surrogate, a key that is not a string)."""
    path = f"items[{index}]"
    if not isinstance(item, Mapping):
        raise MalformedContentError(path, f"an item must be a JSON object (a dict), not {type(item).__name__}")
    try:
        item_json = json.dumps(item, ensure_ascii=False, allow_nan=False)
        item_json.encode("utf-8")
        same = json.loads(item_json) == item
    except (TypeError, ValueError) as exc:
        raise MalformedContentError(path, f"an item must be JSON that can be stored: {exc}") from None
    if not same:
        raise MalformedContentError(path, "an item must come back from JSON as it went in: use lists, and string keys")
    participant = participant_of(item, speaker)
    try:
        blocks = item_blocks(item)
        if audience is None and participant == speaker:
            audience = tool_audience(blocks, reader=reader, private_tool_calls=private_tool_calls)
        if audience is not None:
            blocks = private_blocks(blocks, participant, audience)
    except MalformedContentError as exc:
        raise MalformedContentError(f"{path}.{exc.path}", exc.problem) from None
    return PreparedItem(participant, tuple(blocks), {METADATA_KEY: {"item": item_json, "reader": reader}})


def prepare_items(
    items: Sequence[object], *, speaker: str, reader: str | None, audience: tuple[str, ...] | None, private_tool_calls: bool
) -> list[PreparedItem]:
    """Every item of a batch prepared (see :func:`prepare_item`), or the first refusal (nothing
    prepared is kept)."""
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
        raise MalformedContentError("items", f"items must be a list of items, not {type(items).__name__}")
    return [
        prepare_item(item, n, speaker=speaker, reader=reader, audience=audience, private_tool_calls=private_tool_calls)
        for n, item in enumerate(items)
    ]
