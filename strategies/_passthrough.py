"""PassthroughStrategy: everything that fits, newest kept first."""

from __future__ import annotations

from typing import Any

from ..store._messages import Message
from ._base import CompiledMessage, Selection, SelectOptions, SourceEntry, StrategyContext
from ._repair import Emitted, repair_hidden_partners
from ._suffix import SuffixIndex
from ._tokens import Estimator, MessageCosts, recorded_estimator

__all__ = ["NoBackgroundWork", "PassthroughStrategy", "emit_view_message", "selection_of"]


def emit_view_message(message: Message, hidden: tuple[frozenset[str], frozenset[str]]) -> list[Emitted]:
    """A view message as compiled, with only the hidden-partner repair (see ``_repair``)."""
    uses, results = hidden
    if uses or results:
        return repair_hidden_partners(message, uses, results)
    return [Emitted(CompiledMessage(message.participant, message.content), SourceEntry("raw", (message.id,)))]


def selection_of(items: list[Emitted], extra_incomplete: set[str] | None = None) -> Selection:
    """A :class:`Selection` from emitted items."""
    incomplete = set(extra_incomplete or ())
    for item in items:
        if not item.complete and item.source.kind == "raw":
            incomplete.update(item.source.message_ids)
    return Selection(tuple(i.message for i in items), tuple(i.source for i in items), frozenset(incomplete))


class NoBackgroundWork:
    """Base for strategies that keep nothing in memory between calls and have no background
    work: ready always, ``tick`` does nothing, so the runtime starts no drain for them
    (``has_background_work = False``, the capability the runtime asks: see
    ``strategies._capabilities``). They make no compression reads, so they may run under a
    reader (``marks_compression_reads``)."""

    marks_compression_reads = True
    has_background_work = False

    async def initialize(self, ctx: StrategyContext) -> None:
        return None

    async def on_new_message(self, message: Message, ctx: StrategyContext) -> None:
        return None

    async def tick(self, ctx: StrategyContext) -> bool:
        return False

    def is_ready(self) -> bool:
        return True

    def pending_work(self) -> str | None:
        return None


class PassthroughStrategy(NoBackgroundWork):
    """Every message when the whole view fits the budget, else the longest fitting suffix
    (empty when the newest message alone does not fit). No state, no background work."""

    name = "passthrough"

    def __init__(self, *, estimator: Estimator | None = None) -> None:
        self._costs = MessageCosts(estimator)
        self.estimator = self._costs.estimator
        self._index = SuffixIndex()

    def recorded_options(self) -> dict[str, Any]:
        """The options as JSON (see ``AutobiographicalStrategy.recorded_options``)."""
        return {"estimator": recorded_estimator(self.estimator)}

    def price(self, item: Emitted, source: Message) -> int:
        if item.message.content is source.content:
            return self._costs(source)
        return self._costs.content(item.message.content)

    async def select(self, ctx: StrategyContext, budget: int, options: SelectOptions) -> Selection:
        view = ctx.view
        hidden = view.hidden_tool_ids()
        return self._index.select(hidden, view, budget, lambda m: emit_view_message(m, hidden), self.price)
