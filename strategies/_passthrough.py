"""PassthroughStrategy: everything that fits, newest kept first."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from ..store._messages import Message
from ..store._views import MessageView
from ._base import CompiledMessage, Selection, SelectOptions, SourceEntry, StrategyContext
from ._repair import Emitted, repair_hidden_partners
from ._suffix import SLACK, Forms, MessageForms, SuffixIndex, ViewReads
from ._tokens import Estimator, recorded_estimator

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


class SuffixState:
    """What a passthrough selection keeps of one view: the suffix its messages fit in
    (:class:`SuffixIndex`), over the forms and estimates of single messages (``forms``, shared by
    every view of the branch). Views that see alike share one (see
    ``MessageView.shared_state``), so many managers whose readers see alike keep it once."""

    __slots__ = ("forms", "index", "_hidden", "_hidden_forms")

    def __init__(self, forms: MessageForms) -> None:
        self.forms = forms
        self.index = SuffixIndex()
        #: Forms made while tool calls are hidden (this view's own), and which calls they were.
        self._hidden: tuple[frozenset[str], frozenset[str]] | None = None
        self._hidden_forms: Forms = {}

    def price(self, item: Emitted, source: Message) -> int:
        """What ``item``, emitted for ``source``, costs."""
        if item.message.content is source.content:
            return self.forms.costs(source)
        return self.forms.costs.content(item.message.content)

    def select(self, view: ViewReads, hidden: tuple[frozenset[str], frozenset[str]], budget: int, *, source: object = None) -> Selection:
        """The longest suffix of ``view`` that fits ``budget`` (``SuffixIndex.select``)."""
        if hidden[0] or hidden[1]:  # the forms depend on the calls hidden: none shared
            if hidden != self._hidden:
                self._hidden, self._hidden_forms = hidden, {}
            forms = self._hidden_forms
        else:
            forms = self.forms.forms
        selection = self.index.select(
            hidden, view, budget, lambda m: emit_view_message(m, hidden), self.price, source=source, forms=forms
        )
        self.forms.costs.bound(self.index.covered_ids(), SLACK)
        return selection


def suffix_state(view: object, estimator: Estimator, own: SuffixState) -> tuple[SuffixState, object]:
    """The suffix state ``view`` shares with the views that see alike, with what they read (the
    index's ``source``), when it is a view that shares; else ``own``, and the view itself."""
    if isinstance(view, MessageView) and isinstance(estimator, Hashable):
        forms = message_forms(view, estimator)
        return view.shared_state((SuffixState, estimator), lambda: SuffixState(forms)), view.projection
    return own, view


def message_forms(view: MessageView, estimator: Estimator) -> MessageForms:
    """The forms and estimates of single messages under ``estimator`` that every view of
    ``view``'s branch shares (``MessageView.branch_state``); ``estimator`` must be hashable."""
    return view.branch_state((MessageForms, estimator), lambda: MessageForms(estimator))


class PassthroughStrategy(NoBackgroundWork):
    """Every message when the whole view fits the budget, else the longest fitting suffix
    (empty when the newest message alone does not fit). No state of its own, no background
    work: what it works out from a view is kept once for every view that sees alike."""

    name = "passthrough"

    def __init__(self, *, estimator: Estimator | None = None) -> None:
        self._own = SuffixState(MessageForms(estimator))
        self.estimator = self._own.forms.costs.estimator

    def recorded_options(self) -> dict[str, Any]:
        """The options as JSON (see ``AutobiographicalStrategy.recorded_options``)."""
        return {"estimator": recorded_estimator(self.estimator)}

    def price(self, item: Emitted, source: Message) -> int:
        """What ``item``, emitted for ``source``, costs under the strategy's estimator."""
        return self._own.price(item, source)

    async def select(self, ctx: StrategyContext, budget: int, options: SelectOptions) -> Selection:
        view = ctx.view
        hidden = view.hidden_tool_ids()
        state, source = suffix_state(view, self.estimator, self._own)
        return state.select(view, hidden, budget, source=source)
