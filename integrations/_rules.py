"""The rules every integration keeps, in one place: the LangChain middleware, the Pydantic AI
history and the OpenAI Agents session all decide these here, and a new integration uses them
from its first day (``tests/integrations/test_integration_contract.py`` holds every integration to them).

* **Reader names** (:func:`agent_reader`): an agent's reader is a reader's name, and never one
  named like a role every agent shares (``user``, ``system``, ``developer``, ``assistant``, in
  any case): its lines would pass for the user's, or for an agent with no reader. Refused when the
  integration object is made, with :class:`ReservedReaderError`.
* **Tool calls** (:func:`tool_audience`): with ``private_tool_calls`` (``True`` everywhere by
  default) an agent's own tool calls and their results are written for its reader alone; its
  other lines are public. An agent with no reader has no one to keep them for: its calls are
  public.
* **What an agent gets back of its own lines** (:func:`saved_copy_stands`): an integration may
  keep a copy of what the framework said (the call as a call, the item exactly) in a message's
  metadata, and give it back in place of the message only while that copy still is the message
  as the agent's reader sees it now: its own line, seen whole, held whole by the compile, never
  edited. Otherwise the message is rendered from its content as the reader sees it now, so a
  host's edit (a redaction) wins over the copy; an erased message is in no compile at all.
* **Writing a batch** (:func:`write_batch`): every message of a batch is checked before any is
  written (a refusal writes nothing), then all are written, in order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..store._blocks import ContentBlock, ToolResultBlock, ToolUseBlock, content_for_reader
from ..store._errors import ArgumentTypeError, InvalidNameError
from ..store._messages import Message, check_message_items
from ..store._names import check_reader

__all__ = [
    "RESERVED_READERS",
    "ReservedReaderError",
    "agent_reader",
    "answered_calls",
    "body_of",
    "check_private_tool_calls",
    "edited_messages",
    "made_calls",
    "saved_copy_stands",
    "tool_audience",
    "wholly_visible",
    "write_batch",
]

RESERVED_READERS = frozenset({"user", "system", "developer", "assistant"})
"""Names no agent's reader may take, in any case: the roles every agent shares, and
``assistant``, the speaker of an agent with no reader."""


class ReservedReaderError(InvalidNameError):
    """An integration's reader named like a role every agent shares (``user``, ``system``,
    ``developer``, ``assistant``, in any case), whose lines would pass for shared lines or for a
    no-reader agent's own. ``path`` is ``reader``. Refused when the integration object is made:
    nothing was opened or written."""


def agent_reader(value: object) -> str:
    """An agent's reader: a reader's name (refused as any reader's name is), not named like a
    role every agent shares (:class:`ReservedReaderError`)."""
    reader = check_reader(value, "reader")
    if reader.casefold() in RESERVED_READERS:
        raise ReservedReaderError(
            "reader",
            f"{reader!r} is named like a role every agent shares ({', '.join(sorted(RESERVED_READERS))}, in any case): "
            "its lines would pass for shared lines or for another agent's own; name the agent instead (reader='ann')",
        )
    return reader


# -- tool calls -----------------------------------------------------------------------------------


def check_private_tool_calls(value: object) -> bool:
    """``private_tool_calls`` as given: ``True`` or ``False``, nothing else."""
    if not isinstance(value, bool):
        raise ArgumentTypeError("private_tool_calls", f"must be True or False, not {type(value).__name__}")
    return value


def made_calls(content: Sequence[ContentBlock]) -> set[str]:
    """The ids of the tool calls ``content`` makes."""
    return {b.id for b in content if isinstance(b, ToolUseBlock)}


def answered_calls(content: Sequence[ContentBlock]) -> set[str] | None:
    """The calls ``content`` answers when it holds tool results only, else ``None``."""
    if not content or not all(isinstance(b, ToolResultBlock) for b in content):
        return None
    return {b.tool_use_id for b in content if isinstance(b, ToolResultBlock)}


def tool_audience(content: Sequence[ContentBlock], *, reader: str | None, private_tool_calls: bool) -> tuple[str, ...] | None:
    """The audience the agent ``reader``'s own line ``content`` is written for: its reader alone
    for a line that makes tool calls or answers them, when tool calls are private and the agent
    has a reader; ``None`` (public) otherwise."""
    if not private_tool_calls or reader is None:
        return None
    if made_calls(content) or answered_calls(content) is not None:
        return (reader,)
    return None


# -- what an agent gets back of its own lines -----------------------------------------------------


def wholly_visible(message: Message, reader: str | None) -> bool:
    """Whether ``reader`` sees every block of ``message`` (so a copy of it reveals nothing hidden)."""
    return len(content_for_reader(message.content, reader)) == len(message.content)


def body_of(message: Message | None) -> str | None:
    """The body a shard belongs to (``None``: a message stored whole)."""
    body = message.metadata.get("body_id") if message is not None and message.metadata else None
    return body if isinstance(body, str) else None


class _Store(Protocol):
    @property
    def model(self) -> Any: ...

    def get_message(self, branch: str, message_id: str) -> Message | None: ...


def edited_messages(store: _Store, branch: str) -> Callable[[Message], bool]:
    """Whether a message of ``branch`` is no longer as it was written: it was edited, or it is a
    shard of a long message one of whose shards was (an edit that wrote the same content counts:
    the store keeps no older copy to compare with). Read when called: later edits are not seen."""
    ids = frozenset(store.model.edits_since(branch, 0))
    bodies = {body_of(store.get_message(branch, i)) for i in ids} - {None}

    def edited(message: Message) -> bool:
        return message.id in ids or body_of(message) in bodies

    return edited


def saved_copy_stands(message: Message, *, reader: str | None, complete: bool, edited: Callable[[Message], bool]) -> bool:
    """Whether a copy saved with ``message`` when it was written may stand for it in the compile
    of ``reader``: the reader sees every block of it, the compile holds it whole (``complete``),
    and it was never edited (``edited``, from :func:`edited_messages`). Whose line it is, is the
    caller's to ask."""
    return complete and wholly_visible(message, reader) and not edited(message)


# -- writing --------------------------------------------------------------------------------------


class _Prepared(Protocol):
    @property
    def participant(self) -> str: ...

    @property
    def content(self) -> tuple[ContentBlock, ...]: ...

    @property
    def metadata(self) -> dict[str, Any]: ...


class _Writer(Protocol):
    async def add_message(self, participant: str, content: Any, *, metadata: Any = None) -> Any: ...


async def write_batch(manager: _Writer, prepared: Sequence[_Prepared]) -> None:
    """Write ``prepared`` (each a participant, content and metadata) through ``manager``, in
    order, after checking every one: a refusal writes nothing."""
    check_message_items([(p.participant, p.content, p.metadata) for p in prepared])
    for message in prepared:
        await manager.add_message(message.participant, message.content, metadata=message.metadata)
