"""Rendering a compile: head, then summaries and uncovered raw messages in order, then the recent window.

* The head's messages, raw (each truncated to ``max_message_tokens``).
* The middle, by position: each compressed chunk through its highest summary (the one nobody
  merged), shown as a recall pair (``Context Manager``: ``[Recall <id>]``, then the summary's text
  by ``summary_participant``) at the position of its first covered message; every other middle
  message raw (the open frontier, chunks closed but not yet summarised, held-back and failed
  chunks). So every message of the view is either raw or covered by a rendered summary.
* The recent window, raw.

Tool calls and results are then paired up again (a call whose result is summarised away gets a
stub). Nothing is dropped to fit: over budget, a compile raises ``OverBudgetError`` and a preview
returns the selection. The work is in the number of summaries shown and raw middle messages, not
in history length: merges keep the summaries nobody merged to a few per level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from ...store._messages import Message
from ...store._views import MessageView
from ...store._words import counted
from .._base import CompiledMessage, Selection, SelectOptions, SourceEntry, StrategyContext
from .._budget import over_budget
from .._passthrough import selection_of
from .._repair import Emitted, repair_pairing
from .._truncation import truncate_content
from .compression import recall_messages
from .records import Summary
from .regions import Regions
from .tracking import Tracker

if TYPE_CHECKING:
    from .strategy import AutobiographicalStrategy

__all__ = ["RawItem", "SummaryItem", "middle_items", "render"]


@attrs.frozen(slots=True)
class RawItem:
    """A middle message shown raw, at its view position."""

    position: int
    message: Message


@attrs.frozen(slots=True)
class SummaryItem:
    """A rendered summary, at the view position of its first covered message."""

    position: int
    summary: Summary


def middle_items(tracker: Tracker, view: MessageView, regions: Regions) -> list[RawItem | SummaryItem]:
    """The middle in position order: each compressed chunk through its highest summary, every
    other middle message raw."""
    memory = tracker.memory
    items: list[RawItem | SummaryItem] = []
    for level in tracker.levels():
        for sid in tracker.roots[level]:
            summary = memory.summaries[sid].summary
            position = next((p for p in map(view.position_of, summary.message_ids) if p is not None), None)
            if position is not None:
                items.append(SummaryItem(position, summary))
    for chunk_id in tracker.unsummarised:
        for message_id in memory.chunks[chunk_id].message_ids:
            found = view.position_of(message_id)
            if found is not None and regions.in_middle(found):
                items.append(RawItem(found, view.at(found)))
    p = tracker.scan_start
    while p < regions.ts:
        if regions.in_head(p):
            p = regions.he
            continue
        if not tracker.owned(view.id_at(p)):
            items.append(RawItem(p, view.at(p)))
        p += 1
    items.sort(key=lambda item: item.position)
    return items


def _raw(strategy: AutobiographicalStrategy, message: Message) -> tuple[Emitted, int]:
    shown, cut = truncate_content(message.content, strategy.max_message_tokens, strategy.estimator)
    item = Emitted(CompiledMessage(message.participant, shown), SourceEntry("raw", (message.id,)), complete=not cut)
    return item, strategy.price(message)


def render(strategy: AutobiographicalStrategy, ctx: StrategyContext, budget: int, options: SelectOptions) -> Selection:
    """The compile (see the module docstring). Writes nothing."""
    tracker = strategy.tracker
    regions = tracker.sync(ctx)
    view = ctx.view
    emitted: list[Emitted] = []
    costs: dict[int, int] = {}
    head_tokens = middle_tokens = recent_tokens = 0

    def emit(item: Emitted, cost: int) -> int:
        emitted.append(item)
        costs[id(item)] = cost
        return cost

    for p in range(regions.hs, regions.he):
        head_tokens += emit(*_raw(strategy, view.at(p)))
    for middle in middle_items(tracker, view, regions):
        if isinstance(middle, SummaryItem):
            source = SourceEntry("summary", middle.summary.message_ids, middle.summary.id)
            for message in recall_messages(middle.summary, strategy.summary_participant):
                middle_tokens += emit(Emitted(message, source), strategy.estimator(message.content))
        else:
            middle_tokens += emit(*_raw(strategy, middle.message))
    for p in range(regions.ts, regions.length):
        recent_tokens += emit(*_raw(strategy, view.at(p)))
    repaired = repair_pairing(emitted)
    total = sum(costs[id(i)] if id(i) in costs else strategy.estimator(i.message.content) for i in repaired)
    if total > budget and not options.preview:
        pending = strategy.pending_chunks()
        awaiting = f"{counted(pending, 'chunk')} {'awaits' if pending == 1 else 'await'} compression"
        details = f"head {head_tokens}, middle {middle_tokens}, recent {recent_tokens}; {awaiting}"
        remedies = []
        if ctx.model is None:
            details += ", and no compression model is configured"
            remedies.append("configure a compression model (model= on open_runtime or open_manager)")
        elif pending:
            remedies.append("await manager.drain()")
        remedies += ["raise max_tokens", "lower recent_window_tokens"]
        raise over_budget(
            f"compile for {ctx.namespace} on {ctx.branch}",
            needed=total,
            budget=budget,
            options=options,
            remedies=remedies,
            details=details,
            head_tokens=head_tokens,
            middle_tokens=middle_tokens,
            recent_tokens=recent_tokens,
            pending_chunks=pending,
        )
    return selection_of(repaired)
