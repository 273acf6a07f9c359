"""A manager's background work: units of compression, readiness, its drain, and the
summaries its strategy keeps (part of ``ContextManager``)."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, cast

from ..store._blocks import TextBlock
from ..store._errors import ArgumentTypeError, InvalidArgumentError
from ..strategies._autobiographical.records import Summary
from ..strategies._capabilities import DescribesPendingWork, HasHeadWindow, ReadsSummaries
from ..strategies._errors import CompressionError, StrategyCapabilityError
from ..strategies._passthrough import NoBackgroundWork
from ._drains import Drain
from ._gate import AnswerStale
from ._manager_parts import ManagerParts
from ._protocol import HeadReset, Unit

if TYPE_CHECKING:
    from ._manager import ContextManager

log = logging.getLogger("asides.actors")

__all__ = ["BackgroundWork"]


class BackgroundWork(ManagerParts):
    """Background work of a :class:`~asides.actors.ContextManager`."""

    async def run_unit(self) -> bool:
        """Bring the strategy up to date and run one unit of its background work (when there
        is a model); whether there was one. Runs in the namespace actor's turn."""
        return await self._unit(needs_model=True)

    async def _unit(self, *, needs_model: bool) -> bool:
        async with self._actor.turn(Unit()):
            self._check("tick")
            await self._catch_up()
            if needs_model and (self.model is None or self._strategy.is_ready()):
                return False
            try:
                return bool(await self._strategy.tick(self._context()))
            except AnswerStale:
                return False

    # -- background work -----------------------------------------------------------------------

    async def tick(self) -> bool:
        """Run one unit of the strategy's background work; whether it did any."""
        self._check("tick")
        return await self._unit(needs_model=False)

    def is_ready(self) -> bool:
        """Whether the strategy has no background work left."""
        self._check("is_ready")
        return bool(self._strategy.is_ready())

    def pending_work(self) -> str | None:
        """What background work is waiting, in words, or ``None`` when ready; says so when no
        model is configured, and when the model has been failing."""
        self._check("pending_work")
        if self._strategy.is_ready():
            return None
        text = self._strategy.pending_work() if isinstance(self._strategy, DescribesPendingWork) else None
        text = text or "background work pending"
        if self.model is None:
            text += " (no compression model)"
        elif self._drain is not None and self._drain.failure is not None:
            text += "; " + self._drain.failure.describe()
        return text

    async def drain(self) -> None:
        """Wait until the strategy is ready; return at once when there is no model.

        Raises ``CompressionError``, naming the last error, once the model has failed the
        runtime's ``ModelPolicy.drain_failures`` times in a row during this call (the background
        drain goes on retrying). Raises what refuses the manager (for example
        ``ReaderClaimError`` when another reader claimed the namespace, ``StoreFailedError`` once
        the store stopped).
        """
        self._check("drain")
        start_failures: int | None = None
        while True:
            self._check("drain")
            if self.model is None:
                return
            drain = self._drain
            if drain is None or drain.stopped:
                # No drain runs (the strategy has none): work in this task.
                if not await self.run_unit():
                    return
                continue
            progress = drain.progress.version
            await self._catch_up_now()
            if self._strategy.is_ready() and self._actor.requests_out == 0:
                return
            failure = drain.failure
            if failure is not None:
                if start_failures is None:
                    start_failures = failure.count - 1
                if failure.count - start_failures >= self._runtime.model_policy.drain_failures:
                    raise CompressionError(
                        f"the compression model of namespace {self._namespace!r} on branch {self._branch!r} failed "
                        f"{failure.count - start_failures} times in a row (last: {failure.error}); the background drain "
                        "keeps retrying"
                    )
            elif start_failures is None:
                start_failures = 0
            drain.poke()
            await drain.progress.wait_beyond(progress)
            self._check("drain")  # the drain may have stopped because the store did
            if drain.last_outcome == "idle" and self._actor.requests_out == 0:
                return  # the drain found nothing it can do now

    async def _catch_up_now(self) -> None:
        async with self._actor.turn(Unit()):
            self._check("drain")
            await self._catch_up()

    def _start_drain(self) -> None:
        """Start this manager's drain, if its strategy has background work and none runs."""
        if self._drain is not None and not self._drain.stopped:
            return
        if self._closed or not self._started or self._start_error is not None or self._runtime.closing:
            return
        if isinstance(self._strategy, NoBackgroundWork):
            return
        drain = Drain(cast("ContextManager", self), self._runtime.model_policy)
        self._drain = drain
        self._runtime.spawn(drain.run)

    async def _stop_drain(self) -> None:
        drain, self._drain = self._drain, None
        if drain is not None:
            await drain.stop()

    # -- summaries -----------------------------------------------------------------------------

    def search_summaries(self, pattern: str | re.Pattern[str], *, limit: int = 50) -> tuple[Summary, ...]:
        """Summaries matching ``pattern`` (checked like a view read)."""
        self._check("search_summaries", started=False)
        if not isinstance(limit, int) or limit < 0:
            raise InvalidArgumentError("limit", f"must be a non-negative int, got {limit!r}")
        strategy = self._strategy
        return tuple(strategy.search_summaries(pattern, limit=limit)) if isinstance(strategy, ReadsSummaries) else ()

    def get_summaries_in_range(self, start: int | None = None, end: int | None = None) -> tuple[Summary, ...]:
        """Summaries overlapping the sequence range [start, end] (checked)."""
        self._check("get_summaries_in_range", started=False)
        strategy = self._strategy
        return tuple(strategy.get_summaries_in_range(start, end)) if isinstance(strategy, ReadsSummaries) else ()

    def get_summary(self, summary_id: str) -> Summary | None:
        """The summary with that id, or ``None`` (checked)."""
        self._check("get_summary", started=False)
        strategy = self._strategy
        return strategy.get_summary(summary_id) if isinstance(strategy, ReadsSummaries) else None

    async def reset_head_window(self, text: str | None = None) -> str:
        """Append a ``[Topic Transition]`` message holding ``text`` (or a transition summary the
        model writes from this reader's view) and start the head window there."""
        self._check("reset_head_window")
        strategy = self._strategy
        if not isinstance(strategy, HasHeadWindow):
            raise StrategyCapabilityError(
                f"reset_head_window was refused: strategy {getattr(self._strategy, 'name', '?')!r} has no head window"
            )
        if text is not None and not isinstance(text, str):
            raise ArgumentTypeError("text", f"reset_head_window takes a string or None, not {type(text).__name__}")
        async with self._actor.turn(HeadReset()):
            self._check("reset_head_window")
            generated = text is None
            body = text if text is not None else await strategy.transition_text(self._context())
            block = TextBlock(f"[Topic Transition]\n\n{body}", (self._reader,) if generated and self._reader else None)
            message = await self._store.append_message(self._branch, "Context Manager", (block,))
            await strategy.start_head_at(self._context(), message.sequence)
        return body

