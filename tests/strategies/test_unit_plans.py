"""The autobiographical units' sans-IO core (strategies/_autobiographical/plans.py), tested with no
runtime, no store and no event loop, as hypercorn tests its protocol core: a unit's plan (the
floor to raise, the request, what it does in words) and what an answer makes (the records to
write, or a rejection) are values, and the test performs what they ask itself.

The strategy's records live in a dict here (:class:`DictState`, the part of ``StrategyState`` the
tracker reads); the messages in a bare ``LogModel``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from asides import AutobiographicalStrategy, Completion, KnowledgeStrategy
from asides.lowlevel import MessageView, StrategyContext
from asides.store._blocks import TextBlock
from asides.store._model import LogModel
from asides.store._rows import apply_rows, message_row, number_rows
from asides.strategies._autobiographical.plans import (
    Accepted,
    Ask,
    Close,
    Rejected,
    Superseded,
    judge_answer,
    judge_transition,
    plan_transition,
    plan_unit,
    take_written,
)
from asides.strategies._autobiographical.scheduling import CloseChunks, CompressChunk, MergeSummaries, next_unit
from asides.strategies._errors import AnswerRejectedError, CompressionError

pytestmark = pytest.mark.timeout(30)


class DictState:
    """A namespace's state records in a dict: what the tracker reads of ``ctx.state``."""

    def __init__(self) -> None:
        self.records: dict[str, Any] = {}
        self.order: list[str] = []
        self.reports: list[tuple[str, str]] = []

    @property
    def revision(self) -> int:
        return len(self.order)

    def written_since(self, revision: int) -> tuple[str, ...]:
        return tuple(self.order[revision:])

    def get(self, key: str, default: Any = None) -> Any:
        return self.records.get(key, default)

    def items(self, prefix: str = "") -> dict[str, Any]:
        return {k: v for k, v in self.records.items() if k.startswith(prefix)}

    def keys(self, prefix: str = "") -> list[str]:
        return sorted(k for k in self.records if k.startswith(prefix))

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        return {k: self.records[k] for k in keys if k in self.records}

    def sequences(self, prefix: str = "") -> dict[str, int]:
        return {k: i for i, k in enumerate(self.order) if k.startswith(prefix)}

    erasure_count = 0

    def report(self, key: str, problem: str) -> None:
        self.reports.append((key, problem))

    def write(self, records: Mapping[str, Any]) -> None:
        """What the runtime does with a plan's or an outcome's records: write them."""
        for key, value in records.items():
            self.records[key] = value
            self.order.append(key)


def history(count: int) -> LogModel:
    model = LogModel()
    items = [(("ann", "bob")[i % 2], (TextBlock(f"message {i}: " + "word " * 40),), None, 1.0 + i) for i in range(count)]
    numbered, encoded = number_rows(model, model.next_id, [[message_row("main", *item) for item in items]])
    apply_rows(model, numbered, encoded=encoded)
    return model


def started(strategy: AutobiographicalStrategy, count: int = 40) -> tuple[StrategyContext, DictState]:
    state = DictState()
    view = MessageView(history(count), "main", reader=None)
    ctx = StrategyContext(view=view, model=None, namespace="ns", branch="main", state=state)  # type: ignore[arg-type]
    strategy.tracker.load(ctx)
    return ctx, state


def small(cls: type[AutobiographicalStrategy] = AutobiographicalStrategy, **options: Any) -> AutobiographicalStrategy:
    settings: dict[str, Any] = dict(target_chunk_tokens=120, head_window_tokens=60, recent_window_tokens=120, holdback_chunks=0)
    settings.update(options)
    return cls(**settings)


def close_all(strategy: AutobiographicalStrategy, ctx: StrategyContext, state: DictState) -> Close:
    unit = next_unit(strategy.tracker, strategy)
    assert isinstance(unit, CloseChunks)
    plan = plan_unit(strategy, ctx.view, unit)
    assert isinstance(plan, Close)
    state.write(plan.records)
    take_written(strategy, plan, ctx.view)
    return plan


