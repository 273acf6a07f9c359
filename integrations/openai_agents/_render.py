"""A compile as Responses input items: what ``get_items`` returns.

Walking the compile in order:

* a raw message that holds a session item is returned as **that item, exactly**, when it is the
  agent's own (its participant is the agent's, and the item was added by a session of the
  agent's reader) or a shared line (``user``, ``system``, ``developer``, holding a message item
  of that role), and the item still stands for the message (``integrations/_rules.py``,
  ``saved_copy_stands``): the reader sees all of it, the compile holds all of it (not truncated,
  not repaired), and **it was never edited**: the item is a copy of the content as added, so
  once an edit changed the content (a shard's, for a long message stored as shards) the message
  is rendered from what the reader may see now, like any other. A tool output is returned as
  itself only right after the call it answers was given (a private call a memory holds leaves
  its output as text). A long message stored as shards gives its item once;
* a **memory** (the recall marker and the memory text, ``summary`` sources) is one
  ``{"role": "assistant", "content": ...}`` message: the agent remembers in its own voice;
* anything else (another agent's lines, a host's messages, a part of a message, a repair) is
  rendered from the compiled blocks by the rules of the provider request forms: another speaker's
  text is a user message prefixed with its name, its tool calls and results are text; the agent's
  own calls are ``function_call`` items, and a result answering a call already given (a repair's
  stub included) is its ``function_call_output``. Thinking is left out.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ...actors._compiled import CompiledContext
from ...store._blocks import ImageBlock, SystemChangeBlock, TextBlock, ToolResultBlock, ToolUseBlock
from ...store._messages import Message
from ...strategies._base import CompiledMessage, SourceEntry
from ...strategies._provider_forms import (
    IMAGE_TEXT,
    NO_OUTPUT,
    Role,
    foreign_call_text,
    openai_image_url,
    orphan_result_text,
    result_text,
    role_of,
    system_change_text,
    takes_prefix,
)
from .._rules import saved_copy_stands
from ._items import SessionRecord, session_record, shared_role

__all__ = ["compile_items", "current_item", "returned_as_is"]

Item = dict[str, Any]


def returned_as_is(message: Message, record: SessionRecord, item: Any, *, speaker: str, reader: str | None) -> bool:
    """Whether ``message``'s session item (``record``, parsed as ``item``) is one the agent
    ``speaker`` compiling for ``reader`` may get back exactly: a shared line, or the agent's own
    (added by a session of its reader), stored as a session stores that item. Whether the item
    still stands for the message (seen whole, held whole, never edited) is the caller's to ask."""
    if not isinstance(item, dict):
        return False
    role = shared_role(item)
    if role is not None:  # a shared line: stored as said by its role
        return message.participant == role
    # the agent's own: stored as said by the agent, by a session of its reader
    return message.participant == speaker and record.reader == reader


class _Calls:
    """The calls given so far that no output has answered yet, by call id."""

    def __init__(self) -> None:
        self.given: set[str] = set()
        self.open: set[str] = set()

    def answers_open(self, item: Item) -> bool:
        """Whether ``item`` is no output, or the output of a call given and not yet answered."""
        kind, call_id = item.get("type"), item.get("call_id")
        return not (isinstance(kind, str) and kind.endswith("_output")) or call_id in self.open

    def note(self, item: Item) -> None:
        """Take ``item`` into account: an item with a call id is a call (a function call, a
        custom tool's, a computer call...) or, when its type ends ``_output``, its output."""
        call_id, kind = item.get("call_id"), item.get("type")
        if not isinstance(call_id, str) or not isinstance(kind, str):
            return
        if kind.endswith("_output"):
            self.open.discard(call_id)
        else:
            self.given.add(call_id)
            self.open.add(call_id)


