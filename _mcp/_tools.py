"""The tools of ``asides mcp``: ``search``, ``recall``, ``remember`` and ``memories``, bound to one
manager and so to one reader.

Every tool answers for the manager's reader and no one else: none takes a reader, a namespace
or a participant, so no call can ask for another reader's view. Each returns a text block for a
model to read and structured content that its output schema describes. A call that cannot be
answered (arguments that break the input schema, a blank query or line, a refusal of the
library) is answered as a tool error (``isError``, the reason in its text) and the server goes
on answering.
"""

from __future__ import annotations

import heapq
from typing import Annotated, Any, NoReturn

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from .._inspection._preview import compile_as_text
from .._version import __version__
from ..actors._manager import ContextManager
from ..store._blocks import text as text_block
from ..store._errors import AsidesError
from ..store._words import counted

__all__ = [
    "MAX_MEMORIES_LIMIT",
    "MAX_SEARCH_LIMIT",
    "Memories",
    "Memory",
    "Recall",
    "Remembered",
    "SearchHit",
    "SearchResults",
    "TOOL_NAMES",
    "make_server",
]

#: The most hits one ``search`` answers.
MAX_SEARCH_LIMIT = 100
#: The most memories one ``memories`` call returns.
MAX_MEMORIES_LIMIT = 1000
#: The tools every server offers, in the order it lists them.
TOOL_NAMES = ("search", "recall", "remember", "memories")

#: A tool that reads and writes nothing a reader sees (a compile may record what it showed).
_READS = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


class SearchHit(BaseModel):
    """One match of ``search``: a message or a memory, as the reader sees it."""

    kind: str = Field(description='"message" or "memory"')
    id: str = Field(description="the message's id, or the memory's (summary) id")
    text: str = Field(description="what the reader sees of the match")
    score: float = Field(description="how well it matches; higher first")
    sequence: int = Field(description="its place in the log")
    participant: str | None = Field(description="who wrote the message (none for a memory)")
    timestamp: float | None = Field(description="when it was written, in seconds since the epoch")


class SearchResults(BaseModel):
    """What ``search`` answers."""

    query: str
    hits: list[SearchHit] = Field(description="the matches, best first")


class Recall(BaseModel):
    """What ``recall`` answers: the reader's compiled context."""

    reader: str
    namespace: str
    text: str = Field(description="the context as text: each message under a '── participant ──' rule")
    messages: int = Field(description="how many messages the context holds")
    token_estimate: int = Field(description="its size in tokens, as estimated")


class Remembered(BaseModel):
    """What ``remember`` answers: the line written."""

    id: str = Field(description="the new message's id")
    sequence: int = Field(description="its place in the log")
    participant: str = Field(description="who wrote it: the server's reader")
    audience: list[str] | None = Field(description="the readers it is for; null when it is for everyone")


class Memory(BaseModel):
    """One of the reader's memories: a summary its namespace's strategy wrote."""

    id: str
    level: int = Field(description="1 summarises messages; k+1 merges level-k memories")
    text: str
    first_sequence: int = Field(description="the oldest message it covers")
    last_sequence: int = Field(description="the newest message it covers")


class Memories(BaseModel):
    """What ``memories`` answers."""

    memories: list[Memory] = Field(description="newest first (by the newest message each covers), at most the limit asked")
    count: int = Field(description="how many memories the namespace keeps")


def _refuse(reason: str) -> NoReturn:
    """Answer the call as a tool error saying ``reason``."""
    raise ToolError(reason)


def _answer(summary: str, value: BaseModel) -> CallToolResult:
    """A tool's answer: ``summary`` for a model to read, ``value`` as the structured content."""
    return CallToolResult(content=[TextContent(text=summary)], structured_content=value.model_dump(mode="json"))


def _hits_text(hits: list[SearchHit]) -> str:
    if not hits:
        return "No match."
    lines = [f"{counted(len(hits), 'match', 'matches')}, best first:"]
    for hit in hits:
        who = f" {hit.participant}" if hit.participant is not None else ""
        lines.append(f"- [{hit.kind} {hit.id}, #{hit.sequence}{who}, score {hit.score:.3g}] {hit.text}")
    return "\n".join(lines)


