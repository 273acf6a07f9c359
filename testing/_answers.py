"""What the test doubles share: the forms an answer may take, and the record of requests.

An *answer* is a ``str`` (a finished answer with that text), a :class:`Completion` (returned as
it is, for a ``max_tokens`` stop or a tool use), or an exception (raised, for a model that
fails at that point; an exception class is instantiated first).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TypeAlias

import anyio
import anyio.lowlevel

from ..store._blocks import TextBlock
from ..store._words import counted
from ..strategies._models import Completion, CompletionRequest, Usage
from ..strategies._tokens import estimate_text
from ._errors import AnswerTypeError, HarnessError

__all__ = ["Answer", "Respond", "RequestLog", "completion_of", "check_answer", "describe_request", "respond_with"]

#: One answer: text, a whole completion, or an exception to raise.
Answer: TypeAlias = str | Completion | BaseException | type[BaseException]
#: A function of the request giving an answer, plain or awaitable.
Respond: TypeAlias = Callable[[CompletionRequest], Answer | Awaitable[Answer]]


def check_answer(answer: object, where: str) -> Answer:
    """``answer`` if it is one of the forms an answer takes; :class:`AnswerTypeError` (a
    ``HarnessError``) naming ``where`` otherwise. A list, tuple or other iterable is refused with
    a hint: answers go one by one (``*answers``), never as one iterable."""
    if isinstance(answer, str | Completion | BaseException):
        return answer
    if isinstance(answer, type) and issubclass(answer, BaseException):
        return answer
    problem = f"an answer is a str, a Completion or an exception, not {type(answer).__name__}"
    if isinstance(answer, Iterable) and not isinstance(answer, bytes | Mapping):
        problem += "; give the answers one by one: ScriptedModel('a', 'b'), or ScriptedModel(*answers) for a list"
    raise AnswerTypeError(where, problem)


def completion_of(answer: Answer, request: CompletionRequest) -> Completion:
    """The completion ``answer`` stands for (raising it, if it is an exception)."""
    if isinstance(answer, type):
        raise answer()
    if isinstance(answer, BaseException):
        raise answer
    if isinstance(answer, Completion):
        return answer
    asked = sum(estimate_text(_plain(m.content)) for m in request.messages) + estimate_text(request.system or "")
    return Completion("end_turn", (TextBlock(answer),), Usage(input_tokens=asked, output_tokens=estimate_text(answer)))


async def respond_with(respond: Respond, request: CompletionRequest, where: str) -> Answer:
    """Call ``respond`` on ``request`` (awaiting it if it returned an awaitable) and check what
    it gave."""
    answer = respond(request)
    if inspect.isawaitable(answer):
        answer = await answer
    return check_answer(answer, where)


def _plain(content: object) -> str:
    blocks = content if isinstance(content, tuple) else ()
    return "\n".join(b.text for b in blocks if isinstance(b, TextBlock))


def describe_request(request: CompletionRequest) -> str:
    """One line about a request, for error messages: how many messages, the system text's
    start, and the last message's participant and start."""
    parts = [counted(len(request.messages), "message")]
    if request.system:
        parts.append(f"system {_clip(request.system)!r}")
    if request.messages:
        last = request.messages[-1]
        parts.append(f"last from {last.participant!r}: {_clip(_plain(last.content))!r}")
    return ", ".join(parts)


def _clip(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class RequestLog:
    """Every request a test double received, in order, and a way to wait for the n-th.

    ``requests`` is the record (a list: index 0 is request #1). :meth:`wait_for_requests` waits
    until at least ``count`` requests arrived, without polling or sleeping, so it works the same
    on a real clock and on a Trio ``MockClock``.
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise HarnessError(f"a test model's name is a non-empty string, not {name!r}")
        self.name = name
        #: Every request received, oldest first.
        self.requests: list[CompletionRequest] = []
        self._waiters: list[tuple[int, anyio.Event]] = []

    def _record(self, request: CompletionRequest) -> int:
        """Record ``request``; its number (1 for the first)."""
        self.requests.append(request)
        count = len(self.requests)
        for wanted, event in list(self._waiters):
            if count >= wanted:
                event.set()
                self._waiters.remove((wanted, event))
        return count

    async def wait_for_requests(self, count: int = 1) -> CompletionRequest:
        """Wait until at least ``count`` requests have arrived; the ``count``-th request."""
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise HarnessError(f"wait_for_requests: count is an int of at least 1, not {count!r}")
        if len(self.requests) < count:
            waiter = (count, anyio.Event())
            self._waiters.append(waiter)
            try:
                await waiter[1].wait()
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        else:
            await anyio.lowlevel.checkpoint()
        return self.requests[count - 1]
