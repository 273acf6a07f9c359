"""Strategies as the runtime sees them: the ContextStrategy protocol, the small protocols for
optional capabilities, and the words strategies say to people (``pending_work()``,
``OverBudgetError``, the offline model's memories). Behaviour through the public API."""

from __future__ import annotations

import re
from typing import Any

import pytest

import asides
import asides.strategies
from asides import (
    AutobiographicalStrategy,
    CompiledMessage,
    Completion,
    CompletionRequest,
    ContextStrategy,
    ExtractiveModel,
    KnowledgeStrategy,
    OverBudgetError,
    PassthroughStrategy,
    StrategyCapabilityError,
    Summary,
    TextBlock,
    WindowedPassthroughStrategy,
    open_runtime,
    text,
)
from asides.lowlevel import (
    DescribesPendingWork,
    HasEstimator,
    HasHeadWindow,
    ReadsSummaries,
    Selection,
    SelectOptions,
    ShardsMessages,
    StrategyContext,
)

CAPABILITIES = (ShardsMessages, DescribesPendingWork, ReadsSummaries, HasHeadWindow, HasEstimator)
BIG = {"max_tokens": 10_000_000, "reserve_for_response": 0}


def chars(content: Any) -> int:
    return sum(len(b.text) for b in content if isinstance(b, TextBlock))


def test_the_protocols_are_public_in_their_home():
    """Each protocol has one public home, its ``__module__``: ``ContextStrategy`` is
    ``asides``'s (and the strategies layer's, SPEC 3.3), the capabilities are
    ``asides.lowlevel``'s, for strategy authors (docs/api.md). Their old imports warn
    (tests/package/test_deprecations.py)."""
    import asides.lowlevel

    assert ContextStrategy.__module__ == "asides" and asides.strategies.ContextStrategy is ContextStrategy
    for protocol in CAPABILITIES:
        name = protocol.__name__
        assert name in asides.lowlevel.__all__ and protocol.__module__ == "asides.lowlevel"
        assert getattr(asides.lowlevel, name) is protocol


@pytest.mark.parametrize(
    ("strategy", "offers"),
    [
        (PassthroughStrategy(), {DescribesPendingWork, HasEstimator}),
        (WindowedPassthroughStrategy(), {DescribesPendingWork, HasEstimator}),
        (AutobiographicalStrategy(), set(CAPABILITIES)),
        (KnowledgeStrategy(), set(CAPABILITIES)),
    ],
    ids=["passthrough", "windowed", "autobiographical", "knowledge"],
)
def test_each_bundled_strategy_offers_exactly_its_capabilities(strategy, offers):
    assert isinstance(strategy, ContextStrategy)
    assert {p for p in CAPABILITIES if isinstance(strategy, p)} == offers


class Newest:
    """A host's own strategy with only the core protocol: the newest message, nothing else."""

    name = "newest"
    marks_compression_reads = True

    async def initialize(self, ctx: StrategyContext) -> None:
        return None

    async def on_new_message(self, message: Any, ctx: StrategyContext) -> None:
        return None

    async def select(self, ctx: StrategyContext, budget: int, options: SelectOptions) -> Selection:
        view = ctx.view
        if view.length() == 0:
            return Selection()
        newest = view.at(view.length() - 1)
        return Selection((CompiledMessage(newest.participant, newest.content),), (asides.SourceEntry("raw", (newest.id,)),))

    async def tick(self, ctx: StrategyContext) -> bool:
        return False

    def is_ready(self) -> bool:
        return True


class NewestWithNotes(Newest):
    """The same, plus summary reads: one fixed note."""

    name = "newest-with-notes"
    note = Summary("L1-1", 1, "a note", ("m",), 1, 1)

    def search_summaries(self, pattern: str | re.Pattern[str], *, limit: int = 50) -> tuple[Summary, ...]:
        return (self.note,) if re.search(pattern, self.note.text) else ()

    def get_summaries_in_range(self, start: int | None = None, end: int | None = None) -> tuple[Summary, ...]:
        return (self.note,)

    def get_summary(self, summary_id: str) -> Summary | None:
        return self.note if summary_id == self.note.id else None


