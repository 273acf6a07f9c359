"""``GatedModel``: a model that holds each request until the test lets it through."""

from __future__ import annotations

from collections import deque

import anyio
import anyio.lowlevel
import attrs

from ..strategies._models import Completion, CompletionRequest, ExtractiveModel, Model
from ._answers import Answer, RequestLog, check_answer, completion_of
from ._errors import HarnessError, NothingHeldError

__all__ = ["GatedModel"]


@attrs.define(eq=False)
class _Held:
    request: CompletionRequest
    released: anyio.Event
    answer: Answer | None = None


class GatedModel(RequestLog):
    """A model that holds each request until the test releases it, so that a test decides what
    happens while a request is out: another reader claims the namespace, the manager moves or
    closes, a message is edited. The answer then arrives *after* that, on purpose.

    ``await model.wait_for_request()`` waits until a request is held and returns it;
    :meth:`release` lets the oldest held request through (with the wrapped model's answer, or
    with the ``answer`` given), :meth:`release_all` lets every held one through, and
    :meth:`open` stops holding altogether (:meth:`hold` starts again). ``requests`` records every
    request received, ``held`` those waiting now, and ``abandoned`` those whose caller gave up
    while they were held (a drain stopped by a claim, a move or a close, or the runtime's request
    timeout).

    With ``shield=True`` a held request outlives its caller's cancellation: it waits for its
    release all the same and then answers, as a provider call that does not stop when cancelled.
    That is how a test makes an answer arrive *after* the runtime gave up on it (a claim by
    another reader stops the drain that asked), to see it thrown away.

    Answers come from ``model``: by default an :class:`~asides.ExtractiveModel`, which writes its
    summary from the request's own lines, so whatever a request carried shows in what it wrote.

    On a Trio ``MockClock`` with autojump, time jumps whenever every task waits, so a request held
    while the test waits for something else meets the runtime's request timeout at once. Hold
    requests on the real clock, or on a ``MockClock`` without autojump.
    """

    def __init__(self, model: Model | None = None, *, shield: bool = False, name: str = "gated") -> None:
        super().__init__(name)
        #: Whether a held request outlives its caller's cancellation (see the class docstring).
        self.shield = bool(shield)
        if model is not None and not callable(getattr(model, "complete", None)):
            raise HarnessError(f"GatedModel {name!r}: needs a model with an async complete(request), not {model!r}")
        self.model: Model = model if model is not None else ExtractiveModel(name=name)
        self._held: deque[_Held] = deque()
        self._open = False
        #: Requests whose caller stopped waiting while they were held.
        self.abandoned: list[CompletionRequest] = []

    @property
    def held(self) -> tuple[CompletionRequest, ...]:
        """The requests held now, oldest first."""
        return tuple(entry.request for entry in self._held)

    @property
    def is_open(self) -> bool:
        """Whether requests pass without being held (after :meth:`open`)."""
        return self._open

    async def wait_for_request(self, count: int = 1) -> CompletionRequest:
        """Wait until at least ``count`` requests are held now; the oldest held."""
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise HarnessError(f"wait_for_request: count is an int of at least 1, not {count!r}")
        if len(self._held) >= count:
            await anyio.lowlevel.checkpoint()
        while len(self._held) < count:
            await self.wait_for_requests(len(self.requests) + 1)
        return self._held[0].request

    def release(self, answer: Answer | None = None) -> CompletionRequest:
        """Let the oldest held request through and return it: it gets ``answer`` if one is given
        (text, a Completion or an exception to raise), else what the wrapped model answers.
        ``NothingHeldError`` when no request is held."""
        if not self._held:
            raise NothingHeldError(f"GatedModel {self.name!r}: release() with no request held; await wait_for_request() first")
        entry = self._held.popleft()
        if answer is not None:
            entry.answer = check_answer(answer, f"GatedModel {self.name!r}.release")
        entry.released.set()
        return entry.request

    def release_all(self) -> int:
        """Let every held request through (each with the wrapped model's answer); how many."""
        count = len(self._held)
        while self._held:
            self._held.popleft().released.set()
        return count

    def open(self) -> None:
        """Release every held request and let later ones through without holding them."""
        self._open = True
        self.release_all()

    def hold(self) -> None:
        """Hold requests again (after :meth:`open`)."""
        self._open = False

    async def complete(self, request: CompletionRequest) -> Completion:
        """Record ``request``, hold it until released, then answer it."""
        entry = _Held(request, anyio.Event())
        if self._open:
            entry.released.set()
        else:
            self._held.append(entry)
        self._record(request)
        if self.shield:
            with anyio.CancelScope(shield=True):
                await entry.released.wait()
                return await self._answer(entry, request)
        try:
            await entry.released.wait()
        except BaseException:
            if entry in self._held:
                self._held.remove(entry)
            self.abandoned.append(request)
            raise
        return await self._answer(entry, request)

    async def _answer(self, entry: _Held, request: CompletionRequest) -> Completion:
        if entry.answer is not None:
            return completion_of(entry.answer, request)
        return await self.model.complete(request)

    def __repr__(self) -> str:
        return f"GatedModel({self.name!r}, {len(self.requests)} request(s), {len(self._held)} held)"
