"""``AsidesMemoryService``: ADK's memory, answered from the shared log for the agent that asks."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from ...store._errors import ArgumentTypeError, AsidesError, InvalidArgumentError
from ._events import USER
from ._plugin import CURRENT_AGENT

if TYPE_CHECKING:
    from google.adk.sessions.session import Session

    from ._service import AsidesSessionService

__all__ = ["AsidesMemoryService", "UnknownAgentError"]


class UnknownAgentError(AsidesError, RuntimeError):
    """``search_memory`` was called where no agent is known to be asking: outside a model call
    or tool of an agent run with the service's plugin (``plugins=[service.plugin()]``)."""


class AsidesMemoryService(BaseMemoryService):
    """ADK's memory service over the log an :class:`~asides.integrations.adk.AsidesSessionService`
    keeps: ``search_memory`` answers from ``ContextManager.search`` (``docs/search.md``) for the
    agent that asks, over the user's sessions of the app, so it never returns a line that agent
    may not see. The agent is the one whose model call or tool runs in the calling task, as the
    service's plugin records it (``integrations/adk/_plugin.py``): ADK's ``load_memory`` tool and
    ``PreloadMemoryTool`` both search from there. Called anywhere else, it is refused
    (:class:`UnknownAgentError`). ``limit`` (1 to 1000) caps the memories one search returns.
    """

    def __init__(self, sessions: AsidesSessionService, *, limit: int = 10) -> None:
        from ._service import AsidesSessionService

        if not isinstance(sessions, AsidesSessionService):
            raise ArgumentTypeError("sessions", f"must be an AsidesSessionService, not {type(sessions).__name__}")
        if not isinstance(limit, int) or isinstance(limit, bool):
            raise ArgumentTypeError("limit", f"must be an int, not {type(limit).__name__}")
        if not 1 <= limit <= 1000:
            raise InvalidArgumentError("limit", f"must be 1 to 1000, not {limit}")
        self.sessions = sessions
        self.limit = limit

    async def add_session_to_memory(self, session: Session) -> None:
        """Nothing to do: the session's events are lines of the log already, and a search reads
        the log (and the agent's memories) as it is."""
        return None

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """What the asking agent may see that matches ``query`` in the user's sessions of the app:
        each hit a ``MemoryEntry`` with the line's text, its author, its id and time (ISO 8601),
        and ``custom_metadata`` naming its ``session_id``, ``kind`` and ``score``. Refused with
        :class:`UnknownAgentError` where no agent is known to ask."""
        agent = CURRENT_AGENT.get()
        if agent is None:
            raise UnknownAgentError(
                "search_memory: no agent is known to be asking; search from an agent's tool or model call, "
                "with the session service's plugin installed (plugins=[service.plugin()])"
            )
        hits = await self.sessions.search(app_name, user_id, agent, query, self.limit)
        memories: list[MemoryEntry] = []
        for session_id, hit in hits:
            role = "user" if hit.participant in (None, USER) or hit.participant != agent else "model"
            when = None if hit.timestamp is None else datetime.datetime.fromtimestamp(hit.timestamp, datetime.UTC).isoformat()
            metadata: dict[str, Any] = {"session_id": session_id, "kind": hit.kind, "score": hit.score}
            memories.append(
                MemoryEntry(
                    content=types.Content(role=role, parts=[types.Part(text=hit.text)]),
                    author=hit.participant if hit.participant is not None else agent,
                    id=hit.id,
                    timestamp=when,
                    custom_metadata=metadata,
                )
            )
        return SearchMemoryResponse(memories=memories)
