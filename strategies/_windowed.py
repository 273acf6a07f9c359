"""WindowedPassthroughStrategy: a window that moves forward in coarse
jumps, so successive compiles share a stable prefix."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from ..store._messages import Message
from ..store._views import MessageView
from ._base import CompiledMessage, Selection, SelectOptions, StrategyContext
from ._budget import over_budget
from ._capabilities import RecordsReport, owns_under
from ._errors import InvalidArgumentError
from ._passthrough import NoBackgroundWork, emit_view_message, selection_of
from ._repair import Emitted, glued
from ._suffix import SLACK
from ._tokens import Estimator, MessageCosts, recorded_estimator
from ._truncation import truncate_content

__all__ = ["WindowedPassthroughStrategy", "first_position_at_or_after", "is_anchor"]


def is_anchor(value: object) -> TypeGuard[int]:
    """The rule for the windowed anchor record: a non-negative integer (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def first_position_at_or_after(view: MessageView, sequence: int) -> int:
    """The first view position whose message has ``sequence >=`` the given one (binary search)."""
    low, high = 0, view.length()
    while low < high:
        mid = (low + high) // 2
        if view.at(mid).sequence < sequence:
            low = mid + 1
        else:
            high = mid
    return low


class WindowedPassthroughStrategy(NoBackgroundWork):
    """Every message at or after a persisted anchor; on overflow the anchor jumps forward so the
    window holds about ``re_anchor_fraction`` of the budget. A tool call is never cut from its
    result at the window start; the newest unit alone over budget raises ``OverBudgetError``."""

    name = "windowed-passthrough"
    #: What its record keys start with (``<kind>/``), as the compressing strategies' ``kind``.
    kind = "windowed-passthrough"
    ANCHOR = f"{kind}/anchor"

    def __init__(
        self,
        *,
        re_anchor_fraction: float = 0.5,
        max_message_tokens: int | None = None,
        estimator: Estimator | None = None,
    ) -> None:
        if not isinstance(re_anchor_fraction, (int, float)) or not 0 < re_anchor_fraction <= 1:
            raise InvalidArgumentError("re_anchor_fraction", f"must be in (0, 1], got {re_anchor_fraction!r}")
        if max_message_tokens is not None and (not isinstance(max_message_tokens, int) or max_message_tokens < 1):
            raise InvalidArgumentError("max_message_tokens", f"must be None or an int >= 1, got {max_message_tokens!r}")
        self.re_anchor_fraction = float(re_anchor_fraction)
        self.max_message_tokens = max_message_tokens
        self._costs = MessageCosts(estimator)
        self.estimator = self._costs.estimator

    def recorded_options(self) -> dict[str, Any]:
        """The options as JSON (see ``AutobiographicalStrategy.recorded_options``)."""
        return {
            "re_anchor_fraction": self.re_anchor_fraction,
            "max_message_tokens": self.max_message_tokens,
            "estimator": recorded_estimator(self.estimator),
        }

    def anchor(self, ctx: StrategyContext) -> int:
        """The persisted anchor sequence (0 when absent or malformed; a malformed one is
        reported once)."""
        value = ctx.state.get(self.ANCHOR, 0)
        if not is_anchor(value):
            ctx.state.report(self.ANCHOR, f"the windowed anchor is not a non-negative integer ({value!r}); read as 0")
            return 0
        return value

    def owns_record(self, tail: str) -> bool:
        """Whether ``tail`` is spelled as a record under ``windowed-passthrough/``
        (``DescribesRecords``)."""
        return owns_under(self.kind, tail)

    def describe_records(self, records: Mapping[str, Any]) -> RecordsReport:
        """What its records hold: the anchor; any other record, or an anchor that is not a
        non-negative integer, is unreadable."""
        anchor: int | None = None
        unreadable = []
        for tail in sorted(records):
            value = records[tail]
            if tail == self.ANCHOR and is_anchor(value):
                anchor = value
            else:
                unreadable.append((tail, f"not a windowed anchor (a non-negative integer under {self.ANCHOR})"))
        return RecordsReport(anchor=anchor, unreadable=tuple(unreadable))

    def _emit(self, message: Message, hidden: tuple[frozenset[str], frozenset[str]]) -> tuple[list[Emitted], int]:
        emitted = emit_view_message(message, hidden)
        cost = 0
        out = []
        for item in emitted:
            content = item.message.content
            shown, cut = truncate_content(content, self.max_message_tokens, self.estimator)
            if cut:
                item = Emitted(CompiledMessage(item.message.participant, shown), item.source, complete=False)
            cost += self._costs(message) if item.message.content is message.content else self._costs.content(item.message.content)
            out.append(item)
        return out, cost

    async def select(self, ctx: StrategyContext, budget: int, options: SelectOptions) -> Selection:
        view = ctx.view
        hidden = view.hidden_tool_ids()
        anchor = self.anchor(ctx)
        start = first_position_at_or_after(view, anchor)
        # Walk the window newest to oldest, grouping glued messages into units, until it is
        # all priced or it is over budget.
        units: list[tuple[list[Emitted], int]] = []  # newest first
        unit_items: list[Emitted] = []
        unit_cost = 0
        total = 0
        over = False
        for position in range(view.length() - 1, start - 1, -1):
            message = view.at(position)
            items, cost = self._emit(message, hidden)
            unit_items = items + unit_items
            unit_cost += cost
            previous = view.at(position - 1) if position > start else None
            if previous is not None and glued(previous.content, message.content):
                continue  # glued to the message before it: same unit
            units.append((unit_items, unit_cost))
            total += unit_cost
            unit_items, unit_cost = [], 0
            if total > budget:
                over = True
                break
        if not over:
            return self._bounded(selection_of([item for items, _ in reversed(units) for item in items]))

        # Re-anchor: the newest units within the fraction of the budget, at least one.
        target = self.re_anchor_fraction * budget
        admitted = 0
        running = 0
        for _items, cost in units:
            if running + cost > target:
                break
            running += cost
            admitted += 1
        admitted = max(admitted, 1)
        window = list(reversed(units[:admitted]))
        needed = sum(cost for _items, cost in window)
        if needed > budget and not options.preview:
            raise over_budget(
                f"compile for {ctx.namespace} on {ctx.branch}",
                needed=needed,
                needed_for=" for its newest message (with its tool partners)",
                budget=budget,
                options=options,
                remedies=["raise max_tokens", "set max_message_tokens"],
            )
        items = [item for unit, _cost in window for item in unit]
        new_anchor = next(m for m in items if m.source.kind == "raw")
        first_id = new_anchor.source.message_ids[0]
        sequence = view.sequence_of(first_id)
        if not options.preview and sequence is not None and sequence != anchor:
            await ctx.state.set(self.ANCHOR, sequence)
        return self._bounded(selection_of(items))

    def _bounded(self, selection: Selection) -> Selection:
        """``selection``, once the estimates kept are bounded by the messages it holds."""
        self._costs.bound([i for entry in selection.sources for i in entry.message_ids], SLACK)
        return selection