async def test_a_strategy_with_only_the_core_protocol_gets_the_defaults(store_path):
    """A strategy that offers none of the capabilities: summary reads answer nothing, a long
    message is stored whole, ``reset_head_window`` is refused naming the strategy, and the
    manager prices injections with the default estimate."""
    strategy = Newest()
    assert isinstance(strategy, ContextStrategy) and not any(isinstance(strategy, p) for p in CAPABILITIES)
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager("agents/a", strategy=strategy)
        stored = await m.add_message("user", [text("x" * 50_000)])
        assert m.get_message(stored.id).content == (TextBlock("x" * 50_000),)
        assert m.search_summaries(".") == () and m.get_summaries_in_range() == () and m.get_summary("L1-1") is None
        assert m.is_ready() and m.pending_work() is None
        with pytest.raises(StrategyCapabilityError, match="'newest'"):
            await m.reset_head_window("moving on")
        compiled = await m.compile(**BIG)
        assert [b.text for msg in compiled.messages for b in msg.content] == ["x" * 50_000]


async def test_a_strategy_that_reads_summaries_is_asked_for_them(store_path):
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager("agents/a", strategy=NewestWithNotes())
        assert m.search_summaries("note") == (NewestWithNotes.note,)
        assert m.search_summaries("absent") == ()
        assert m.get_summaries_in_range(0, 5) == (NewestWithNotes.note,)
        assert m.get_summary("L1-1") == NewestWithNotes.note


# -- the words -----------------------------------------------------------------------------------


async def test_pending_work_names_a_held_back_stretch_as_set_aside(store_path):
    """With ``holdback_chunks=1`` and one stretch ready to close, nothing will be compressed yet:
    ``pending_work()`` says the messages are set aside, not that they are to be compressed."""
    strategy = AutobiographicalStrategy(
        target_chunk_tokens=1, head_window_tokens=0, recent_window_tokens=0, holdback_chunks=1, estimator=chars
    )
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager("agents/a", strategy=strategy)
        for i in range(5):
            await m.add_message("user", [text(f"m{i}")])
        await m.preview_context(**BIG)
        assert m.pending_work() == "messages 1–4 to set aside for later compression (no compression model)"
        for i in range(5, 8):
            await m.add_message("user", [text(f"m{i}")])
        await m.preview_context(**BIG)
        assert m.pending_work() == "messages 1–4 to compress (no compression model)"


async def test_pending_work_of_knowledge_names_the_trailing_stretch(store_path):
    """Knowledge closes the trailing open stretch once nothing else waits, and says which."""
    strategy = KnowledgeStrategy(target_chunk_tokens=1000, head_window_tokens=0, recent_window_tokens=0, estimator=chars)
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager("agents/k", strategy=strategy)
        for i in range(5):
            await m.add_message("user", [text(f"m{i}")])
        await m.preview_context(**BIG)
        assert m.pending_work() == "messages 1–5 to compress (no compression model)"


async def test_the_offline_model_keeps_one_bullet_when_it_merges_memories():
    """``ExtractiveModel`` answers with ``- `` lines; merging memories that are such lines (a
    higher level) keeps one bullet per line, never ``- - ``."""
    memory = "- user: we picked Lisbon.\n- assistant: I will book the hall."
    request = CompletionRequest(
        (
            CompiledMessage("user", (TextBlock("[Memory point] Everything from here to the next instruction is what..."),)),
            CompiledMessage("user", (TextBlock("[Recall L1-1]"),)),
            CompiledMessage("assistant", (TextBlock(memory),)),
            CompiledMessage("user", (TextBlock("[Recall L1-2]"),)),
            CompiledMessage("assistant", (TextBlock("* * the hall is booked."),)),
            CompiledMessage("user", (TextBlock("Combine it. Aim for about 100 tokens."),)),
        )
    )
    answer = await ExtractiveModel().complete(request)
    assert isinstance(answer, Completion)
    lines = asides.completion_text(answer).splitlines()
    assert lines == ["- user: we picked Lisbon.", "- the hall is booked."]