def make_server(manager: ContextManager) -> MCPServer[Any]:
    """An MCP server whose four tools answer for ``manager``'s reader, and for no one else.

    ``manager`` must have a reader (``view_reader``); a manager without one is refused with
    ``ValueError``. The server does not own the manager: whoever made it closes it after the
    server stops. Every tool turns an ``AsidesError`` into a tool error with its message.
    """
    reader = manager.view_reader
    if reader is None:
        raise ValueError("an MCP server answers for one reader: open the manager with view_reader")
    namespace = manager.namespace
    server: MCPServer[Any] = MCPServer(
        "asides",
        title="asides",
        description=f"The shared log of asides, as reader {reader!r} sees it (namespace {namespace!r}).",
        instructions=(
            f"You are reader {reader!r} of a message log shared with other agents. 'recall' gives your context now, "
            "'search' finds lines and memories you may see, 'remember' writes a line (for you alone unless "
            "private is false), 'memories' lists the summaries your namespace keeps. No tool shows another "
            "reader's private lines."
        ),
        version=__version__,
        log_level="WARNING",
        subscriptions=False,
    )

    @server.tool(
        title="Search the log",
        description=(
            f"Find the messages and memories that reader {reader!r} may see and that match the query, best first. "
            "Never returns another reader's private lines."
        ),
        annotations=_READS,
    )
    async def search(
        query: Annotated[str, Field(min_length=1, strict=True, description="what to look for (not blank)")],
        limit: Annotated[
            int, Field(ge=1, le=MAX_SEARCH_LIMIT, strict=True, description=f"the most hits to return (1 to {MAX_SEARCH_LIMIT})")
        ] = 10,
    ) -> Annotated[CallToolResult, SearchResults]:
        if not query.strip():
            _refuse("query is blank: give words to look for")
        found = await _library(manager.search(query, limit=limit))
        hits = [
            SearchHit(
                kind=hit.kind,
                id=hit.id,
                text=hit.text,
                score=hit.score,
                sequence=hit.sequence,
                participant=hit.participant,
                timestamp=hit.timestamp,
            )
            for hit in found
        ]
        return _answer(_hits_text(hits), SearchResults(query=query, hits=hits))

    @server.tool(
        title="Recall the context",
        description=(
            f"The context of reader {reader!r} now, compiled as the agent would be sent it, as text, within "
            "max_tokens tokens. Holds only what this reader may see."
        ),
        annotations=_READS,
    )
    async def recall(
        max_tokens: Annotated[int, Field(gt=0, strict=True, description="the most tokens the context may take (a positive int)")],
    ) -> Annotated[CallToolResult, Recall]:
        compiled = await _library(manager.compile(max_tokens=max_tokens, reserve_for_response=0))
        header = f"# {namespace}, for reader {reader!r}: {counted(len(compiled.messages), 'message')}, ~{compiled.token_estimate} tokens"
        rendered = compile_as_text(compiled, header)
        value = Recall(
            reader=reader, namespace=namespace, text=rendered, messages=len(compiled.messages), token_estimate=compiled.token_estimate
        )
        return _answer(rendered, value)

    @server.tool(
        title="Remember a line",
        description=(
            f"Write a line to the shared log as {reader!r}. With private (the default) it is for reader {reader!r} "
            "alone; with private false every reader of the log may see it. Answers the new message's id."
        ),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False),
    )
    async def remember(
        text: Annotated[str, Field(min_length=1, strict=True, description="the line to write (not blank)")],
        private: Annotated[bool, Field(strict=True, description="for this reader alone (true, the default) or for everyone")] = True,
    ) -> Annotated[CallToolResult, Remembered]:
        if not text.strip():
            _refuse("text is blank: give the line to remember")
        audience = [reader] if private else None
        message = await _library(manager.add_message(reader, [text_block(text, audience)]))
        value = Remembered(id=message.id, sequence=message.sequence, participant=reader, audience=audience)
        whom = f"for {reader!r} alone" if private else "for everyone"
        return _answer(f"Remembered as message {message.id} (#{message.sequence}), {whom}.", value)

    @server.tool(
        title="List the memories",
        description=(
            f"The memories of reader {reader!r}: the summaries its namespace's strategy wrote, newest first, at "
            "most limit of them, with how many there are. Empty for a strategy that writes none."
        ),
        annotations=_READS,
    )
    async def memories(
        limit: Annotated[
            int, Field(ge=1, le=MAX_MEMORIES_LIMIT, strict=True, description=f"the most memories to return (1 to {MAX_MEMORIES_LIMIT})")
        ] = 50,
    ) -> Annotated[CallToolResult, Memories]:
        try:
            found = manager.get_summaries_in_range()
        except AsidesError as exc:
            _refuse(str(exc))
        newest = heapq.nlargest(limit, found, key=lambda s: (s.last_sequence, s.first_sequence))
        listed = [
            Memory(id=s.id, level=s.level, text=s.text, first_sequence=s.first_sequence, last_sequence=s.last_sequence)
            for s in newest
        ]
        lines = [f"- [{m.id}, level {m.level}, #{m.first_sequence}-#{m.last_sequence}] {m.text}" for m in listed]
        if len(found) > len(listed):
            lines.insert(0, f"The newest {len(listed)} of {len(found)} memories:")
        summary = "\n".join(lines) if lines else "No memories."
        return _answer(summary, Memories(memories=listed, count=len(found)))

    return server


async def _library(call: Any) -> Any:
    """Await ``call``, a call of the library; an ``AsidesError`` it raises becomes a tool error
    with its message."""
    try:
        return await call
    except AsidesError as exc:
        _refuse(str(exc))
