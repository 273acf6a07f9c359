"""AutobiographicalStrategy (SPEC C3, C4, C7; STRATEGIES 4, 5, 7).

Old conversation becomes first-person memories written by a model in the agent's voice. A compile
is the head window (verbatim) -> a chronological mix of summaries (as recall pairs) and raw
messages not yet summarised -> the recent window (verbatim). Every message of the view is either
raw or covered by a rendered summary.

Work (closing chunks, level-1 summaries, merges) happens in units, one at a time per namespace
and branch, only inside ``tick``. A unit that asks the model raises the narrowing floor first,
builds its request from the reader's view, sends it with the actor's turn released, and commits
when the answer comes back (writing nothing if another manager already did the work).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ...store._blocks import ContentBlock, TextBlock, has_audience
from ...store._messages import Message
from .._base import CompiledMessage, Selection, SelectOptions, SourceEntry, StrategyContext
from .._errors import CompressionError, OverBudgetError
from .._models import CompletionRequest, completion_text
from .._passthrough import selection_of
from .._repair import Emitted, repair_pairing
from .._tokens import Estimator, MessageCosts, estimate_text
from .._truncation import truncate_content
from .._windowed import first_position_at_or_after
from .chunking import FrontierWalk, frontier_start
from .compression import (
    L1_INSTRUCTION,
    MARKER,
    MERGE_INSTRUCTION,
    TRANSITION_REQUEST,
    TRANSITION_SYSTEM,
    recall_messages,
    recall_pair,
    reduce_message,
    system_text,
)
from .records import Attempts, Chunk, Memory, Summary, SummaryRecord
from .regions import RecentWindow, Regions, head_end

__all__ = ["AutobiographicalStrategy"]

_MAX_LEVEL = 3


@attrs.frozen(slots=True)
class _Item:
    """A middle item: a raw view message or a rendered summary, at a view position."""

    position: int
    message: Message | None = None
    summary: Summary | None = None


def _at_least(name: str, value: object, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


class AutobiographicalStrategy:
    """See the module docstring and STRATEGIES 4. Options are keyword-only (4.1)."""

    name = "autobiographical"
    kind = "autobiographical"
    marks_compression_reads = True
    l1_instruction = L1_INSTRUCTION
    merge_instruction = MERGE_INSTRUCTION
    closes_trailing_chunk = False
    default_holdback = 1

    def __init__(
        self,
        *,
        compression_model: str | None = None,
        target_chunk_tokens: int = 2000,
        head_window_tokens: int = 4000,
        recent_window_tokens: int = 30000,
        hierarchical: bool = True,
        adaptive_resolution: bool = False,
        merge_threshold: int = 6,
        holdback_chunks: int | None = None,
        summary_target_tokens: int = 600,
        summary_participant: str = "assistant",
        compression_max_tokens: int = 4000,
        compression_context_tokens: int = 50000,
        request_message_tokens: int = 16000,
        l1_attempt_limit: int = 3,
        merge_attempt_limit: int = 5,
        max_message_tokens: int | None = None,
        estimator: Estimator | None = None,
    ) -> None:
        self.compression_model = compression_model
        self.target_chunk_tokens = _at_least("target_chunk_tokens", target_chunk_tokens, 1)
        self.summary_target_tokens = _at_least("summary_target_tokens", summary_target_tokens, 1)
        self.compression_max_tokens = _at_least("compression_max_tokens", compression_max_tokens, 1)
        self.request_message_tokens = _at_least("request_message_tokens", request_message_tokens, 1)
        self.l1_attempt_limit = _at_least("l1_attempt_limit", l1_attempt_limit, 1)
        self.merge_attempt_limit = _at_least("merge_attempt_limit", merge_attempt_limit, 1)
        self.head_window_tokens = _at_least("head_window_tokens", head_window_tokens, 0)
        self.recent_window_tokens = _at_least("recent_window_tokens", recent_window_tokens, 0)
        self.compression_context_tokens = _at_least("compression_context_tokens", compression_context_tokens, 0)
        self.merge_threshold = _at_least("merge_threshold", merge_threshold, 2)
        self.holdback_chunks = _at_least(
            "holdback_chunks", self.default_holdback if holdback_chunks is None else holdback_chunks, 0
        )
        if not isinstance(summary_participant, str) or not summary_participant:
            raise ValueError("summary_participant must be a non-empty string")
        if max_message_tokens is not None:
            _at_least("max_message_tokens", max_message_tokens, 1)
        self.summary_participant = summary_participant
        self.hierarchical = bool(hierarchical)
        self.adaptive_resolution = bool(adaptive_resolution)
        self.max_message_tokens = max_message_tokens
        self._costs = MessageCosts(estimator)
        self.estimator = self._costs.estimator
        self._shown_costs: dict[str, tuple[object, int]] = {}
        self._clear()

    # -- memory --------------------------------------------------------------------------------

    def _clear(self) -> None:
        self._memory = Memory(self.kind)
        self._revision = 0
        self._view_edits: int | None = None
        self._recent = RecentWindow(self.recent_window_tokens)
        self._walk = FrontierWalk()
        self._scan_start = 0
        self._unsummarised: set[str] = set()
        self._roots: dict[int, set[str]] = {1: set(), 2: set(), 3: set()}
        self._failed_members: dict[int, set[str]] = {1: set(), 2: set()}
        self._in_flight: str | None = None
        self._state: Any = None
        self._regions: Regions | None = None
        self._he_cache: tuple[Any, int, int] | None = None

    def _derive(self) -> None:
        memory = self._memory
        self._unsummarised = {c for c in memory.chunks if c not in memory.l1_of}
        self._roots = {1: set(), 2: set(), 3: set()}
        for record in memory.roots():
            self._roots[record.level].add(record.id)
        self._failed_members = {1: set(), 2: set()}
        for key, attempts in memory.attempts.items():
            if attempts.failed and key.startswith("merge:"):
                level = int(key.split(":")[1]) - 1
                if level in self._failed_members:
                    self._failed_members[level].update(attempts.members)

    def _take_summary(self, record: SummaryRecord) -> None:
        memory = self._memory
        memory.add_summary(record)
        if record.id not in memory.summaries:
            return
        if record.level == 1:
            self._unsummarised.discard(record.chunk)  # type: ignore[arg-type]
        for child in record.children:
            self._roots[memory.summaries[child].level].discard(child)
        self._roots[record.level].add(record.id)

    def _catch_up(self, state: Any) -> bool:
        """Apply records another manager of this namespace wrote; whether chunks changed."""
        revision = state.revision
        if revision == self._revision:
            return False
        chunks_before = len(self._memory.chunks)
        for key in state.written_since(self._revision):
            if not key.startswith(self.kind + "/"):
                continue
            value = state.get(key)
            rest = key[len(self.kind) + 1 :]
            if rest.startswith("summary/"):
                before = set(self._memory.summaries)
                self._memory.apply(key, value)
                for sid in set(self._memory.summaries) - before:
                    self._take_summary(self._memory.summaries[sid])
            else:
                self._memory.apply(key, value)
                if rest.startswith("chunk/"):
                    chunk_id = rest[len("chunk/") :]
                    if chunk_id in self._memory.chunks and chunk_id not in self._memory.l1_of:
                        self._unsummarised.add(chunk_id)
                elif rest.startswith("attempts/"):
                    self._derive()
        self._revision = revision
        return len(self._memory.chunks) != chunks_before

    def _owned(self, message_id: str) -> bool:
        return message_id in self._memory.owner

    def _price(self, message: Message) -> int:
        """What a raw message costs as shown (truncated to ``max_message_tokens``, 1.4)."""
        cost = self._costs(message)
        cap = self.max_message_tokens
        if cap is None or cost <= cap:
            return cost
        found = self._shown_costs.get(message.id)
        if found is not None and found[0] is message.content:
            return found[1]
        shown, _ = truncate_content(message.content, cap, self.estimator)
        price = self.estimator(shown)
        self._shown_costs[message.id] = (message.content, price)
        return price

    def _compute_regions(self, view: Any) -> Regions:
        head_start = self._memory.head_start
        hs = 0 if head_start is None else first_position_at_or_after(view, head_start)
        n = view.length()
        key = (hs, self._view_edits, len(self._memory.chunks))
        cached = self._he_cache
        if cached is not None and cached[0] == key and cached[1] < cached[2] <= n:
            he = cached[1]  # a full head does not change while nothing before its end does
        else:
            he = head_end(view, hs, self.head_window_tokens, self._price, self._owned)
            self._he_cache = (key, he, n)
        rs = self._recent.rs(view, self._owned)
        return Regions(view.length(), hs, he, rs)

    def _reset_walk(self, view: Any) -> None:
        self._recent.reset(view, self._price, self._owned)
        regions = self._compute_regions(view)
        spans = [
            (chunk.message_ids[0], chunk.message_ids[-1], len(chunk.message_ids))
            for chunk in (self._memory.chunks[c] for c in self._memory.order)
        ]
        start = frontier_start(view, regions, spans, view.position_of)
        self._walk = FrontierWalk(position=start)
        self._scan_start = start

    def _sync(self, ctx: StrategyContext) -> Regions:
        """Catch up with other managers' records and with the view; advance the frontier."""
        self._state = ctx.state
        view = ctx.view
        chunks_changed = self._catch_up(ctx.state)
        edits = view.revision[1]
        if edits != self._view_edits or chunks_changed:
            self._view_edits = edits
            self._reset_walk(view)
        else:
            self._recent.advance(view, self._price)
        regions = self._compute_regions(view)
        if self._regions is not None and regions.he < self._regions.he and regions.hs == self._regions.hs:
            # The head shrank (a call at its end got its result and the pair no longer fits):
            # messages the walk passed as head are middle now, so walk again (4.4).
            self._reset_walk(view)
            regions = self._compute_regions(view)
        self._walk.advance(view, regions, owned=self._owned, cost=self._price, target=self.target_chunk_tokens)
        self._regions = regions
        return regions

    # -- the strategy protocol -----------------------------------------------------------------

    async def initialize(self, ctx: StrategyContext) -> None:
        """Load this namespace's records on this branch; writes nothing (4.14)."""
        self._clear()
        state = ctx.state
        self._memory.reporter = lambda key, problem: state.report(key, problem)
        self._memory.load(ctx.state.items(self.kind + "/"))
        self._revision = ctx.state.revision
        self._derive()
        self._sync(ctx)

    async def on_new_message(self, message: Message, ctx: StrategyContext) -> None:
        self._sync(ctx)

    def is_ready(self) -> bool:
        return self._in_flight is None and self._next_unit() is None

    def pending_work(self) -> str | None:
        if self._in_flight is not None:
            return self._in_flight
        if self.is_ready():
            return None
        parts = []
        closes = len(self._walk.closable)
        if closes:
            parts.append(f"{closes} chunk{'s' if closes != 1 else ''} to close")
        queued = len(self._queued())
        if queued:
            parts.append(f"{queued} to compress")
        merges = sum(1 for level in (1, 2) if self.hierarchical and self._merge_group(level) is not None)
        if merges:
            parts.append(f"{merges} merge{'s' if merges != 1 else ''}")
        if not parts and self.closes_trailing_chunk and self._walk.trailing_closable():
            parts.append("1 trailing chunk to close")
        return ", ".join(parts) or "background work pending"

    def _queued(self) -> list[str]:
        memory = self._memory
        held = memory.newest_by_last(self.holdback_chunks)
        queued = [c for c in self._unsummarised if c not in held and not memory.failed(c)]
        queued.sort(key=lambda c: memory.chunks[c].first_sequence)
        return queued

    def _merge_group(self, level: int) -> list[str] | None:
        """The first group of ``merge_threshold`` adjacent level-``level`` summaries (4.9)."""
        memory = self._memory
        candidates = [s for s in self._roots.get(level, ()) if s not in self._failed_members.get(level, set())]
        if len(candidates) < self.merge_threshold:
            return None
        spans = sorted((memory.chunk_span(s), s) for s in candidates)
        run: list[str] = []
        previous_last = None
        for (first, last), sid in spans:
            if run and previous_last is not None and first == previous_last + 1:
                run.append(sid)
            else:
                run = [sid]
            previous_last = last
            if len(run) >= self.merge_threshold:
                return run[: self.merge_threshold]
        return None

    def _next_unit(self) -> tuple[str, Any] | None:
        if self._walk.closable:
            return ("close", None)
        queued = self._queued()
        if queued:
            return ("l1", queued[0])
        if self.hierarchical:
            for level in (1, 2):
                group = self._merge_group(level)
                if group is not None:
                    return ("merge", (level, group))
        if self.closes_trailing_chunk and self._walk.trailing_closable():
            return ("trailing", None)
        return None

    async def tick(self, ctx: StrategyContext) -> bool:
        """Run the highest-priority unit to its end (4.5)."""
        self._sync(ctx)
        if ctx.model is None or self._in_flight is not None or ctx.compression_in_flight:
            return False
        unit = self._next_unit()
        if unit is None:
            return False
        kind, payload = unit
        if kind == "close":
            await self._close(ctx, self._walk.closable)
        elif kind == "trailing":
            walk = self._walk
            await self._close(ctx, [walk.running])
            walk.running, walk.running_cost = [], 0
        elif kind == "l1":
            await self._compress_chunk(ctx, payload)
        else:
            level, group = payload
            await self._merge(ctx, level, group)
        return True

    # -- units ---------------------------------------------------------------------------------

    async def _close(self, ctx: StrategyContext, chunks: list[list[Message]]) -> None:
        """Close chunks: raise the floor first; write the records only once it rose (5)."""
        newest = max(m.sequence for chunk in chunks for m in chunk)
        await ctx.mark_compression_read(newest)
        made = [Chunk(c[0].id, tuple(m.id for m in c), c[0].sequence, c[-1].sequence) for c in chunks]
        await ctx.state.set_many({f"{self.kind}/chunk/{c.id}": c.to_json() for c in made})
        for chunk in made:
            self._memory.add_chunk(chunk)
            if chunk.id in self._memory.chunks:
                self._unsummarised.add(chunk.id)
        if chunks is self._walk.closable:
            self._walk.closable = []
        self._advance_scan(ctx.view)

    def _advance_scan(self, view: Any) -> None:
        regions = self._regions
        if regions is None:
            return
        p = self._scan_start
        while p < regions.rs and (regions.in_head(p) or self._owned(view.id_at(p))):
            p += 1
        self._scan_start = p

    def _middle_items(self, view: Any, regions: Regions) -> list[_Item]:
        """Middle items in position order (4.10 step 2): each compressed chunk through its highest
        summary, every other middle message raw."""
        memory = self._memory
        items: list[_Item] = []
        for level in (1, 2, 3):
            for sid in self._roots[level]:
                record = memory.summaries[sid]
                position = None
                for message_id in record.summary.message_ids:
                    position = view.position_of(message_id)
                    if position is not None:
                        break
                if position is not None:
                    items.append(_Item(position, summary=record.summary))
        for chunk_id in self._unsummarised:
            for message_id in memory.chunks[chunk_id].message_ids:
                position = view.position_of(message_id)
                if position is not None and regions.in_middle(position):
                    items.append(_Item(position, message=view.at(position)))
        p = self._scan_start
        while p < regions.ts:
            if regions.in_head(p):
                p = regions.he
                continue
            if not self._owned(view.id_at(p)):
                items.append(_Item(p, message=view.at(p)))
            p += 1
        items.sort(key=lambda item: item.position)
        return items

    def _reduce(self, message: Message) -> CompiledMessage | None:
        return reduce_message(
            message, summary_participant=self.summary_participant, cap=self.request_message_tokens, estimator=self.estimator
        )

    def _prior(self, view: Any, regions: Regions, before: int) -> tuple[list[CompiledMessage], int]:
        """Prior context of a target starting at ``before``: the newest middle items before it
        within ``compression_context_tokens``, and the newest sequence they show."""
        chosen: list[list[CompiledMessage]] = []
        newest = 0
        total = 0
        for item in reversed(self._middle_items(view, regions)):
            if item.position >= before:
                continue
            if item.summary is not None:
                shown = list(recall_pair(item.summary))
                sequence = item.summary.last_sequence
            else:
                reduced = self._reduce(item.message)  # type: ignore[arg-type]
                shown = [reduced] if reduced is not None else []
                sequence = item.message.sequence  # type: ignore[union-attr]
            cost = sum(self.estimator(m.content) for m in shown)
            if total + cost > self.compression_context_tokens:
                break
            total += cost
            chosen.append(shown)
            newest = max(newest, sequence)
        return [m for shown in reversed(chosen) for m in shown], newest

    def _head(self, view: Any, regions: Regions, before: int) -> tuple[list[CompiledMessage], int]:
        if regions.he > before or regions.he <= regions.hs:
            return [], 0
        shown: list[CompiledMessage] = []
        newest = 0
        for p in range(regions.hs, regions.he):
            message = view.at(p)
            reduced = self._reduce(message)
            if reduced is not None:
                shown.append(reduced)
            newest = max(newest, message.sequence)
        return shown, newest

    def _request(self, messages: list[CompiledMessage]) -> CompletionRequest:
        return CompletionRequest(
            tuple(messages),
            system=system_text(self.summary_participant),
            max_tokens=self.compression_max_tokens,
            model=self.compression_model,
        )

    async def _ask(self, ctx: StrategyContext, request: CompletionRequest, describe: str):
        self._in_flight = describe
        try:
            return await ctx.model.complete(request)  # type: ignore[union-attr]
        finally:
            self._in_flight = None

    async def _reject(self, ctx: StrategyContext, key: str, limit: int, members: tuple[str, ...] = ()) -> None:
        before = self._memory.attempts.get(key, Attempts())
        rejections = before.rejections + 1
        after = Attempts(rejections, rejections >= limit, members)
        await ctx.state.set(f"{self.kind}/attempts/{key}", after.to_json())
        self._memory.attempts[key] = after
        if after.failed:
            self._derive()

    async def _compress_chunk(self, ctx: StrategyContext, chunk_id: str) -> None:
        """An L1 unit (4.7): prepare (floor, request) in the turn, ask outside it, commit."""
        view = ctx.view
        regions = self._regions or self._sync(ctx)
        chunk = self._memory.chunks[chunk_id]
        targets = [view.get(i) for i in chunk.message_ids]
        present = [m for m in targets if m is not None]
        first = min((view.position_of(m.id) for m in present), default=None)
        if first is None:
            first = first_position_at_or_after(view, chunk.first_sequence)
        head, head_newest = self._head(view, regions, first)
        prior, prior_newest = self._prior(view, regions, first)
        target_newest = max((m.sequence for m in present), default=0)
        await ctx.mark_compression_read(max(head_newest, prior_newest, target_newest))
        # Build the target from the view as it stands after the raise (N6).
        present = [m for m in (view.get(i) for i in chunk.message_ids) if m is not None]
        reduced = [r for r in (self._reduce(m) for m in present) if r is not None]
        marker = CompiledMessage("user", (TextBlock(MARKER),))
        instruction = CompiledMessage("user", (TextBlock(self.l1_instruction.format(target=self.summary_target_tokens)),))
        request = self._request(head + prior + [marker] + reduced + [instruction])
        completion = await self._ask(ctx, request, f"compressing chunk {chunk_id}")
        self._catch_up(ctx.state)
        if chunk_id in self._memory.l1_of or chunk_id not in self._memory.chunks:
            return  # another manager summarised it meanwhile
        text = completion_text(completion)
        if completion.stop_reason != "end_turn" or not text:
            await self._reject(ctx, chunk_id, self.l1_attempt_limit)
            return
        summary_id = f"L1-{self._memory.next_n}"
        record = SummaryRecord(
            Summary(summary_id, 1, text, chunk.message_ids, chunk.first_sequence, chunk.last_sequence), chunk=chunk_id
        )
        await ctx.state.set(f"{self.kind}/summary/{summary_id}", record.to_json())
        self._take_summary(record)

    async def _merge(self, ctx: StrategyContext, level: int, group: list[str]) -> None:
        """A merge unit (4.9): level-``level`` summaries into one of the next level."""
        view = ctx.view
        regions = self._regions or self._sync(ctx)
        memory = self._memory
        members = [memory.summaries[s] for s in group]
        new_level = level + 1
        first_ids = members[0].summary.message_ids
        first = next((p for p in (view.position_of(i) for i in first_ids) if p is not None), None)
        if first is None:
            first = first_position_at_or_after(view, members[0].summary.first_sequence)
        head, head_newest = self._head(view, regions, first)
        prior, prior_newest = self._prior(view, regions, first)
        if level == 1:
            raw = [m for m in (view.get(i) for s in members for i in memory.chunks[s.chunk].message_ids) if m is not None]  # type: ignore[index]
            target_newest = max((m.sequence for m in raw), default=0)
        else:
            children = [memory.summaries[c].summary for s in members for c in s.children]
            target_newest = max((c.last_sequence for c in children), default=0)
        # A raise that fails counts as no attempt (N6): it propagates before anything is counted.
        await ctx.mark_compression_read(max(head_newest, prior_newest, target_newest))
        if level == 1:
            raw = [m for m in (view.get(i) for s in members for i in memory.chunks[s.chunk].message_ids) if m is not None]  # type: ignore[index]
            target = [r for r in (self._reduce(m) for m in raw) if r is not None]
            what = "the conversation"
        else:
            target = [m for c in children for m in recall_pair(c)]
            what = "your earlier memories"
        marker = CompiledMessage("user", (TextBlock(MARKER),))
        instruction = CompiledMessage(
            "user",
            (TextBlock(self.merge_instruction.format(what=what, k=new_level, target=self.summary_target_tokens)),),
        )
        request = self._request(head + prior + [marker] + target + [instruction])
        completion = await self._ask(ctx, request, f"merging {len(group)} level-{level} summaries")
        self._catch_up(ctx.state)
        if any(s in memory.parent or s not in memory.summaries for s in group):
            return  # a source was merged away meanwhile
        key = f"merge:{new_level}:{group[0]}:{group[-1]}"
        text = completion_text(completion)
        if completion.stop_reason != "end_turn" or not text:
            await self._reject(ctx, key, self.merge_attempt_limit, tuple(group))
            return
        message_ids = tuple(i for s in members for i in s.summary.message_ids)
        summary_id = f"L{new_level}-{memory.next_n}"
        record = SummaryRecord(
            Summary(
                summary_id,
                new_level,
                text,
                message_ids,
                min(s.summary.first_sequence for s in members),
                max(s.summary.last_sequence for s in members),
            ),
            children=tuple(group),
        )
        await ctx.state.set(f"{self.kind}/summary/{summary_id}", record.to_json())
        self._take_summary(record)

    # -- compile -------------------------------------------------------------------------------

    def _raw(self, message: Message) -> tuple[Emitted, int]:
        shown, cut = truncate_content(message.content, self.max_message_tokens, self.estimator)
        item = Emitted(CompiledMessage(message.participant, shown), SourceEntry("raw", (message.id,)), complete=not cut)
        return item, self._price(message)

    async def select(self, ctx: StrategyContext, budget: int, options: SelectOptions) -> Selection:
        """Render head -> summaries and uncovered raw messages in order -> recent window (4.10).
        Writes nothing; over budget a compile raises ``OverBudgetError``, a preview returns it."""
        regions = self._sync(ctx)
        view = ctx.view
        emitted: list[Emitted] = []
        costs: dict[int, int] = {}
        head_tokens = middle_tokens = recent_tokens = 0

        def emit(item: Emitted, cost: int) -> int:
            emitted.append(item)
            costs[id(item)] = cost
            return cost

        for p in range(regions.hs, regions.he):
            head_tokens += emit(*self._raw(view.at(p)))
        for middle in self._middle_items(view, regions):
            if middle.summary is not None:
                summary = middle.summary
                source = SourceEntry("summary", summary.message_ids, summary.id)
                for message in recall_messages(summary, self.summary_participant):
                    middle_tokens += emit(Emitted(message, source), self.estimator(message.content))
            else:
                middle_tokens += emit(*self._raw(middle.message))  # type: ignore[arg-type]
        for p in range(regions.ts, regions.length):
            recent_tokens += emit(*self._raw(view.at(p)))
        repaired = repair_pairing(emitted)
        total = sum(costs[id(i)] if id(i) in costs else self.estimator(i.message.content) for i in repaired)
        if total > budget and not options.preview:
            pending = len(self._queued()) + len(self._walk.closable)
            raise OverBudgetError(
                f"compile for {ctx.namespace} on {ctx.branch} needs {total} tokens but the budget is {budget} "
                f"(head {head_tokens}, middle {middle_tokens}, recent {recent_tokens}; {pending} chunks await "
                "compression): await manager.drain(), raise max_tokens or lower recent_window_tokens.",
                budget=budget,
                needed=total,
                head_tokens=head_tokens,
                middle_tokens=middle_tokens,
                recent_tokens=recent_tokens,
                pending_chunks=pending,
            )
        return selection_of(repaired)

    # -- summary reads (4.13) ------------------------------------------------------------------

    def _read_sync(self) -> None:
        if self._state is not None:
            self._catch_up(self._state)

    def search_summaries(self, pattern: str | re.Pattern[str], *, limit: int = 50) -> tuple[Summary, ...]:
        """Summaries not merged away matching ``pattern``, most matches first, then newest."""
        if not isinstance(limit, int) or limit < 0:
            raise ValueError(f"limit must be a non-negative int, got {limit!r}")
        self._read_sync()
        compiled = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern)
        scored = []
        for level in (1, 2, 3):
            for sid in self._roots[level]:
                record = self._memory.summaries[sid]
                score = sum(1 for _ in compiled.finditer(record.summary.text))
                if score:
                    scored.append((-score, -record.n, record.summary))
        scored.sort(key=lambda t: (t[0], t[1]))
        return tuple(s for _a, _b, s in scored[:limit])

    def get_summaries_in_range(self, start: int | None = None, end: int | None = None) -> tuple[Summary, ...]:
        """Every summary (merged away or not) overlapping [start, end] by sequence."""
        self._read_sync()
        out = []
        for record in self._memory.summaries.values():
            s = record.summary
            if (end is None or s.first_sequence <= end) and (start is None or s.last_sequence >= start):
                out.append((s.first_sequence, s.level, record.n, s))
        out.sort(key=lambda t: t[:3])
        return tuple(t[3] for t in out)

    def get_summary(self, summary_id: str) -> Summary | None:
        """The summary with that id, merged away or not, or ``None``."""
        self._read_sync()
        return self._memory.public(summary_id)

    # -- head window reset (4.12) --------------------------------------------------------------

    async def transition_text(self, ctx: StrategyContext) -> str:
        """Generate a transition note from the head and up to three summaries (raising the floor
        first). ``No earlier context.`` when there is nothing to read."""
        regions = self._sync(ctx)
        view = ctx.view
        head = [view.at(p) for p in range(regions.hs, regions.he)]
        memory = self._memory
        high = sorted(
            (memory.summaries[s].summary for level in (2, 3) for s in self._roots[level]),
            key=lambda s: s.last_sequence,
            reverse=True,
        )[:3]
        low = sorted((memory.summaries[s].summary for s in self._roots[1]), key=lambda s: s.last_sequence, reverse=True)
        chosen = (high + low[: 3 - len(high)])[:3]
        chosen.sort(key=lambda s: s.first_sequence)
        if not head and not chosen:
            return "No earlier context."
        if ctx.model is None:
            raise CompressionError(
                f"reset_head_window() with no text needs a compression model to write the transition note "
                f"(namespace {ctx.namespace} on {ctx.branch}); pass text or configure a model"
            )
        newest = max([m.sequence for m in head] + [s.last_sequence for s in chosen])
        await ctx.mark_compression_read(newest)
        parts = [TRANSITION_REQUEST]
        lines = []
        for message in head:
            reduced = self._reduce(message)
            if reduced is None:
                continue
            text = " ".join(b.text for b in reduced.content if isinstance(b, TextBlock))
            speaker = message.participant
            if text.startswith(f"{speaker}: "):
                lines.append(text)
            else:
                lines.append(f"{speaker}: {text}")
        if lines:
            opening = "\n".join(lines)
            if len(opening) > 8000:
                opening = opening[:8000] + "\n[...truncated...]"
            parts.append("Opening of the conversation:\n\n" + opening)
        if chosen:
            parts.append("Your recent memories:\n\n" + "\n\n---\n\n".join(s.text for s in chosen))
        parts.append("Write only the note.")
        request = CompletionRequest(
            (CompiledMessage("user", (TextBlock("\n\n".join(parts)),)),),
            system=TRANSITION_SYSTEM,
            max_tokens=1500,
            model=self.compression_model,
        )
        completion = await self._ask(ctx, request, "writing a transition note")
        text = completion_text(completion)
        if completion.stop_reason != "end_turn" or not text:
            raise CompressionError(
                f"the model did not write a transition note (stop reason {completion.stop_reason!r}); nothing was written"
            )
        return text

    async def start_head_at(self, ctx: StrategyContext, sequence: int) -> None:
        """Start the head window at the message with this sequence (a topic transition)."""
        await ctx.state.set(f"{self.kind}/head-start", sequence)
        self._memory.head_start = sequence
        self._view_edits = None  # the old head becomes middle: walk again
        self._sync(ctx)

    # -- ingress sharding (7) ------------------------------------------------------------------

    def shard_message(
        self, participant: str, content: Sequence[ContentBlock], metadata: Mapping[str, Any] | None
    ) -> list[tuple[str, tuple[ContentBlock, ...], dict[str, Any]]] | None:
        """With ``adaptive_resolution``, a long message without audience blocks as shards sharing
        a body id; ``None`` to store it whole (C6, W3)."""
        if not self.adaptive_resolution or has_audience(content):
            return None
        texts = [b.text for b in content if isinstance(b, TextBlock)]
        whole = "".join(texts)
        if estimate_text(whole) < 2 * self.target_chunk_tokens:
            return None
        pieces = split_text(whole, 3 * self.target_chunk_tokens)
        if len(pieces) < 2:
            return None
        body_id = "bg-" + hashlib.sha256(whole.encode("utf-8")).hexdigest()[:16]
        others = tuple(b for b in content if not isinstance(b, TextBlock))
        shards = []
        for index, piece in enumerate(pieces):
            blocks: tuple[ContentBlock, ...] = (TextBlock(piece),) + (others if index == 0 else ())
            meta = dict(metadata or {})
            meta.update({"body_id": body_id, "shard_index": index, "shard_count": len(pieces)})
            shards.append((participant, blocks, meta))
        return shards


_SEAMS = (
    re.compile(r"\n(?=#)"),
    re.compile(r"\n(?=```)"),
    re.compile(r"\n\n"),
    re.compile(r"\n"),
    re.compile(r"[.!?] "),
    re.compile(r"\s"),
)


def split_text(text: str, size: int) -> list[str]:
    """Split ``text`` into pieces of about ``size`` characters, each up to 25% longer to end at a
    good seam (a heading, a code fence, a blank line, a newline, a sentence end, any whitespace;
    else a hard cut). Joining the pieces gives the text back exactly."""
    pieces = []
    start = 0
    longest = size + size // 4
    while len(text) - start > longest:
        window = text[start : start + longest]
        cut = None
        for seam in _SEAMS:
            ends = [m.end() for m in seam.finditer(window) if m.end() > size // 2]
            if ends:
                cut = min(ends, key=lambda e: abs(e - size))
                break
        if cut is None:
            cut = size
        pieces.append(text[start : start + cut])
        start += cut
    pieces.append(text[start:])
    return pieces
