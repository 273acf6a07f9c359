"""What the LangChain and Pydantic AI integrations share: one way to turn a framework's messages
into asides messages, and a compile back into the neutral plan both render from.

**Into the log.** Each integration reads a framework message as a :class:`Said`: who says it
and its content blocks (the framework's own ids, when it has them, name it). One or more of them
become one asides message (:func:`prepare`):

* a line is said by its speaker: the agent's own answers, tool calls and tool results by the
  agent's reader; a user's input by ``user`` (or the name the framework gives it);
* a **private** message (an ``audience``) has every block carry that audience; blocks that may
  not carry one (tool calls and results, images, system changes) are written as their readable
  text, so every other reader's compiles, memories and views hold nothing of it. The original
  blocks are kept in the message's metadata (``<key>.parts``), one list per framework message, so
  the agent that wrote it gets its calls back as calls. An agent's tool call is written together
  with its results as one private message: no compression can put the call in a memory and leave
  its result outside, or the other way round;
* the metadata also names the framework's ids of the messages it holds (``<key>.ids``) and the
  reader that wrote it (``<key>.reader``): :class:`LoggedIds` knows from them which framework
  messages the log already holds.

**Out of a compile** (:func:`plan_for`): the compile's messages, in order, where each private
message of the agent's own that the compile holds raw and whole, that its reader sees whole and
that was never edited, is given back its original parts (``integrations/_rules.py``: a host's
redaction wins over the copy); then :func:`~strategies._provider_plan.plan`, the plan the Anthropic and OpenAI forms are
rendered from: the agent's own lines and its memories take the assistant role; every other
speaker's lines the user role, prefixed with the speaker's name; another speaker's tool calls
and results are text; each of the agent's calls is answered right after it (a stub when its
result is not in the compile; the agent's own results come back in the user role, so that what
it says after them is a turn of its own); thinking is left out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from ..store._blocks import (
    ContentBlock,
    RedactedThinkingBlock,
    SystemChangeBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    content_from_json,
    content_to_json,
)
from ..store._messages import Message
from ..strategies._base import CompiledMessage, SourceEntry
from ..strategies._provider_plan import IMAGE_TEXT, Segment, foreign_call_text, orphan_result_text, plan, system_change_text
from ._rules import answered_calls, made_calls, saved_copy_stands, tool_audience

if TYPE_CHECKING:
    from ..actors._runtime import Runtime

__all__ = ["Said", "Prepared", "LoggedIds", "batches", "hub", "prepare", "plan_for", "private_blocks"]


@attrs.frozen(slots=True)
class Said:
    """One framework message read for the log: its framework id (``None`` when it has none), who
    says it, and its blocks."""

    id: str | None
    participant: str
    content: tuple[ContentBlock, ...]


@attrs.frozen(slots=True)
class Prepared:
    """An asides message ready to be added: participant, content and metadata."""

    participant: str
    content: tuple[ContentBlock, ...]
    metadata: dict[str, Any]


def private_blocks(blocks: Sequence[ContentBlock], participant: str, audience: tuple[str, ...]) -> list[ContentBlock]:
    """``blocks`` for ``audience`` only: as themselves where an audience may stand, else as text."""
    out: list[ContentBlock] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            out.append(TextBlock(block.text, audience))
        elif isinstance(block, ThinkingBlock):
            out.append(ThinkingBlock(block.thinking, block.signature, audience))
        elif isinstance(block, RedactedThinkingBlock):
            out.append(RedactedThinkingBlock(block.data, audience))
        elif isinstance(block, ToolUseBlock):
            out.append(TextBlock(foreign_call_text(participant, block), audience))
        elif isinstance(block, ToolResultBlock):
            out.append(TextBlock(orphan_result_text(block), audience))
        elif isinstance(block, SystemChangeBlock):
            out.append(TextBlock(system_change_text(block), audience))
        else:
            out.append(TextBlock(IMAGE_TEXT, audience))
    return out


def prepare(said: Sequence[Said], *, key: str, reader: str, audience: tuple[str, ...] | None) -> Prepared:
    """One asides message holding ``said`` (one or more messages of one speaker: the first's
    participant speaks), public or for ``audience`` only (see the module docstring)."""
    participant = said[0].participant
    content = [b for s in said for b in s.content]
    record: dict[str, Any] = {"ids": [s.id for s in said if s.id is not None], "reader": reader}
    if audience is not None:
        record["parts"] = [content_to_json(s.content) for s in said]
        content = private_blocks(content, participant, audience)
    return Prepared(participant, tuple(content), {key: record})


def _record(message: Message, key: str) -> dict[str, Any] | None:
    record = message.metadata.get(key) if message.metadata else None
    return dict(record) if isinstance(record, Mapping) else None


def logged_ids(message: Message, key: str) -> list[str]:
    """The framework ids of the messages ``message`` holds (``[]`` for a host's own line)."""
    record = _record(message, key)
    ids = record.get("ids") if record else None
    return [i for i in ids if isinstance(i, str)] if isinstance(ids, (list, tuple)) else []


class LoggedIds:
    """Which framework messages one branch of the log holds, by framework id; read from the
    store as it grows (messages other runtimes and processes wrote count too). ``lock`` is held
    by every integration object of the runtime that writes to the branch, so that a message two
    agents both hold is written once."""

    def __init__(self, key: str, branch: str) -> None:
        self.key = key
        self.branch = branch
        self.lock = anyio.Lock()
        self._ids: set[str] = set()
        self._read = 0

    def refresh(self, store: Any) -> None:
        length = store.length(self.branch)
        if length > self._read:
            for message in store.messages(self.branch, self._read, length):
                self._ids.update(logged_ids(message, self.key))
            self._read = length

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._ids


class LoggedIdsByBranch:
    """A runtime's :class:`LoggedIds`, one per integration key and branch; the runtime keeps one
    (``Runtime.attachment``)."""

    def __init__(self) -> None:
        self._tables: dict[tuple[str, str], LoggedIds] = {}

    def of(self, key: str, branch: str) -> LoggedIds:
        found = self._tables.get((key, branch))
        if found is None:
            found = self._tables[key, branch] = LoggedIds(key, branch)
        return found


def hub(runtime: Runtime, key: str, branch: str) -> LoggedIds:
    """The runtime's :class:`LoggedIds` of ``branch`` for the integration ``key``."""
    return runtime.attachment(LoggedIdsByBranch).of(key, branch)


def _own_parts(
    message: Message, key: str, reader: str, *, complete: bool, edited: Callable[[Message], bool]
) -> list[tuple[ContentBlock, ...]] | None:
    """The original parts of a private message ``reader`` wrote, while they still stand for it
    (:func:`~._rules.saved_copy_stands`), else ``None``."""
    record = _record(message, key)
    if record is None or record.get("reader") != reader or not isinstance(record.get("parts"), (list, tuple)):
        return None
    if message.participant != reader or not saved_copy_stands(message, reader=reader, complete=complete, edited=edited):
        return None
    try:
        return [content_from_json(list(part)) for part in record["parts"]]
    except Exception:  # a record this version cannot read: the message compiles as its text
        return None


def plan_for(
    ctx: Any, *, key: str, reader: str, stored: Callable[[str], Message | None], edited: Callable[[Message], bool]
) -> list[Segment]:
    """The plan of the compile ``ctx`` for the agent ``reader`` (see the module docstring);
    ``stored`` looks a message of the branch up by id, ``edited`` says whether one was edited
    since it was written (:func:`~._rules.edited_messages`)."""
    messages: list[CompiledMessage] = []
    sources: list[SourceEntry] = []
    for message, source in zip(ctx.messages, ctx.provenance.entries, strict=True):
        parts = None
        if source.kind == "raw" and len(source.message_ids) == 1:
            found = stored(source.message_ids[0])
            if found is not None:
                complete = bool(ctx.provenance.complete.get(found.id, False))
                parts = _own_parts(found, key, reader, complete=complete, edited=edited)
        for part in [message.content] if parts is None else parts:
            messages.append(_for_plan(CompiledMessage(message.participant, part), reader))
            sources.append(source)
    return plan(messages, reader, keep_thinking=False, sources=sources)


TOOL = "tool"
"""The participant the agent's own tool results take in its plan: results come back to the agent
(the user role, after the call), and its next words start a turn of their own."""


def _for_plan(message: CompiledMessage, reader: str) -> CompiledMessage:
    if message.participant == reader and message.content and all(isinstance(b, ToolResultBlock) for b in message.content):
        return CompiledMessage(TOOL, message.content)
    return message


def _answers(said: Sequence[Said], start: int, calls: set[str]) -> int:
    """Where the run of results from ``start`` on that answer ``calls`` ends."""
    n = start
    while n < len(said):
        answered = answered_calls(said[n].content)
        if answered is None or not answered <= calls:
            break
        n += 1
    return n


def batches(said: Sequence[Said], *, reader: str, private_tool_calls: bool) -> list[tuple[list[Said], tuple[str, ...] | None]]:
    """``said`` (in order) as the asides messages to write, each with its audience. Each of the
    agent's messages that makes calls is followed by the results right after it that answer
    them: when its tool calls are private (:func:`~._rules.tool_audience`) the call and its
    results are one message for ``reader`` only (and so is a result whose call was written
    before); otherwise the call is one public message and its results one more, right after it
    (a strategy keeps a call and the message just after it that answers it together).
    Everything else is one public message each."""
    out: list[tuple[list[Said], tuple[str, ...] | None]] = []
    n = 0
    while n < len(said):
        one = said[n]
        n += 1
        own = one.participant == reader
        audience = tool_audience(one.content, reader=reader, private_tool_calls=private_tool_calls) if own else None
        calls = made_calls(one.content) if own else set()
        if calls:
            end = _answers(said, n, calls)
            results, n = list(said[n:end]), end
            if audience is not None:
                out.append(([one, *results], audience))
            else:
                out.append(([one], None))
                if results:
                    out.append((results, None))
        else:
            out.append(([one], audience))
    return out