@pytest.mark.parametrize(("max_tokens", "reserve"), [(100, 100), (10, 4_000)])
async def test_windowed_names_a_reserve_that_takes_all_of_max_tokens(store_path, max_tokens, reserve):
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager("agents/w", strategy=WindowedPassthroughStrategy(estimator=chars))
        await m.add_message("user", [text("hello")])
        with pytest.raises(OverBudgetError) as info:
            await m.compile(max_tokens=max_tokens, reserve_for_response=reserve)
        assert str(info.value) == (
            f"compile for agents/w on main needs 5 tokens for its newest message (with its tool partners) but the budget "
            f"is 0: reserve_for_response ({reserve}) takes all of max_tokens ({max_tokens}), so nothing is left for the "
            "context: lower reserve_for_response or raise max_tokens."
        )


async def test_windowed_over_budget_shows_where_the_budget_went(store_path):
    """The budget's sum (max_tokens less the reserve) is shown; lowering the reserve is offered
    when that alone would make the newest message fit, and not otherwise."""
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager("agents/w", strategy=WindowedPassthroughStrategy(estimator=chars))
        await m.add_message("user", [text("x" * 50)])
        with pytest.raises(OverBudgetError) as info:
            await m.compile(max_tokens=60, reserve_for_response=20)
        assert str(info.value) == (
            "compile for agents/w on main needs 50 tokens for its newest message (with its tool partners) but the budget "
            "is 40 (max_tokens 60 less reserve_for_response 20): lower reserve_for_response, raise max_tokens or set "
            "max_message_tokens."
        )
        with pytest.raises(OverBudgetError) as info:
            await m.compile(max_tokens=30, reserve_for_response=0)
        assert str(info.value) == (
            "compile for agents/w on main needs 50 tokens for its newest message (with its tool partners) but the budget "
            "is 30: raise max_tokens or set max_message_tokens."
        )


class ContextsSeen(Newest):
    """Newest, keeping every context it is handed, by call; no drain runs for it."""

    has_background_work = False

    def __init__(self) -> None:
        self.seen: list[tuple[str, StrategyContext]] = []

    async def on_new_message(self, message: Any, ctx: StrategyContext) -> None:
        self.seen.append(("on_new_message", ctx))

    async def select(self, ctx: StrategyContext, budget: int, options: SelectOptions) -> Selection:
        self.seen.append(("select", ctx))
        return await super().select(ctx, budget, options)


async def test_a_compile_hands_its_catch_up_and_its_select_one_context(store_path: str) -> None:
    """A compile that catches up with new messages (another namespace's, here) builds one
    strategy context: the catch-up and the selection get the same one. A preview's context is
    its own (its state is read-only)."""
    strategy = ContextsSeen()
    async with open_runtime(store_path) as runtime:
        manager = await runtime.open_manager("ns", strategy=strategy)
        other = await runtime.open_manager("other", strategy=PassthroughStrategy())
        await other.add_message("user", [asides.text("one")])
        await other.add_message("user", [asides.text("two")])
        strategy.seen.clear()
        await manager.compile(max_tokens=10_000, reserve_for_response=0)
        assert [name for name, _ in strategy.seen] == ["on_new_message", "on_new_message", "select"]
        assert len({id(ctx) for _, ctx in strategy.seen}) == 1
        await other.add_message("user", [asides.text("three")])
        strategy.seen.clear()
        await manager.preview_context(max_tokens=10_000, reserve_for_response=0)
        (_, caught_up), (_, selected) = strategy.seen
        assert selected.preview and not caught_up.preview
        await other.aclose()
        await manager.aclose()
