"""``ScriptedModel``, a model that answers from a script, and ``RecordingModel``, which records
what another model is asked."""

from __future__ import annotations

from collections import deque

import anyio.lowlevel

from ..strategies._models import Completion, CompletionRequest, Model
from ._answers import Answer, RequestLog, Respond, check_answer, completion_of, describe_request, respond_with
from ._errors import HarnessError, ScriptExhaustedError

__all__ = ["ScriptedModel", "RecordingModel"]


class ScriptedModel(RequestLog):
    """A model that answers from a queue, or from a function of the request, and records every
    request it receives.

    ``ScriptedModel("first summary", "second summary")`` answers the first two requests with
    those texts. An answer may also be a :class:`~asides.Completion` (for a ``max_tokens`` stop,
    say) or an exception, which that request raises. Answers go one by one
    (``ScriptedModel(*answers)`` for a list); a list, or any other value that is no answer, is
    refused with :class:`AnswerTypeError` naming it. ``respond=`` answers every request the
    queue does not: a function of the :class:`~asides.CompletionRequest` returning an answer (or
    an awaitable of one), for example ``respond=lambda request: "SUMMARY"``, or
    ``respond=ExtractiveModel().complete`` to answer from the request's own lines.

    When neither the queue nor ``respond`` has an answer, the request raises
    :class:`ScriptExhaustedError` naming it (its number, message count, system text and last
    message). The runtime treats that as a model failure and retries, so a test that scripted
    too few answers may not see the error where it happened: :meth:`check` raises it again
    afterwards, and the pytest plugin's ``scripted_model`` factory calls :meth:`check` for
    every model it made when the test ends.

    Each call yields to the scheduler once before answering, as a network call would.
    """

    def __init__(self, *answers: Answer, respond: Respond | None = None, name: str = "scripted") -> None:
        super().__init__(name)
        if respond is not None and not callable(respond):
            raise HarnessError(f"ScriptedModel {name!r}: respond is a function of the request, not {respond!r}")
        self._queue: deque[Answer] = deque(check_answer(a, f"ScriptedModel {name!r}, answer {i + 1}") for i, a in enumerate(answers))
        self._respond = respond
        self._dry: ScriptExhaustedError | None = None

    def add(self, *answers: Answer) -> None:
        """Queue more answers, after those still waiting."""
        checked = [check_answer(a, f"ScriptedModel {self.name!r}.add, answer {i + 1}") for i, a in enumerate(answers)]
        self._queue.extend(checked)

    @property
    def remaining(self) -> int:
        """How many queued answers no request has taken yet."""
        return len(self._queue)

    @property
    def ran_dry(self) -> ScriptExhaustedError | None:
        """The error of the first request that found no answer, or ``None``."""
        return self._dry

    def check(self) -> None:
        """Raise the first :class:`ScriptExhaustedError` this model raised, if any; a test calls
        it after the work it scripted, to fail where a background request found the queue empty."""
        if self._dry is not None:
            raise self._dry

    async def complete(self, request: CompletionRequest) -> Completion:
        """The next queued answer, else ``respond(request)``, else :class:`ScriptExhaustedError`."""
        number = self._record(request)
        answer: Answer | None = self._queue.popleft() if self._queue else None
        if answer is None and self._respond is None:
            error = ScriptExhaustedError(self.name, number, request, describe_request(request))
            if self._dry is None:
                self._dry = error
            answer = error
        await anyio.lowlevel.checkpoint()
        if answer is None and self._respond is not None:
            answer = await respond_with(self._respond, request, f"ScriptedModel {self.name!r}: respond")
        assert answer is not None
        return completion_of(answer, request)

    def __repr__(self) -> str:
        return f"ScriptedModel({self.name!r}, {len(self.requests)} request(s), {len(self._queue)} answer(s) queued)"


class RecordingModel(RequestLog):
    """Another model, with a record of every request sent to it (``requests``), so that
    :class:`~asides.testing.LeakCheck` can search what a real or offline model was asked:
    ``RecordingModel(AnthropicModel())``."""

    def __init__(self, model: Model, *, name: str = "recording") -> None:
        super().__init__(name)
        if not callable(getattr(model, "complete", None)):
            raise HarnessError(f"RecordingModel {name!r}: needs a model with an async complete(request), not {model!r}")
        self.model = model

    async def complete(self, request: CompletionRequest) -> Completion:
        """Record ``request``, then return what the wrapped model answers (or raise what it raises)."""
        self._record(request)
        return await self.model.complete(request)

    def __repr__(self) -> str:
        return f"RecordingModel({self.model!r}, {len(self.requests)} request(s))"
