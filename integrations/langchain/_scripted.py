"""``ScriptedChatModel``: an offline LangChain chat model for examples and tests.

LangChain's own ``GenericFakeChatModel`` answered from a script, made to take tools
(``bind_tools`` returns the model itself, as a fake has no schema to send) and to record every
request: ``requests`` holds the messages of each call, in order, as the model received them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import Field

__all__ = ["ScriptedChatModel"]


class ScriptedChatModel(GenericFakeChatModel):
    """A ``GenericFakeChatModel`` with tools and a record of its requests. ``messages`` is the
    script (an iterator of ``AIMessage`` s or strings); ``answer``, when given, is called with
    each request's messages instead and returns the reply."""

    messages: Iterator[AIMessage | str] = Field(default_factory=lambda: iter(()))
    answer: Callable[[list[BaseMessage]], AIMessage | str] | None = None
    requests: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.requests.append(list(messages))
        if self.answer is not None:
            reply = self.answer(list(messages))
            self.messages = iter([reply])
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