def _render(message: CompiledMessage, source: SourceEntry, speaker: str, calls: _Calls) -> list[Item]:
    """A compiled message that is not returned as an item, as items (see the module docstring)."""
    role = role_of(message.participant, source, speaker)
    out: list[Item] = []
    pieces: list[tuple[str | ImageBlock, bool]] = []  # (text or image, the text names its speaker)

    def flush() -> None:
        if pieces:
            out.append(_message(role, message.participant, pieces))
            pieces.clear()

    for block in message.content:
        if isinstance(block, TextBlock):
            if block.text:
                pieces.append((block.text, False))
        elif isinstance(block, SystemChangeBlock):
            pieces.append((system_change_text(block), False))
        elif isinstance(block, ImageBlock):
            pieces.append((block if role == "user" else IMAGE_TEXT, False))
        elif isinstance(block, ToolUseBlock):
            if role == "assistant" and block.id not in calls.given:
                flush()
                item = {"type": "function_call", "call_id": block.id, "name": block.name, "arguments": _compact(block.input)}
                calls.note(item)
                out.append(item)
            else:
                pieces.append((foreign_call_text(message.participant, block), True))
        elif isinstance(block, ToolResultBlock):
            if block.tool_use_id in calls.open:
                flush()
                body = result_text(block.content) or NO_OUTPUT
                output = f"[tool error] {body}" if block.is_error else body
                item = {"type": "function_call_output", "call_id": block.tool_use_id, "output": output}
                calls.note(item)
                out.append(item)
            else:
                pieces.append((orphan_result_text(block), False))
        # thinking and redacted thinking are left out
    flush()
    return out


def _message(role: Role, participant: str, pieces: list[tuple[str | ImageBlock, bool]]) -> Item:
    """One message item: the first text that does not name its speaker takes the speaker's name
    (user role, not ``user``); with an image, the content is a list of parts."""
    prefix = takes_prefix(participant, role)
    parts: list[Item] = []
    for piece, names_speaker in pieces:
        if isinstance(piece, ImageBlock):
            parts.append({"type": "input_image", "image_url": openai_image_url(piece), "detail": "auto"})
            continue
        if prefix and not names_speaker:
            piece = f"{participant}: {piece}"
            prefix = False
        parts.append({"type": "input_text", "text": piece})
    if any(p["type"] == "input_image" for p in parts):
        return {"role": role, "content": parts}
    return {"role": role, "content": "\n\n".join(p["text"] for p in parts)}


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def current_item(message: CompiledMessage, speaker: str) -> Item:
    """One item for a message as it reads now (its reader's view of its content): what
    ``pop_item`` returns for an edited item. Calls and results are rendered as text, so it is
    always one message item."""
    calls = _Calls()
    for block in message.content:
        if isinstance(block, ToolUseBlock):
            calls.given.add(block.id)
    items = _render(message, SourceEntry("raw"), speaker, calls)  # one message at most: no call is open
    return items[0] if items else {"role": role_of(message.participant, None, speaker), "content": ""}


def compile_items(
    ctx: CompiledContext,
    *,
    speaker: str,
    reader: str | None,
    stored: Callable[[str], Message | None],
    edited: Callable[[Message], bool],
) -> list[Item]:
    """The items of ``ctx`` for the agent ``speaker`` compiling for ``reader``, oldest first.
    ``stored`` looks up a message of the branch by id; ``edited`` says whether a stored
    message's content is no longer the one its item was saved with."""
    out: list[Item] = []
    calls = _Calls()
    given_bodies: set[str] = set()
    memory: tuple[str | None, list[str]] | None = None

    def end_memory() -> None:
        nonlocal memory
        if memory is not None and memory[1]:
            out.append({"role": "assistant", "content": "\n\n".join(memory[1])})
        memory = None

    for message, source in zip(ctx.messages, ctx.provenance.entries, strict=True):
        if source.kind == "summary":
            if memory is None or memory[0] != source.summary_id:
                end_memory()
                memory = (source.summary_id, [])
            memory[1].extend(b.text for b in message.content if isinstance(b, TextBlock) and b.text)
            continue
        end_memory()
        if source.kind == "raw" and len(source.message_ids) == 1:
            message_id = source.message_ids[0]
            found = stored(message_id)
            record = session_record(found) if found is not None else None
            if (
                found is not None
                and record is not None
                and record.item_json is not None
                and saved_copy_stands(found, reader=reader, complete=ctx.provenance.complete.get(message_id, False), edited=edited)
            ):
                item = record.item()
                if returned_as_is(found, record, item, speaker=speaker, reader=reader) and calls.answers_open(item):
                    body = found.metadata.get("body_id")
                    if isinstance(body, str):
                        if body in given_bodies:
                            continue  # a later shard of an item already given
                        given_bodies.add(body)
                    calls.note(item)
                    out.append(item)
                    continue
        out.extend(_render(message, source, speaker, calls))
    end_memory()
    return out