def first_ask(strategy: AutobiographicalStrategy, ctx: StrategyContext, state: DictState) -> Ask:
    close_all(strategy, ctx, state)
    unit = next_unit(strategy.tracker, strategy)
    assert isinstance(unit, CompressChunk)
    plan = plan_unit(strategy, ctx.view, unit)
    assert isinstance(plan, Ask)
    return plan


def test_a_close_plans_the_floor_and_the_chunk_records_and_changes_nothing_until_they_are_taken() -> None:
    strategy = small()
    ctx, state = started(strategy)
    unit = next_unit(strategy.tracker, strategy)
    assert isinstance(unit, CloseChunks)
    plan = plan_unit(strategy, ctx.view, unit)
    assert isinstance(plan, Close)
    assert plan.chunks and all(key.startswith("autobiographical/chunk/") for key in plan.records)
    newest = max(ctx.view.get(i).sequence for chunk in plan.chunks for i in chunk.message_ids)  # type: ignore[union-attr]
    assert plan.floor == newest
    # Planning wrote nothing and left the strategy's state as it was: the same unit is still next.
    assert state.records == {} and next_unit(strategy.tracker, strategy) == unit
    state.write(plan.records)
    take_written(strategy, plan, ctx.view)
    assert isinstance(next_unit(strategy.tracker, strategy), CompressChunk)


def test_a_chunk_closed_again_after_another_manager_summarised_it_is_not_queued_again() -> None:
    """Two managers of one namespace plan the same close; one writes it and summarises the first
    chunk, then the other's close is written and taken: the summarised chunk waits for nothing
    (it was asked for again and again, each answer superseded, and a drain never ended)."""
    first, second = small(), small()
    ctx, state = started(first)
    second.tracker.load(ctx)
    late = plan_unit(second, ctx.view, CloseChunks())
    assert isinstance(late, Close)
    plan = first_ask(first, ctx, state)
    outcome = judge_answer(first, plan, Completion("end_turn", "I remember the opening."))
    assert isinstance(outcome, Accepted)
    state.write(outcome.records)
    take_written(first, outcome, ctx.view)
    second.tracker.catch_up(state)  # type: ignore[arg-type]
    state.write(late.records)
    take_written(second, late, ctx.view)
    summarised = plan.unit.chunk_id  # type: ignore[union-attr]
    assert next_unit(second.tracker, second) != CompressChunk(summarised)
    assert summarised not in second.tracker.unsummarised


def test_a_level_one_plan_asks_for_the_chunk_and_covers_it_with_the_floor() -> None:
    strategy = small()
    ctx, state = started(strategy)
    plan = first_ask(strategy, ctx, state)
    chunk = strategy.tracker.memory.chunks[plan.unit.chunk_id]  # type: ignore[union-attr]
    assert set(chunk.message_ids) <= set(plan.request.source_ids)
    shown = [ctx.view.get(i) for i in plan.request.source_ids]
    assert plan.floor == max(m.sequence for m in shown if m is not None)
    assert plan.describe.startswith("compressing messages ")
    text = " ".join(b.text for m in plan.request.messages for b in m.content if isinstance(b, TextBlock))
    assert all(ctx.view.get(i).content[0].text in text for i in chunk.message_ids)  # type: ignore[union-attr]
    assert plan.request.messages[-1].participant == "user" and plan.request.max_tokens == strategy.compression_max_tokens


def test_an_accepted_answer_makes_the_summary_record_and_a_second_answer_is_superseded() -> None:
    strategy = small()
    ctx, state = started(strategy)
    plan = first_ask(strategy, ctx, state)
    outcome = judge_answer(strategy, plan, Completion("end_turn", "I remember the opening."))
    assert isinstance(outcome, Accepted)
    ((key, value),) = outcome.records.items()
    assert key == f"autobiographical/summary/{outcome.summary.id}" and value["text"] == "I remember the opening."
    assert strategy.tracker.memory.summaries == {}  # judged, not taken: nothing changed yet
    state.write(outcome.records)
    take_written(strategy, outcome, ctx.view)
    assert outcome.summary.id in strategy.tracker.memory.summaries
    # The same unit answered again (a late answer) writes nothing.
    assert isinstance(judge_answer(strategy, plan, Completion("end_turn", "again")), Superseded)


