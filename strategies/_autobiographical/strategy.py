"""AutobiographicalStrategy: old conversation becomes first-person memories in the agent's voice.

A compile is the head window (the opening, verbatim), then a chronological mix of summaries
(shown as recall pairs) and raw messages not yet summarised, then the recent window (verbatim).
Every message of the view is either raw or covered by a rendered summary.

The middle of the conversation is cut into *chunks* (runs of about ``target_chunk_tokens``);
each chunk becomes a level-1 summary, and with ``hierarchical`` every run of ``merge_threshold``
adjacent summaries of one level merges into one of the next level, at every level, so the
summaries a compile shows stay a few per level however long the history grows.

This module holds the options and the strategy protocol; the work lives beside it:
``tracking`` (what the records and the view say), ``scheduling`` (which unit is next, and what
waits, in words), ``plans`` (what a unit asks for and what its answer makes), ``rendering``
(the compile) and ``sharding`` (storing a long message as shards).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ...store._blocks import ContentBlock
from ...store._errors import InvalidArgumentError
from ...store._messages import Message
from ...store._names import check_participant
from .._base import Selection, SelectOptions, StrategyContext
from .._capabilities import RecordsReport, owns_under
from .._errors import CompressionError
from .._tokens import Estimator, MessageCosts, recorded_estimator
from .._truncation import truncate_content
from .._units import NO_EARLIER_CONTEXT, Judgement, UnitPlan, ask_through, judge_transition, performs_plans, run_planned_unit
from .compression import L1_INSTRUCTION, MERGE_INSTRUCTION
from .plans import Accepted, Ask, Close, Rejected, Superseded, TransitionPlan, judge_answer, plan_transition, plan_unit, take_written
from .records import Summary, describe_records
from .rendering import RenderCache, RenderSettings, render
from .scheduling import describe_failed, describe_waiting, failed_units, next_unit, pending_chunks
from .sharding import Shard, shard_message
from .tracking import Tracker

__all__ = ["AutobiographicalStrategy"]

#: How many estimates of raw messages a strategy keeps (each costs about 100 bytes): the messages
#: its windows and walk price again and again, never the whole history.
COSTS_KEPT = 4096


def _at_least(name: str, value: object, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise InvalidArgumentError(name, f"must be an int >= {minimum}, got {value!r}")
    return value


class AutobiographicalStrategy:
    """See the module docstring. Options are keyword-only; a bad value raises ``ValueError``.

    ``holdback_chunks`` newest closed chunks wait raw until as many newer ones close;
    ``recent_window_tokens`` and ``head_window_tokens`` size the verbatim windows;
    ``summary_target_tokens`` is the length asked of each memory; ``compression_context_tokens``
    bounds the earlier history a request shows; ``request_message_tokens`` caps each message in
    a request and ``max_message_tokens`` each raw message in a compile; ``adaptive_resolution``
    stores long messages as shards.
    """

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
        self.holdback_chunks = _at_least("holdback_chunks", self.default_holdback if holdback_chunks is None else holdback_chunks, 0)
        check_participant(summary_participant, "summary_participant")
        if max_message_tokens is not None:
            _at_least("max_message_tokens", max_message_tokens, 1)
        self.summary_participant = summary_participant
        self.hierarchical = bool(hierarchical)
        self.adaptive_resolution = bool(adaptive_resolution)
        self.max_message_tokens = max_message_tokens
        self._costs = MessageCosts(estimator, limit=COSTS_KEPT)
        self.estimator: Estimator = self._costs.estimator
        self._shown_costs = MessageCosts(self._shown_estimate, limit=COSTS_KEPT)
        self.tracker = self._new_tracker()
        self.render_cache = RenderCache()
        #: What a compile reads of the options (rendering is handed these, not the strategy).
        self.render_settings = RenderSettings(self.max_message_tokens, self.estimator, self.summary_participant, self.holdback_chunks)

    def recorded_options(self) -> dict[str, Any]:
        """The options as JSON, recorded when a manager starts this strategy (so that ``asides
        compile`` can rebuild it); ``"estimator": "custom"`` when it counts with its own."""
        return {
            "compression_model": self.compression_model,
            "target_chunk_tokens": self.target_chunk_tokens,
            "head_window_tokens": self.head_window_tokens,
            "recent_window_tokens": self.recent_window_tokens,
            "hierarchical": self.hierarchical,
            "adaptive_resolution": self.adaptive_resolution,
            "merge_threshold": self.merge_threshold,
            "holdback_chunks": self.holdback_chunks,
            "summary_target_tokens": self.summary_target_tokens,
            "summary_participant": self.summary_participant,
            "compression_max_tokens": self.compression_max_tokens,
            "compression_context_tokens": self.compression_context_tokens,
            "request_message_tokens": self.request_message_tokens,
            "l1_attempt_limit": self.l1_attempt_limit,
            "merge_attempt_limit": self.merge_attempt_limit,
            "max_message_tokens": self.max_message_tokens,
            "estimator": recorded_estimator(self.estimator),
        }

    def _new_tracker(self) -> Tracker:
        return Tracker(
            self.kind,
            price=self.price,
            head_window_tokens=self.head_window_tokens,
            recent_window_tokens=self.recent_window_tokens,
            target_chunk_tokens=self.target_chunk_tokens,
            holdback_chunks=self.holdback_chunks,
        )

    def price(self, message: Message) -> int:
        """What a raw message costs as a compile shows it (truncated to ``max_message_tokens``)."""
        cost = self._costs(message)
        cap = self.max_message_tokens
        if cap is None or cost <= cap:
            return cost
        return self._shown_costs(message)

    def _shown_estimate(self, content: Sequence[ContentBlock]) -> int:
        shown, _ = truncate_content(content, self.max_message_tokens, self.estimator)
        return self.estimator(shown)

    # -- the strategy protocol -----------------------------------------------------------------

    async def initialize(self, ctx: StrategyContext) -> None:
        """Load this namespace's records on this branch; writes nothing."""
        self.tracker = self._new_tracker()
        self.render_cache = RenderCache()
        self.tracker.load(ctx)

    async def on_new_message(self, message: Message, ctx: StrategyContext) -> None:
        self.tracker.sync(ctx)

    def follow_stored_state(self, ctx: StrategyContext) -> None:
        """Take in records another process wrote (it holds the compression lease); writes nothing."""
        self.tracker.sync(ctx)

    def is_ready(self) -> bool:
        return self.tracker.in_flight is None and next_unit(self.tracker, self) is None

    def pending_work(self) -> str | None:
        """``None`` when ready; else what the request that is out is doing (``compressing
        messages 470–476``), or what waits (``messages 1–40 and 2 later stretches to compress;
        6 memories of messages 1–120 to merge``). Messages are counted from 1 in the view."""
        if self.tracker.in_flight is not None:
            return self.tracker.in_flight
        if self.is_ready():
            return None
        return describe_waiting(self.tracker, self)

    def failed_units(self) -> frozenset[str]:
        """The units that have failed for good (their answers were rejected up to the attempt
        limit): they render raw and are never asked again. Keys are opaque."""
        return failed_units(self.tracker)

    def describe_failed(self, units: frozenset[str] | None = None) -> str | None:
        """The failed ``units`` (default: all) in words with the reason, e.g. ``3 stretches could
        not be compressed: the model's answers were rejected (stop_reason 'stop' is not
        'end_turn')``; ``None`` for none."""
        return describe_failed(self.tracker, units)

    def pending_chunks(self) -> int:
        """Chunks queued for a level-1 summary plus chunks the walk has cut but not recorded."""
        return pending_chunks(self.tracker, self.holdback_chunks)

    @performs_plans
    async def tick(self, ctx: StrategyContext) -> bool:
        """Run the highest-priority unit to its end through ``ctx`` (``run_planned_unit``);
        ``False`` when there is none, when a request is already out for this namespace and
        branch, or when there is no model. A runtime's drain performs the same plans itself."""
        return await run_planned_unit(self, ctx)

    # -- the unit protocol (strategies/_units.py): plans and judgements, as values ---------------

    def plan_unit(self, ctx: StrategyContext, again: UnitPlan | None = None) -> UnitPlan | None:
        """The next unit's plan (``plans``): the floor to raise and the chunk records to write
        (a close), or the floor to raise and the request to send; ``None`` when there is no unit,
        when a request is already out for this namespace and branch, or when there is no model.
        With ``again``, that plan's unit planned again from the view as it stands. Writes
        nothing."""
        if again is not None:
            return self._unit_plan(plan_unit(self, ctx.view, again.step.unit))
        tracker = self.tracker
        tracker.sync(ctx)
        if ctx.model is None or tracker.in_flight is not None or ctx.compression_in_flight:
            return None
        unit = next_unit(tracker, self)
        return None if unit is None else self._unit_plan(plan_unit(self, ctx.view, unit))

    def _unit_plan(self, step: Close | Ask) -> UnitPlan:
        if isinstance(step, Close):
            records = self.tracker.with_outline(step.records)
            return UnitPlan(floor=step.floor, records=records, describe="closing chunks", step=step)
        return UnitPlan(floor=step.floor, request=step.request, describe=step.describe, step=step)

    def judge_answer(self, ctx: StrategyContext, plan: UnitPlan, answer: object) -> Judgement:
        """What ``answer`` to ``plan``'s request makes (``plans.judge_answer``), once the strategy
        took in what other managers wrote meanwhile: the summary, the counted rejection (then
        raised), or nothing (superseded: a rejection is raised uncounted). Writes nothing."""
        self.tracker.catch_up(ctx.state)
        outcome = judge_answer(self, plan.step, answer)
        if isinstance(outcome, Superseded):
            return Judgement(rejection=outcome.error, step=outcome)
        rejection = outcome.error if isinstance(outcome, Rejected) else None
        return Judgement(records=self.tracker.with_outline(outcome.records), rejection=rejection, step=outcome)

    def took(self, ctx: StrategyContext, written: UnitPlan | Judgement) -> None:
        """Bring the tracker up to the records just written (``plans.take_written``)."""
        step = written.step
        if isinstance(step, Close | Accepted | Rejected):
            take_written(self, step, ctx.view)
            self.tracker.took_outline(written.records)

    def asking(self, plan: UnitPlan | None) -> None:
        """``plan``'s request is out (``pending_work()`` says what it does), or, ``None``, no
        request is out any more."""
        self.tracker.in_flight = None if plan is None else plan.describe

    def plan_transition(self, ctx: StrategyContext) -> UnitPlan | None:
        """The request for a topic transition note from the head and up to three summaries, its
        floor covering what it shows (``plans.plan_transition``); ``None`` when there is nothing
        to read. Refused with ``CompressionError`` when there is no model to ask."""
        regions = self.tracker.sync(ctx)
        step: TransitionPlan | None = plan_transition(self, ctx.view, regions)
        if step is None:
            return None
        if ctx.model is None:
            raise CompressionError(
                f"reset_head_window() with no text needs a compression model to write the transition note "
                f"(namespace {ctx.namespace} on {ctx.branch}); pass text or configure a model"
            )
        return UnitPlan(floor=step.floor, request=step.request, describe=step.describe, step=step)

    async def select(self, ctx: StrategyContext, budget: int, options: SelectOptions) -> Selection:
        """Render head, then summaries and uncovered raw messages in order, then the recent
        window. Writes nothing; over budget a compile raises ``OverBudgetError``, a preview
        returns the selection."""
        return render(self.render_settings, self.tracker, self.render_cache, ctx, budget, options)

    # -- summary reads -------------------------------------------------------------------------

    def search_summaries(self, pattern: str | re.Pattern[str], *, limit: int = 50) -> tuple[Summary, ...]:
        """Summaries not merged away matching ``pattern``, most matches first, then newest."""
        if not isinstance(limit, int) or limit < 0:
            raise InvalidArgumentError("limit", f"must be a non-negative int, got {limit!r}")
        tracker = self.tracker
        tracker.catch_up_for_read()
        compiled = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern)
        scored = []
        for level in tracker.levels():
            for sid in tracker.roots[level]:
                record = tracker.memory.summaries[sid]
                score = sum(1 for _ in compiled.finditer(record.summary.text))
                if score:
                    scored.append((-score, -record.n, record.summary))
        scored.sort(key=lambda t: (t[0], t[1]))
        return tuple(s for _a, _b, s in scored[:limit])

    def get_summaries_in_range(self, start: int | None = None, end: int | None = None) -> tuple[Summary, ...]:
        """Every summary (merged away or not) overlapping [start, end] by sequence: it reads the
        summaries in the range, never the others."""
        self.tracker.catch_up_for_read()
        return tuple(self.tracker.memory.summaries_in_range(start, end))

    def summaries_holding(self, words: Sequence[str]) -> tuple[Summary, ...]:
        """Every summary, merged away or not, that may hold every one of ``words`` (case-folded,
        as a search's; a superset, each with its text), in the order of
        :meth:`get_summaries_in_range`; those no longer readable (erased since) left out."""
        self.tracker.catch_up_for_read()
        return tuple(self.tracker.memory.summaries_holding(words))

    def get_summary(self, summary_id: str) -> Summary | None:
        """The summary with that id, merged away or not, or ``None``."""
        self.tracker.catch_up_for_read()
        return self.tracker.memory.public(summary_id)

    # -- the head window -----------------------------------------------------------------------

    async def transition_text(self, ctx: StrategyContext) -> str:
        """A transition note the model writes from the head and up to three summaries (raising the
        floor first, through ``ctx``); ``No earlier context.`` when there is nothing to read.
        Writes nothing else. A runtime's ``reset_head_window`` performs the same plan itself."""
        plan = self.plan_transition(ctx)
        if plan is None:
            return NO_EARLIER_CONTEXT
        assert plan.floor is not None
        await ctx.mark_compression_read(plan.floor)
        return judge_transition(await ask_through(self, ctx, plan))

    async def start_head_at(self, ctx: StrategyContext, sequence: int) -> None:
        """Start the head window at the message with this sequence (a topic transition)."""
        await ctx.state.set(f"{self.kind}/head-start", sequence)
        self.tracker.memory.head_start = sequence
        self.tracker.forget_view()  # the old head becomes middle: walk again
        self.tracker.sync(ctx)

    # -- its records, for readers of the store ------------------------------------------------

    def owns_record(self, tail: str) -> bool:
        """Whether ``tail`` is spelled as a record under ``<kind>/`` (``DescribesRecords``)."""
        return owns_under(self.kind, tail)

    def describe_records(self, records: Mapping[str, Any]) -> RecordsReport:
        """What its records hold: summaries, chunks, the head start, and the records it cannot
        read (``records.describe_records``)."""
        return describe_records(self.kind, records)

    # -- ingress sharding ----------------------------------------------------------------------

    def shard_message(self, participant: str, content: Sequence[ContentBlock], metadata: Mapping[str, Any] | None) -> list[Shard] | None:
        """With ``adaptive_resolution``, a long message without audience blocks as shards sharing
        a body id; ``None`` to store it whole."""
        if not self.adaptive_resolution:
            return None
        return shard_message(participant, content, metadata, target_chunk_tokens=self.target_chunk_tokens)
