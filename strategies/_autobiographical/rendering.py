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

A compile costs what it outputs. :class:`RenderCache` keeps the last render's emitted items; while
nothing they derive from changed (the strategy's records, the head, the view's edits, the view
itself), the next render only appends the messages that arrived since, and copies the output. The
tool-pairing repair runs only when an emitted message holds a tool block (without one it changes
nothing). Each raw message's rendered form is kept too, keyed by the message object, so a full
render after a change prices and truncates only what changed.
"""

from __future__ import annotations

import attrs

from ...store._blocks import ToolResultBlock, ToolUseBlock
from ...store._messages import Message
from ...store._views import MessageView
from ...store._words import counted
from .._base import CompiledMessage, Selection, SelectOptions, SourceEntry, StrategyContext
from .._budget import over_budget
from .._passthrough import selection_of
from .._repair import Emitted, repair_pairing
from .._tokens import Estimator
from .._truncation import truncate_content
from .compression import recall_messages
from .records import Summary
from .regions import Regions
from .scheduling import pending_chunks
from .tracking import Tracker

__all__ = ["RawItem", "RenderCache", "RenderSettings", "SummaryItem", "middle_items", "render"]


@attrs.frozen(slots=True)
class RenderSettings:
    """The strategy options a compile reads (the strategy itself is not handed to it)."""

    max_message_tokens: int | None
    estimator: Estimator
    summary_participant: str
    holdback_chunks: int


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


def _has_tool_block(item: Emitted) -> bool:
    return any(isinstance(b, (ToolUseBlock, ToolResultBlock)) for b in item.message.content)


@attrs.define
class RenderCache:
    """The last render of one strategy (see the module docstring). ``signature`` names what the
    emitted items derive from; ``length`` and ``ts`` are the view's length and the recent window's
    start they were rendered at."""

    signature: tuple[object, ...] | None = None
    view: MessageView | None = None
    length: int = 0
    ts: int = 0
    emitted: list[Emitted] = attrs.Factory(list)
    costs: list[int] = attrs.Factory(list)  # each emitted item's price, in order
    total: int = 0
    tool_items: int = 0
    #: message id -> (the message object rendered, its emitted form, its price)
    raws: dict[str, tuple[Message, Emitted, int]] = attrs.Factory(dict)

    def raw(self, settings: RenderSettings, tracker: Tracker, message: Message) -> tuple[Emitted, int]:
        """A raw message as a compile shows it, and its price (``tracker.price``); computed once
        per message object."""
        found = self.raws.get(message.id)
        if found is not None and found[0] is message:
            return found[1], found[2]
        shown, cut = truncate_content(message.content, settings.max_message_tokens, settings.estimator)
        item = Emitted(CompiledMessage(message.participant, shown), SourceEntry("raw", (message.id,)), complete=not cut)
        price = tracker.price(message)
        self.raws[message.id] = (message, item, price)
        return item, price


def _signature(tracker: Tracker, view: MessageView, regions: Regions) -> tuple[object, ...]:
    memory = tracker.memory
    return (
        memory.changes,
        len(memory.chunks),
        len(memory.summaries),
        memory.head_start,
        tracker.revision,
        view.revision[1],
        regions.hs,
        regions.he,
    )


def _render_all(
    settings: RenderSettings, cache: RenderCache, tracker: Tracker, view: MessageView, regions: Regions
) -> tuple[list[Emitted], list[int], tuple[int, int, int]]:
    """Every item of the compile, in order, with its price, and the head, middle and recent totals."""
    emitted: list[Emitted] = []
    costs: list[int] = []
    head_tokens = middle_tokens = recent_tokens = 0
    used: dict[str, tuple[Message, Emitted, int]] = {}

    def raw(message: Message) -> int:
        item, cost = cache.raw(settings, tracker, message)
        used[message.id] = cache.raws[message.id]
        emitted.append(item)
        costs.append(cost)
        return cost

    for p in range(regions.hs, regions.he):
        head_tokens += raw(view.at(p))
    for middle in middle_items(tracker, view, regions):
        if isinstance(middle, SummaryItem):
            source = SourceEntry("summary", middle.summary.message_ids, middle.summary.id)
            for recalled in recall_messages(middle.summary, settings.summary_participant):
                cost = settings.estimator(recalled.content)
                emitted.append(Emitted(recalled, source))
                costs.append(cost)
                middle_tokens += cost
        else:
            middle_tokens += raw(middle.message)
    for message in view.slice(regions.ts, regions.length):
        recent_tokens += raw(message)
    cache.raws = used  # what is no longer rendered raw is let go
    return emitted, costs, (head_tokens, middle_tokens, recent_tokens)


def render(
    settings: RenderSettings, tracker: Tracker, cache: RenderCache, ctx: StrategyContext, budget: int, options: SelectOptions
) -> Selection:
    """The compile (see the module docstring), from the strategy's ``settings``, its ``tracker``
    (brought up to date with ``ctx``) and its last render, ``cache``. Writes nothing."""
    regions = tracker.sync(ctx)
    view = ctx.view
    signature = _signature(tracker, view, regions)
    if (
        cache.signature == signature
        and cache.view is view
        and cache.length <= regions.length
        and cache.ts <= regions.ts
        and not any(tracker.owned(view.id_at(p)) for p in range(cache.ts, min(regions.ts, cache.length)))
    ):
        # Only appends since the last render, and nothing they derive from changed: the messages
        # that left the recent window stay raw in the middle, in the same order.
        for message in view.slice(cache.length, regions.length):
            item, cost = cache.raw(settings, tracker, message)
            cache.emitted.append(item)
            cache.costs.append(cost)
            cache.total += cost
            cache.tool_items += _has_tool_block(item)
    else:
        emitted, costs, _ = _render_all(settings, cache, tracker, view, regions)
        cache.emitted, cache.costs = emitted, costs
        cache.total = sum(costs)
        cache.tool_items = sum(1 for item in emitted if _has_tool_block(item))
        cache.signature, cache.view = signature, view
    cache.length, cache.ts = regions.length, regions.ts
    if cache.tool_items:
        repaired = repair_pairing(cache.emitted)
        priced = {id(item): cost for item, cost in zip(cache.emitted, cache.costs, strict=True)}
        total = sum(priced[id(i)] if id(i) in priced else settings.estimator(i.message.content) for i in repaired)
    else:
        repaired, total = cache.emitted, cache.total
    if total > budget and not options.preview:
        _emitted, _costs, (head_tokens, middle_tokens, recent_tokens) = _render_all(settings, cache, tracker, view, regions)
        pending = pending_chunks(tracker, settings.holdback_chunks)
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