def test_a_rejected_answer_is_counted_with_its_reason_and_fails_the_unit_at_its_limit() -> None:
    strategy = small(l1_attempt_limit=2)
    ctx, state = started(strategy)
    plan = first_ask(strategy, ctx, state)
    first = judge_answer(strategy, plan, Completion("stop", "I remember."))
    assert isinstance(first, Rejected)
    assert first.error.reason == "stop_reason 'stop' is not 'end_turn'" and not first.error.unit_failed
    assert "answer 1 of 2 rejected" in str(first.error) and plan.describe in str(first.error)
    assert list(first.records) == [f"autobiographical/attempts/{plan.unit.chunk_id}"]  # type: ignore[union-attr]
    state.write(first.records)
    take_written(strategy, first, ctx.view)
    second = judge_answer(strategy, plan, Completion("end_turn", "   "))
    assert isinstance(second, Rejected) and second.error.unit_failed and second.error.reason == "the answer is empty"
    state.write(second.records)
    take_written(strategy, second, ctx.view)
    assert plan.unit.chunk_id in strategy.failed_units()  # type: ignore[union-attr]
    assert next_unit(strategy.tracker, strategy) != plan.unit  # never asked again


def test_a_rejection_raised_between_the_model_and_the_strategy_is_judged_as_one() -> None:
    strategy = small()
    ctx, state = started(strategy)
    plan = first_ask(strategy, ctx, state)
    outcome = judge_answer(strategy, plan, AnswerRejectedError("the answer is about 9000 tokens", reason="too long"))
    assert isinstance(outcome, Rejected) and outcome.error.reason == "too long"
    assert isinstance(judge_answer(strategy, plan, "not a completion"), Rejected)


def test_a_merge_plan_asks_for_the_group_and_its_answer_makes_the_next_level() -> None:
    strategy = small(merge_threshold=2)
    ctx, state = started(strategy, count=80)
    close_all(strategy, ctx, state)
    answered = 0
    while isinstance(unit := next_unit(strategy.tracker, strategy), CompressChunk):
        answered += 1
        plan = plan_unit(strategy, ctx.view, unit)
        assert isinstance(plan, Ask)
        outcome = judge_answer(strategy, plan, Completion("end_turn", f"memory of {unit.chunk_id}"))
        assert isinstance(outcome, Accepted)
        state.write(outcome.records)
        take_written(strategy, outcome, ctx.view)
    assert answered >= 2 and isinstance(unit, MergeSummaries) and unit.level == 1
    merge = plan_unit(strategy, ctx.view, unit)
    assert isinstance(merge, Ask) and merge.describe.startswith("merging 2 memories of ")
    outcome = judge_answer(strategy, merge, Completion("end_turn", "the whole stretch"))
    assert isinstance(outcome, Accepted) and outcome.summary.summary.level == 2
    assert outcome.summary.children == unit.group


def test_knowledge_plans_with_its_own_instruction_and_records() -> None:
    strategy = small(KnowledgeStrategy)
    ctx, state = started(strategy)
    plan = first_ask(strategy, ctx, state)
    assert "Decision:" in plan.request.messages[-1].content[0].text  # type: ignore[union-attr]
    outcome = judge_answer(strategy, plan, Completion("end_turn", "Fact: the room is 4B."))
    assert isinstance(outcome, Accepted) and all(k.startswith("knowledge/summary/") for k in outcome.records)


def test_a_transition_plan_covers_the_head_and_its_answer_is_the_note() -> None:
    strategy = small(head_window_tokens=400)
    ctx, _state = started(strategy)
    regions = strategy.tracker.regions
    assert regions is not None
    plan = plan_transition(strategy, ctx.view, regions)
    assert plan is not None and plan.floor >= ctx.view.at(regions.he - 1).sequence
    assert judge_transition(Completion("end_turn", "We moved on.")) == "We moved on."
    with pytest.raises(CompressionError, match="stop_reason 'max_tokens'"):
        judge_transition(Completion("max_tokens", "We mo"))
    empty = small()
    ctx, _state = started(empty, count=0)
    assert plan_transition(empty, ctx.view, empty.tracker.regions) is None  # type: ignore[arg-type]
