"""``ScriptedAgentModel``: an offline model for the OpenAI Agents SDK, for examples and tests.

It implements the SDK's ``Model`` interface (``get_response`` and ``stream_response``) with no
network: each turn answers with the next scripted reply, or, when the script is used up, with
what ``default`` makes of the turn's input. It records every input it was given.

Replies are given one by one, as ``asides.testing.ScriptedModel`` takes its answers:
``ScriptedAgentModel("I booked the room.")`` answers that sentence. A reply is a text or a
list of one turn's output items. What could be read two ways is refused
(:class:`~asides.ArgumentTypeError` naming the place): a lone list of texts (the script of older
versions, or one turn of several messages?), and a ``str`` where an iterable of replies was meant
(``replies="..."`` would be one reply per character).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
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

from ...store._errors import ArgumentTypeError

__all__ = ["Reply", "ScriptedAgentModel"]

Reply = str | list[Any]
"""A scripted reply: a text, or the output items of the turn (see :meth:`ScriptedAgentModel.call`)."""

_ids = itertools.count(1)


def _check_reply(reply: object, path: str) -> Reply:
    """``reply`` when it is one: a text, or a list of output items (each a text or an SDK output
    item, never a list or a dict); :class:`ArgumentTypeError` at ``path`` otherwise."""
    if isinstance(reply, str):
        return reply
    if not isinstance(reply, list):
        raise ArgumentTypeError(path, f"a reply is a text or a list of one turn's output items, not {type(reply).__name__}")
    if not reply:
        raise ArgumentTypeError(path, "a list reply is one turn's output items, and a turn needs at least one")
    for n, item in enumerate(reply):
        if isinstance(item, (list, tuple, Mapping, bytes)):
            raise ArgumentTypeError(
                f"{path}[{n}]",
                f"an output item is a text or an SDK output item (ScriptedAgentModel.call(...), .message(...)), "
                f"not {type(item).__name__}; give the replies one by one: ScriptedAgentModel(*replies)",
            )
    return reply


def _script(answers: tuple[object, ...], iterable: Iterable[object] | None) -> list[Reply]:
    """The replies of a new model, checked (see the module docstring)."""
    if iterable is not None:
        if answers:
            raise ArgumentTypeError("replies", "give the replies one by one or as replies=[...], not both")
        if isinstance(iterable, (str, bytes)) or not isinstance(iterable, Iterable):
            raise ArgumentTypeError(
                "replies",
                f"replies= is an iterable of replies, not {type(iterable).__name__}: a text would be one reply a "
                "character; for one reply write ScriptedAgentModel(text)",
            )
        return [_check_reply(r, f"replies[{n}]") for n, r in enumerate(iterable)]
    if len(answers) == 1 and isinstance(answers[0], list) and all(isinstance(r, (str, list)) for r in answers[0]):
        raise ArgumentTypeError(
            "replies",
            "a lone list of texts (or an empty one) could be the replies, as older versions read it, or one turn: "
            "give the replies one by one, ScriptedAgentModel('a', 'b'), or as replies=['a', 'b']; for one turn of "
            "several messages, use ScriptedAgentModel.message(text) for each",
        )
    return [_check_reply(r, f"replies[{n}]") for n, r in enumerate(answers)]


def _input_list(value: str | list[TResponseInputItem]) -> list[TResponseInputItem]:
    return [{"role": "user", "content": value}] if isinstance(value, str) else list(value)


class ScriptedAgentModel(Model):
    """A model that says what it is scripted to say.

    ``ScriptedAgentModel("Booked.", "Done.")`` answers its replies (``*answers``) in order, one per turn; after
    them, ``default(input_items)`` answers (without one, the model says ``"(no more scripted
    replies)"``). A reply is a text, or a list of one turn's output items: texts, :meth:`call`
    results (a function call the SDK will run) and :meth:`message` results, for example
    ``ScriptedAgentModel([ScriptedAgentModel.call("trains", {"origin": "Lisbon"})], "Three trains.")``.
    ``replies=`` takes the replies as one iterable instead (a list built elsewhere).
    ``inputs`` holds the input items of every turn, oldest first.

    Refused, with :class:`~asides.ArgumentTypeError` naming the place: what is not a reply; a
    lone list of texts (two replies, or one turn of two messages?); a ``str`` given as
    ``replies=``; replies given both ways; a ``default`` that is not callable.
    """

    def __init__(
        self,
        *answers: Reply,
        replies: Iterable[Reply] | None = None,
        default: Callable[[list[TResponseInputItem]], Reply] | None = None,
    ) -> None:
        if default is not None and not callable(default):
            raise ArgumentTypeError("default", f"default is a function of the turn's input items, not {type(default).__name__}")
        self._replies = _script(answers, replies)
        self._default = default
        self.inputs: list[list[TResponseInputItem]] = []

    def add_reply(self, reply: Reply) -> None:
        """Script one more reply, after the others."""
        self._replies.append(_check_reply(reply, "reply"))

    @property
    def remaining(self) -> int:
        """How many scripted replies no turn has taken yet."""
        return len(self._replies)

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
            reply = _check_reply(self._default(items), "default(input_items)")
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
