"""``ScriptedAdkModel``: an offline ADK model for examples and tests.

A ``BaseLlm`` that answers from a script, with no network: each reply is a string (text), an
ADK ``Part`` or a list of them (``ScriptedAdkModel.call(...)`` makes a function call), or what
``answer(llm_request)`` returns when it is given. ``requests`` holds every request it received, in
order, as the model received it (after every plugin and callback).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import Field

__all__ = ["ScriptedAdkModel"]

Reply = str | types.Part | Sequence[types.Part]


class ScriptedAdkModel(BaseLlm):
    """An ADK model answering from ``replies`` in order (the last one again once they run out),
    or from ``answer(llm_request)`` when given."""

    model: str = "asides-scripted"
    replies: list[Any] = Field(default_factory=list)
    answer: Callable[[LlmRequest], Any] | None = None
    requests: list[LlmRequest] = Field(default_factory=list)
    turns: int = 0

    def __init__(self, *replies: Reply, answer: Callable[[LlmRequest], Reply] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.replies = list(replies)
        self.answer = answer

    @staticmethod
    def call(name: str, args: dict[str, Any] | None = None, *, call_id: str | None = None) -> types.Part:
        """A function call part, for a reply."""
        return types.Part(function_call=types.FunctionCall(id=call_id or f"call-{uuid.uuid4().hex[:12]}", name=name, args=args or {}))

    def _reply(self, request: LlmRequest) -> Reply:
        if self.answer is not None:
            answered: Reply = self.answer(request)
            return answered
        if not self.replies:
            return "OK."
        reply = self.replies[min(self.turns, len(self.replies) - 1)]
        self.turns += 1
        return reply  # type: ignore[no-any-return]

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request.model_copy(deep=True))
        reply = self._reply(llm_request)
        if isinstance(reply, str):
            parts = [types.Part(text=reply)]
        elif isinstance(reply, types.Part):
            parts = [reply]
        else:
            parts = list(reply)
        yield LlmResponse(content=types.Content(role="model", parts=parts))
