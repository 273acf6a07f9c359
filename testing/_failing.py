"""``FailingModel``: a model that fails on a schedule."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import anyio
import anyio.lowlevel

from ..strategies._models import Completion, CompletionRequest, ExtractiveModel, Model
from ._answers import RequestLog
from ._errors import HarnessError

__all__ = ["FailingModel"]

#: Which calls fail: every one (``None``), the first n, a pattern repeated, or a function of the
#: call's number (1 for the first call).
Schedule = int | Sequence[bool] | Callable[[int], bool] | None
#: What a failing call raises: an exception, an exception class, or a function of the call's number.
ErrorSpec = BaseException | type[BaseException] | Callable[[int], BaseException] | None


class FailingModel(RequestLog):
    """A model that fails on a schedule, for testing what a host and the runtime do when the
    provider is down, slow or flaky.

    ``fails`` says which calls fail, numbering calls from 1:

    - ``None`` (the default): every call;
    - an int ``n``: the first ``n`` calls, then it recovers;
    - a sequence of bools: a pattern, repeated (``[True, False]`` fails every other call);
    - a function of the call's number returning whether it fails.

    A failing call raises ``error``: an exception, an exception class (made with a message naming
    the call), or a function of the call's number giving one (default: a ``ConnectionError`` naming the call, as an unreachable
    provider would). With ``hang=True`` a failing call never answers instead: it waits until
    it is cancelled (the runtime's request timeout, a drain stopping, a host's own timeout).
    Calls that do not fail are answered by ``then`` (default: an
    :class:`~asides.ExtractiveModel`).

    ``requests`` records every call, ``failures`` counts the failed ones and ``hanging`` those
    waiting now. Under a Trio ``MockClock`` with autojump, the runtime's back-off between retries
    and its request timeout take no real time, so a test of recovery runs instantly.
    """

    def __init__(
        self,
        error: ErrorSpec = None,
        *,
        fails: Schedule = None,
        hang: bool = False,
        then: Model | None = None,
        name: str = "failing",
    ) -> None:
        super().__init__(name)
        self._fails = _schedule(fails, name)
        if error is not None and not (isinstance(error, BaseException) or callable(error)):
            raise HarnessError(f"FailingModel {name!r}: error is an exception, an exception class or a function, not {error!r}")
        self._error = error
        self.hang = bool(hang)
        if then is not None and not callable(getattr(then, "complete", None)):
            raise HarnessError(f"FailingModel {name!r}: then is a model with an async complete(request), not {then!r}")
        self.then: Model = then if then is not None else ExtractiveModel(name=name)
        #: How many calls failed (raised, or hung until cancelled).
        self.failures = 0
        #: How many calls are hanging now.
        self.hanging = 0

    def will_fail(self, number: int) -> bool:
        """Whether call number ``number`` (1 for the first) fails."""
        return self._fails(number)

    def _exception(self, number: int) -> BaseException:
        error = self._error
        if error is None:
            return ConnectionError(f"FailingModel {self.name!r}: call #{number} fails (a simulated outage)")
        if isinstance(error, BaseException):
            return error
        made: object = error(f"FailingModel {self.name!r}: call #{number} fails") if isinstance(error, type) else error(number)
        if not isinstance(made, BaseException):
            raise HarnessError(f"FailingModel {self.name!r}: the error function returned {made!r}, not an exception")
        return made

    async def complete(self, request: CompletionRequest) -> Completion:
        """Fail (raise, or hang until cancelled) if this call is scheduled to, else answer with ``then``."""
        number = self._record(request)
        if not self._fails(number):
            return await self.then.complete(request)
        self.failures += 1
        if self.hang:
            self.hanging += 1
            try:
                await anyio.sleep_forever()
            finally:
                self.hanging -= 1
        await anyio.lowlevel.checkpoint()
        raise self._exception(number)

    def __repr__(self) -> str:
        return f"FailingModel({self.name!r}, {len(self.requests)} call(s), {self.failures} failed)"


def _schedule(fails: Schedule, name: str) -> Callable[[int], bool]:
    if fails is None:
        return lambda number: True
    if isinstance(fails, bool):
        raise HarnessError(f"FailingModel {name!r}: fails is None, a count, a pattern or a function, not {fails!r}")
    if isinstance(fails, int):
        if fails < 0:
            raise HarnessError(f"FailingModel {name!r}: fails={fails} is negative; give how many first calls fail")
        first = fails
        return lambda number: number <= first
    if callable(fails):
        check = fails
        return lambda number: bool(check(number))
    if isinstance(fails, Sequence) and not isinstance(fails, str | bytes):
        pattern = tuple(fails)
        if not pattern or not all(isinstance(item, bool) for item in pattern):
            raise HarnessError(f"FailingModel {name!r}: fails= as a pattern is a non-empty sequence of bools, not {fails!r}")
        return lambda number: pattern[(number - 1) % len(pattern)]
    raise HarnessError(f"FailingModel {name!r}: fails is None, a count, a pattern or a function, not {fails!r}")
