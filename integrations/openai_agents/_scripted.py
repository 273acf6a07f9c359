"""``ScriptedAgentModel``: an offline model for the OpenAI Agents SDK, for examples and tests.

It implements the SDK's ``Model`` interface (``get_response`` and ``stream_response``) with no
network: each turn answers with the next scripted reply, or, when the script is used up, with
what ``default`` makes of the turn's input. It records every input it was given.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from agents.items import ModelResponse, TResponseInputItem, TResponseOutputItem, TResponseStreamEvent
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

__all__ = ["Reply", "ScriptedAgentModel"]

Reply = str | list[Any]
"""A scripted reply: a text, or the output items of the turn (see :meth:`ScriptedAgentModel.call`)."""

_ids = itertools.count(1)


def _input_list(value: str | list[TResponseInputItem]) -> list[TResponseInputItem]:
    return [{"role": "user", "content": value}] if isinstance(value, str) else list(value)


class ScriptedAgentModel(Model):
    """A model that says what it is scripted to say.

    ``replies`` are answered in order, one per turn; after them, ``default(input_items)`` answers
    (without one, the model says ``"(no more scripted replies)"``). A reply is a text, or a list
    of output items: texts and :meth:`call` results (a function call the SDK will run).
    ``inputs`` holds the input items of every turn, oldest first.
    """

    def __init__(self, replies: Iterable[Reply] = (), *, default: Callable[[list[TResponseInputItem]], Reply] | None = None) -> None:
        self._replies = list(replies)
        self._default = default
        self.inputs: list[list[TResponseInputItem]] = []

    def add_reply(self, reply: Reply) -> None:
        """Script one more reply, after the others."""
        self._replies.append(reply)

    @staticmethod
    def call(name: str, arguments: dict[str, Any], call_id: str | None = None) -> ResponseFunctionToolCall:
        """An output item that calls the function tool ``name`` with ``arguments``."""
        number = next(_ids)
        return ResponseFunctionToolCall(
            type="function_call",
            id=f"fc_{number}",
            call_id=call_id or f"call_{number}",
            name=name,
            arguments=json.dumps(arguments),
            status="completed",
        )

    @staticmethod
    def message(text: str) -> ResponseOutputMessage:
        """An output item: an assistant message saying ``text``."""
        return ResponseOutputMessage(
            id=f"msg_{next(_ids)}",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=[], logprobs=[])],
        )

    def _turn(self, input: str | list[TResponseInputItem]) -> list[TResponseOutputItem]:  # noqa: A002
        items = _input_list(input)
        self.inputs.append(items)
        if self._replies:
            reply = self._replies.pop(0)
        elif self._default is not None:
            reply = self._default(items)
        else:
            reply = "(no more scripted replies)"
        if isinstance(reply, str):
            return [self.message(reply)]
        return [self.message(r) if isinstance(r, str) else r for r in reply]

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],  # noqa: A002
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
    ) -> ModelResponse:
        return ModelResponse(output=self._turn(input), usage=Usage(), response_id=None)

    async def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],  # noqa: A002
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        response = Response(
            id=f"resp_{next(_ids)}",
            created_at=0,
            model="scripted",
            object="response",
            output=self._turn(input),
            tool_choice="auto",
            tools=[],
            parallel_tool_calls=False,
        )
        yield ResponseCreatedEvent(type="response.created", response=response, sequence_number=0)
        yield ResponseCompletedEvent(type="response.completed", response=response, sequence_number=1)
