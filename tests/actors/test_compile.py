"""Compiles: injections, provenance, the budget, PassthroughStrategy and WindowedPassthroughStrategy
(SPEC 3.2, 3.3.1, P1, C1, C2; STRATEGIES 1.2, 1.4, 1.5, 1.6, 2, 3).

Most tests price content with ``chars`` (one token per character of text, string tool-result
content, and a tool call's ``input["cost"]``; no per-message overhead), so budgets can be read off
the test; STRATEGIES 1.1 lets a strategy take any estimator, and a compile prices its injections
with the strategy's estimator.

Sections:
  1. Helpers
  2. Injections (3.3.1)
  3. Provenance (P1)
  4. The budget (STRATEGIES 1.2)
  5. PassthroughStrategy (C1, STRATEGIES 2)
  6. WindowedPassthroughStrategy (C2, STRATEGIES 3)
  7. Provider forms carry no audience (3.3.1)
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pytest

from asides.actors import Injection, MessageInjection, OverBudgetError, open_runtime
from asides.store import TextBlock, ToolResultBlock, ToolUseBlock, text, thinking, tool_result, tool_use
from asides.strategies import PassthroughStrategy, WindowedPassthroughStrategy
from asides.strategies._tokens import default_estimate
from tests.helpers import Raw, dump, message_body, seed_records, sibling_store

BIG = {"max_tokens": 10_000_000, "reserve_for_response": 0}
STUB = (
    "[this call's result isn't shown in this context. If you need its output and the tool only reads, "
    "call it again; you'll get what it returns now.]"
)
ANCHOR_KEY = f"agents/ann/{WindowedPassthroughStrategy.ANCHOR}"


# -- 1. Helpers ---------------------------------------------------------------------------------


def chars(content: Any) -> int:
    """One token per character of text and string tool-result content; a tool call costs its
    ``input["cost"]``."""
    total = 0
    for block in content:
        if isinstance(block, TextBlock):
            total += len(block.text)
        elif isinstance(block, ToolResultBlock):
            if isinstance(block.content, str):
                total += len(block.content)
            else:
                total += sum(len(b.text) for b in block.content if isinstance(b, TextBlock))
        elif isinstance(block, ToolUseBlock):
            total += int(block.input.get("cost", 0))
    return total


class Recorder:
    """A host strategy delegating to ``inner``, recording each ``select``'s budget and options."""

    name = "recorder"
    marks_compression_reads = True

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner or PassthroughStrategy()
        self.estimator = self.inner.estimator
        self.budgets: list[int] = []
        self.options: list[Any] = []

    async def initialize(self, ctx) -> None:
        await self.inner.initialize(ctx)

    async def on_new_message(self, message, ctx) -> None:
        return None

    async def select(self, ctx, budget, options):
        self.budgets.append(budget)
        self.options.append(options)
        return await self.inner.select(ctx, budget, options)

    async def tick(self, ctx) -> bool:
        return False

    def is_ready(self) -> bool:
        return True


def texts_of(compiled) -> list[str]:
    return [b.text for m in compiled.messages for b in m.content if isinstance(b, TextBlock)]


def ids_of(compiled) -> list[tuple[str, ...]]:
    return [e.message_ids for e in compiled.provenance.entries]


async def write_all(m, items) -> list[Any]:
    out = []
    for participant, content in items:
        out.append(await m.add_message(participant, content))
    return out


# -- 2. Injections ------------------------------------------------------------------------------


async def test_system_injections_go_to_system_injections(store_path):
    """SPEC 3.3.1: ``system`` injection content goes to ``CompiledContext.system_injections`` (in
    the order given), never into the messages."""
    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann") as m:
            await m.add_message("user", [text("hi")])
            compiled = await m.compile(
                **BIG,
                injections=[
                    Injection("mem", "system", [text("one"), text("two")]),
                    Injection("tools", "system", [text("three")]),
                ],
            )
            assert compiled.system_injections == (text("one"), text("two"), text("three"))
            assert [(msg.participant, msg.content) for msg in compiled.messages] == [("user", (text("hi"),))]
            assert [e.kind for e in compiled.provenance.entries] == ["raw"]
            assert compiled.token_estimate >= default_estimate((text("hi"),))


async def test_before_and_after_user_surround_the_last_user_message_case_insensitively(store_path):
    """SPEC 3.3.1: ``before_user``/``after_user`` become ``system_context:<namespace>`` messages placed
    before/after the last message whose participant is ``user`` (case-insensitive), in the order
    given; their provenance kind is ``injection``."""
    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann") as m:
            stored = await write_all(
                m,
                [
                    ("user", [text("q1")]),
                    ("assistant", [text("a1")]),
                    ("USER", [text("q2")]),
                    ("assistant", [text("a2")]),
                    ("carol", [text("c")]),
                ],
            )
            compiled = await m.compile(
                **BIG,
                injections=[
                    Injection("mem", "before_user", [text("B1")]),
                    Injection("notes", "after_user", [text("A1")]),
                    Injection("mem2", "before_user", [text("B2")]),
                    Injection("sys", "system", [text("S")]),
                    Injection("notes2", "after_user", [text("A2")]),
                ],
            )
            assert [(msg.participant, texts_of_one(msg)) for msg in compiled.messages] == [
                ("user", ["q1"]),
                ("assistant", ["a1"]),
                ("system_context:mem", ["B1"]),
                ("system_context:mem2", ["B2"]),
                ("USER", ["q2"]),
                ("system_context:notes", ["A1"]),
                ("system_context:notes2", ["A2"]),
                ("assistant", ["a2"]),
                ("carol", ["c"]),
            ]
            kinds = [e.kind for e in compiled.provenance.entries]
            assert kinds == ["raw", "raw", "injection", "injection", "raw", "injection", "injection", "raw", "raw"]
            assert [e.message_ids for e in compiled.provenance.entries if e.kind == "raw"] == [(s.id,) for s in stored]
            assert compiled.system_injections == (text("S"),)

            # "User" counts as user too, and the last one wins
            await m.add_message("User", [text("q3")])
            compiled = await m.compile(**BIG, injections=[Injection("mem", "before_user", [text("B")])])
            assert [texts_of_one(msg) for msg in compiled.messages][-2:] == [["B"], ["q3"]]


def texts_of_one(message) -> list[str]:
    return [b.text for b in message.content if isinstance(b, TextBlock)]


async def test_without_a_user_message_after_user_goes_last_and_before_user_is_dropped(store_path):
    """SPEC 3.3.1: with no ``user`` message in the compile, an ``after_user`` injection goes last and
    a ``before_user`` one is dropped (documented)."""
    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann") as m:
            await write_all(m, [("assistant", [text("a1")]), ("carol", [text("c1")]), ("users", [text("not a user")])])
            compiled = await m.compile(
                **BIG,
                injections=[Injection("mem", "before_user", [text("B")]), Injection("notes", "after_user", [text("A")])],
            )
            assert [(msg.participant, texts_of_one(msg)) for msg in compiled.messages] == [
                ("assistant", ["a1"]),
                ("carol", ["c1"]),
                ("users", ["not a user"]),
                ("system_context:notes", ["A"]),
            ]
            assert [e.kind for e in compiled.provenance.entries] == ["raw", "raw", "raw", "injection"]

    # a user message hidden from the reader is no user message of this compile
    async with open_runtime(sibling_store(store_path, "s2")) as rt:
        async with rt.manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann") as m:
            await write_all(m, [("assistant", [text("a1")]), ("user", [text("for bob", ["bob"])])])
            compiled = await m.compile(
                **BIG,
                injections=[Injection("mem", "before_user", [text("B")]), Injection("notes", "after_user", [text("A")])],
            )
            assert [(msg.participant, texts_of_one(msg)) for msg in compiled.messages] == [
                ("assistant", ["a1"]),
                ("system_context:notes", ["A"]),
            ]


@pytest.mark.parametrize("position", ["user", "System", "before", "", None])
def test_an_injection_position_outside_the_three_is_refused(position):
    """SPEC 3.3.1: ``position`` is one of ``system``, ``before_user``, ``after_user``."""
    with pytest.raises(ValueError):
        Injection("ns", position, [text("x")])


async def test_message_injections_are_appended_last_and_counted_against_the_budget(store_path):
    """SPEC 3.3.1, STRATEGIES 1.2: message injections are the newest entries of the compile, in the
    order given (provenance kind ``injection``), and their estimate comes out of the budget."""
    for make in (PassthroughStrategy, lambda **kw: WindowedPassthroughStrategy(re_anchor_fraction=1.0, **kw)):
        async with open_runtime(store_path) as rt:
            async with rt.manager("agents/ann", strategy=make(estimator=chars), view_reader="ann") as m:
                stored = await write_all(m, [("user", [text("a" * 10)]), ("assistant", [text("b" * 10)]), ("user", [text("c" * 10)])])
                whole = await m.preview_context(max_tokens=30, reserve_for_response=0)
                assert ids_of(whole) == [(s.id,) for s in stored]
                injected = [MessageInjection("assistant", [text("i" * 6)]), MessageInjection("tool-bot", [text("j" * 4)])]
                compiled = await m.preview_context(max_tokens=30, reserve_for_response=0, message_injections=injected)
                assert [(msg.participant, texts_of_one(msg)) for msg in compiled.messages] == [
                    ("assistant", ["b" * 10]),
                    ("user", ["c" * 10]),
                    ("assistant", ["i" * 6]),
                    ("tool-bot", ["j" * 4]),
                ]
                assert [e.kind for e in compiled.provenance.entries] == ["raw", "raw", "injection", "injection"]
                assert compiled.token_estimate == 30
                assert set(compiled.provenance.raw_bodies) == {stored[1].id, stored[2].id}


# -- 3. Provenance ------------------------------------------------------------------------------


async def test_provenance_kinds_raw_bodies_and_a_repair_entry(store_path):
    """SPEC P1, STRATEGIES 1.5, 1.6: one entry per compiled message with kind ``raw``, ``injection``
    or ``repair`` (a stub the strategy wrote for a call whose result the view hides, here by
    ``view_filter``); raw bodies are the reader's view (no audiences, no hidden blocks)."""

    def no_results_of_t2(message) -> bool:
        return not any(isinstance(b, ToolResultBlock) and b.tool_use_id == "t2" for b in message.content)

    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/writer", strategy=PassthroughStrategy()) as writer:
            stored = await write_all(
                writer,
                [
                    ("user", [text("ask", ["ann"]), text("for bob", ["bob"]), text("plain")]),
                    ("assistant", [text("calling"), tool_use("t1", "f"), tool_use("t2", "g")]),
                    ("user", [tool_result("t1", "one")]),
                    ("user", [tool_result("t2", "two")]),
                    ("assistant", [text("done")]),
                ],
            )
        for make in (PassthroughStrategy, WindowedPassthroughStrategy):
            async with rt.manager(f"agents/ann-{make.name}", strategy=make(), view_reader="ann", view_filter=no_results_of_t2) as ann:
                compiled = await ann.compile(**BIG, message_injections=[MessageInjection("user", [text("now")])])
            entries = compiled.provenance.entries
            assert [(e.kind, e.message_ids) for e in entries] == [
                ("raw", (stored[0].id,)),
                ("raw", (stored[1].id,)),
                ("repair", ()),
                ("raw", (stored[2].id,)),
                ("raw", (stored[4].id,)),
                ("injection", ()),
            ]
            assert compiled.messages[2].participant == "user"
            assert compiled.messages[2].content == (tool_result("t2", STUB),)
            assert dict(compiled.provenance.raw_bodies) == {
                stored[0].id: (text("ask"), text("plain")),
                stored[1].id: stored[1].content,
                stored[2].id: stored[2].content,
                stored[4].id: stored[4].content,
            }
            assert all(compiled.provenance.complete.values())
            assert all(e.summary_id is None for e in entries)


async def test_provenance_complete_is_false_for_a_truncated_message(store_path):
    """SPEC P1, STRATEGIES 1.4: with ``max_message_tokens`` a raw message over the cap is shown
    truncated (the exact marker), priced at what is shown, and reported ``complete=False``."""
    async with open_runtime(store_path) as rt:
        strategy = WindowedPassthroughStrategy(max_message_tokens=50)
        async with rt.manager("agents/ann", strategy=strategy, view_reader="ann") as m:
            call = await m.add_message("assistant", [tool_use("t1", "read")])
            long = await m.add_message(
                "user", [text("x" * 600, ["ann"]), text("later"), tool_result("t1", "result"), text("secret" * 100, ["bob"])]
            )
            short = await m.add_message("assistant", [text("fine")])
            compiled = await m.compile(**BIG)
            original = default_estimate((text("x" * 600), text("later"), tool_result("t1", "result")))
            shown = compiled.messages[1].content
            assert shown == (
                text("x" * 150 + f"\n\n[truncated — original was {original} tokens]"),
                tool_result("t1", "[content omitted — context budget exceeded]"),
            )
            assert dict(compiled.provenance.complete) == {call.id: True, long.id: False, short.id: True}
            assert compiled.provenance.raw_bodies[long.id] == (text("x" * 600), text("later"), tool_result("t1", "result"))
            assert compiled.token_estimate == sum(default_estimate(msg.content) for msg in compiled.messages)
            # the truncated message is priced at what is shown: the window fits exactly that budget
            # (priced as stored it would not, and the anchor would move)
            head = rt.store.head("main")
            assert default_estimate(long.content) > compiled.token_estimate
            again = await m.compile(max_tokens=compiled.token_estimate, reserve_for_response=0)
            assert again == compiled
            assert rt.store.head("main") == head


# -- 4. The budget ------------------------------------------------------------------------------


@pytest.mark.parametrize("arguments", [{"max_tokens": -1}, {"reserve_for_response": -1}, {"max_tokens": -5, "reserve_for_response": -5}])
async def test_a_negative_budget_is_refused_before_select(store_path, arguments):
    """STRATEGIES 1.2: a negative ``max_tokens`` or ``reserve_for_response`` is refused with
    ``ValueError`` before anything is selected; nothing is written."""
    async with open_runtime(store_path) as rt:
        recorder = Recorder(WindowedPassthroughStrategy())
        async with rt.manager("agents/ann", strategy=recorder, view_reader="ann") as m:
            await m.add_message("user", [text("hi")])
            before = dump(rt.store)
            for call in (m.compile, m.preview_context):
                with pytest.raises(ValueError):
                    await call(**arguments)
            assert recorder.budgets == []
            assert dump(rt.store) == before


async def test_budget_is_max_tokens_minus_reserve_minus_injections(store_path):
    """STRATEGIES 1.2: B = max_tokens - reserve_for_response - I, where I prices each injection and
    each message injection as a message of its content; B below 0 counts as 0; the compile as a
    whole fits max_tokens - reserve_for_response."""
    async with open_runtime(store_path) as rt:
        recorder = Recorder()
        async with rt.manager("agents/ann", strategy=recorder, view_reader="ann") as m:
            for i in range(30):
                await m.add_message("user" if i % 2 else "assistant", [text(f"message number {i} " * 3)])
            injections = [
                Injection("a", "system", [text("abc")]),
                Injection("b", "before_user", [text("abcdef"), text("g")]),
                Injection("c", "after_user", [tool_result("t", "result text")]),
            ]
            message_injections = [MessageInjection("user", [text("x" * 9)])]
            cost = sum(default_estimate(i.content) for i in injections) + default_estimate(message_injections[0].content)
            compiled = await m.compile(
                max_tokens=1000, reserve_for_response=100, injections=injections, message_injections=message_injections
            )
            assert recorder.budgets == [1000 - 100 - cost]
            assert compiled.token_estimate <= 1000 - 100
            await m.compile(max_tokens=400, reserve_for_response=0)
            assert recorder.budgets[-1] == 400
            await m.compile(max_tokens=100, reserve_for_response=200)
            assert recorder.budgets[-1] == 0
            compiled = await m.compile(max_tokens=20, reserve_for_response=0, injections=injections)
            assert recorder.budgets[-1] == 0
            # nothing selected, so no user message: after_user goes last, before_user is dropped
            assert [(msg.participant, e.kind) for msg, e in zip(compiled.messages, compiled.provenance.entries, strict=False)] == [
                ("system_context:c", "injection")
            ]


# -- 5. PassthroughStrategy ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "costs,budget,kept",
    [
        ([10, 10, 10, 10], 40, [0, 1, 2, 3]),  # the whole view fits exactly (equal fits)
        ([10, 10, 10, 10], 1000, [0, 1, 2, 3]),
        ([10, 10, 10, 10], 39, [1, 2, 3]),  # the longest fitting suffix
        ([10, 10, 10, 10], 25, [2, 3]),
        ([1, 50, 10, 10], 30, [2, 3]),  # stops at the first message that does not fit
        ([5, 30], 30, [1]),  # the newest alone, exactly the budget
        ([5, 30], 29, []),  # the newest alone does not fit: empty, no error
        ([5, 30], 0, []),
    ],
)
async def test_passthrough_selects_the_longest_fitting_suffix(store_path, costs, budget, kept):
    """SPEC C1, STRATEGIES 2: everything when the view fits B; else the longest suffix whose total
    is <= B (equal fits), stopping at the first message that does not fit; empty when the newest
    message alone does not fit."""
    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=PassthroughStrategy(estimator=chars), view_reader="ann") as m:
            stored = await write_all(m, [("user" if i % 2 else "assistant", [text(str(i % 10) * cost)]) for i, cost in enumerate(costs)])
            before = dump(rt.store)
            for call in (m.compile, m.preview_context):
                compiled = await call(max_tokens=budget + 7, reserve_for_response=7)
                assert ids_of(compiled) == [(stored[i].id,) for i in kept]
                assert [e.kind for e in compiled.provenance.entries] == ["raw"] * len(kept)
                assert compiled.token_estimate == sum(costs[i] for i in kept) <= budget
            assert dump(rt.store) == before, "passthrough writes nothing"


async def test_passthrough_cut_has_no_unit_rule(store_path):
    """STRATEGIES 2, 1.3: passthrough's cut may begin with a tool result whose call was cut (the
    provider forms make such a sequence valid)."""
    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=PassthroughStrategy(estimator=chars), view_reader="ann") as m:
            stored = await write_all(
                m,
                [
                    ("user", [text("u" * 10)]),
                    ("assistant", [tool_use("c1", "f", {"cost": 100})]),
                    ("user", [tool_result("c1", "r")]),
                    ("assistant", [text("a" * 10)]),
                    ("user", [text("b" * 10)]),
                ],
            )
            compiled = await m.compile(max_tokens=50, reserve_for_response=0)
            assert ids_of(compiled) == [(s.id,) for s in stored[2:]]


# -- 6. WindowedPassthroughStrategy -------------------------------------------------------------


async def test_windowed_anchor_moves_only_on_a_successful_compile_that_moves_it(store_path):
    """SPEC C2, 3.3.1, STRATEGIES 3: the anchor is one state record per namespace and branch; a
    compile whose window fits writes nothing; an overflowing compile re-anchors and writes the new
    anchor (the head rises by exactly one); a preview never moves it; later compiles share the
    stable prefix."""
    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=WindowedPassthroughStrategy(estimator=chars), view_reader="ann") as m:
            stored = await write_all(m, [("user" if i % 2 else "assistant", [text(str(i) * 10)]) for i in range(10)])
            head = rt.store.head("main")
            whole = await m.compile(max_tokens=100, reserve_for_response=0)
            assert ids_of(whole) == [(s.id,) for s in stored]
            assert rt.store.head("main") == head and rt.store.get_state("main", ANCHOR_KEY) is None

            # a preview over budget: the window it would take, nothing written
            before = dump(rt.store)
            preview = await m.preview_context(max_tokens=60, reserve_for_response=0)
            assert ids_of(preview) == [(s.id,) for s in stored[-3:]]  # 0.5 * 60 = 30: three messages
            assert dump(rt.store) == before

            # the compile takes the same window and persists its start: one write
            compiled = await m.compile(max_tokens=60, reserve_for_response=0)
            assert compiled == preview
            assert rt.store.head("main") == head + 1
            assert rt.store.get_state("main", ANCHOR_KEY) == stored[-3].sequence

            # the window now grows from the anchor, writing nothing, until it overflows again
            more = await write_all(m, [("user", [text("n" * 10)]), ("assistant", [text("o" * 10)]), ("user", [text("p" * 10)])])
            head = rt.store.head("main")
            compiled = await m.compile(max_tokens=60, reserve_for_response=0)
            assert ids_of(compiled) == [(s.id,) for s in stored[-3:] + more]
            assert rt.store.head("main") == head
            # a larger budget never moves the anchor back: the window still starts there
            compiled = await m.compile(max_tokens=10_000, reserve_for_response=0)
            assert ids_of(compiled)[0] == (stored[-3].id,)
            assert rt.store.head("main") == head

            last = await m.add_message("user", [text("q" * 10)])
            head = rt.store.head("main")
            compiled = await m.compile(max_tokens=60, reserve_for_response=0)
            assert ids_of(compiled) == [(s.id,) for s in more[1:] + [last]]
            assert rt.store.head("main") == head + 1
            assert rt.store.get_state("main", ANCHOR_KEY) == more[1].sequence

        # C7: reopening resumes the anchor
        async with rt.manager("agents/ann", strategy=WindowedPassthroughStrategy(estimator=chars), view_reader="ann") as m:
            compiled = await m.preview_context(**BIG)
            assert ids_of(compiled)[0] == (more[1].id,)


@pytest.mark.parametrize("fraction,kept", [(0.5, 2), (0.25, 1), (0.7, 3), (1.0, 5), (0.01, 1)])
async def test_windowed_re_anchors_to_about_the_fraction_of_the_budget(store_path, fraction, kept):
    """STRATEGIES 3 step 3: on overflow the window becomes the newest units whose total stays
    <= re_anchor_fraction x B (at least one unit: always make progress)."""
    async with open_runtime(store_path) as rt:
        strategy = WindowedPassthroughStrategy(estimator=chars, re_anchor_fraction=fraction)
        async with rt.manager("agents/ann", strategy=strategy, view_reader="ann") as m:
            stored = await write_all(m, [("user" if i % 2 else "assistant", [text(str(i) * 10)]) for i in range(8)])
            compiled = await m.compile(max_tokens=50, reserve_for_response=0)
            assert ids_of(compiled) == [(s.id,) for s in stored[-kept:]]
            assert rt.store.get_state("main", ANCHOR_KEY) == stored[-kept].sequence


@pytest.mark.parametrize("fraction", [0.5, 1.0])
async def test_windowed_never_cuts_a_tool_call_from_its_result_at_the_window_start(store_path, fraction):
    """STRATEGIES 3 (the example), 1.3: a user message, an assistant call too large for the budget,
    its result and two later messages: the window is the two later messages, never the result
    without its call (even where the result alone would fit the target)."""
    async with open_runtime(store_path) as rt:
        strategy = WindowedPassthroughStrategy(estimator=chars, re_anchor_fraction=fraction)
        async with rt.manager("agents/ann", strategy=strategy, view_reader="ann") as m:
            stored = await write_all(
                m,
                [
                    ("user", [text("u" * 10)]),
                    ("assistant", [text("calling"), tool_use("c1", "f", {"cost": 100})]),
                    ("user", [tool_result("c1", "r")]),
                    ("assistant", [text("a" * 10)]),
                    ("user", [text("b" * 10)]),
                ],
            )
            preview = await m.preview_context(max_tokens=50, reserve_for_response=0)
            compiled = await m.compile(max_tokens=50, reserve_for_response=0)
            assert ids_of(compiled) == ids_of(preview) == [(stored[3].id,), (stored[4].id,)]
            assert rt.store.get_state("main", ANCHOR_KEY) == stored[3].sequence


async def test_windowed_newest_unit_over_budget_raises_on_compile_and_previews_its_window(store_path):
    """SPEC C2, 3.3.1, STRATEGIES 3 step 4: when the newest unit alone exceeds B, compile raises
    ``OverBudgetError`` (with ``budget`` and ``needed``) and writes nothing; a preview returns that
    window (its token_estimate shows by how much it is over) and never raises. A newest result whose
    call does not fit is refused rather than sent alone."""
    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=WindowedPassthroughStrategy(estimator=chars), view_reader="ann") as m:
            stored = await write_all(
                m,
                [
                    ("user", [text("q" * 10)]),
                    ("assistant", [tool_use("c1", "f", {"cost": 40})]),
                    ("user", [tool_result("c1", "r" * 5)]),
                ],
            )
            before = dump(rt.store)
            with pytest.raises(OverBudgetError) as info:
                await m.compile(max_tokens=35, reserve_for_response=5)
            assert (info.value.budget, info.value.needed) == (30, 45)
            assert dump(rt.store) == before
            preview = await m.preview_context(max_tokens=35, reserve_for_response=5)
            assert ids_of(preview) == [(stored[1].id,), (stored[2].id,)]
            assert preview.token_estimate == 45
            assert dump(rt.store) == before

            # a single newest message over budget, after the anchor moved once
            await m.compile(max_tokens=200, reserve_for_response=0)
            huge = await m.add_message("assistant", [text("h" * 500)])
            before = dump(rt.store)
            with pytest.raises(OverBudgetError) as info:
                await m.compile(max_tokens=200, reserve_for_response=0)
            assert (info.value.budget, info.value.needed) == (200, 500)
            assert dump(rt.store) == before
            preview = await m.preview_context(max_tokens=200, reserve_for_response=0)
            assert ids_of(preview) == [(huge.id,)] and preview.token_estimate == 500
            assert dump(rt.store) == before


@pytest.mark.parametrize("fraction", [0, 1.5, -0.5, 0.0, "half", None])
def test_windowed_re_anchor_fraction_outside_0_1_is_refused(fraction):
    """SPEC 3.3.1, STRATEGIES 3: ``0 < re_anchor_fraction <= 1``, else ``ValueError`` at construction."""
    with pytest.raises(ValueError):
        WindowedPassthroughStrategy(re_anchor_fraction=fraction)


@pytest.mark.parametrize("cap", [0, -1, 2.5])
def test_windowed_max_message_tokens_below_one_is_refused(cap):
    """STRATEGIES 1.4: a ``max_message_tokens`` that is not an int >= 1 is a ``ValueError``."""
    with pytest.raises(ValueError):
        WindowedPassthroughStrategy(max_message_tokens=cap)


@pytest.mark.parametrize(
    "record",
    ['"5"', "5.5", "-5", "[5]", '{"anchor": 5}', "true", "null", Raw("5 apples")],
    ids=["string", "float", "negative", "list", "object", "bool", "null", "not json"],
)
async def test_windowed_malformed_anchor_record_reads_as_zero(store_path, caplog, record):
    """STRATEGIES 3, SPEC E: an anchor record that is not a non-negative integer is reported (logged)
    and read as 0: the window is the whole view. A compile that must re-anchor then writes a good one."""
    body = record if isinstance(record, Raw) else json.loads(record)
    ids = seed_records(
        store_path,
        [
            ("main", "message", None, message_body("user" if i % 2 else "assistant", [{"type": "text", "text": str(i) * 10}]))
            for i in range(8)
        ]
        + [("main", "state", ANCHOR_KEY, body)],
    )
    message_ids = ids[:8]
    caplog.set_level(logging.WARNING)
    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=WindowedPassthroughStrategy(estimator=chars), view_reader="ann") as m:
            head = rt.store.head("main")
            compiled = await m.compile(max_tokens=1000, reserve_for_response=0)
            assert ids_of(compiled) == [(i,) for i in message_ids]
            assert rt.store.head("main") == head
            compiled = await m.compile(max_tokens=50, reserve_for_response=0)
            assert ids_of(compiled) == [(i,) for i in message_ids[-2:]]
            assert rt.store.head("main") == head + 1
            assert rt.store.get_state("main", ANCHOR_KEY) == 7  # the sequence of the 7th seeded message
    if body is not None:
        assert any(r.levelno >= logging.WARNING for r in caplog.records), "the malformed record was reported"


async def test_windowed_malformed_anchor_is_reported_once_with_its_record_id(store_path, caplog):
    """SPEC E, STRATEGIES 3: a malformed anchor record is reported, logged once (not at every
    compile) with its record id."""
    ids = seed_records(
        store_path,
        [("main", "message", None, message_body("user", [{"type": "text", "text": "hi"}])), ("main", "state", ANCHOR_KEY, "5")],
    )
    caplog.set_level(logging.WARNING)
    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=WindowedPassthroughStrategy(), view_reader="ann") as m:
            for _ in range(3):
                await m.compile(**BIG)
                await m.preview_context(**BIG)
    reports = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and "anchor" in r.getMessage()]
    assert len(reports) == 1, reports
    assert re.search(rf"(?<![\w.]){ids[1]}(?![\w.])", reports[0]), reports[0]


async def test_windowed_anchor_is_per_namespace_and_per_branch(store_path):
    """SPEC C7, STRATEGIES 3: one anchor record per (namespace, branch); another namespace's compile
    neither reads nor moves it."""
    async with open_runtime(store_path) as rt:
        async with (
            rt.manager("agents/ann", strategy=WindowedPassthroughStrategy(estimator=chars), view_reader="ann") as ann,
            rt.manager("agents/bob", strategy=WindowedPassthroughStrategy(estimator=chars), view_reader="bob") as bob,
        ):
            stored = await write_all(ann, [("user", [text(str(i) * 10)]) for i in range(6)])
            await ann.compile(max_tokens=40, reserve_for_response=0)
            assert rt.store.get_state("main", ANCHOR_KEY) == stored[-2].sequence
            compiled = await bob.compile(max_tokens=1000, reserve_for_response=0)
            assert ids_of(compiled) == [(s.id,) for s in stored]
            assert rt.store.get_state("main", "agents/bob/" + WindowedPassthroughStrategy.ANCHOR) is None


# -- 7. Provider forms --------------------------------------------------------------------------


def walk_keys(value: Any) -> list[str]:
    """Every dict key in a JSON value, skipping a tool call's ``input`` (the tool's own data)."""
    keys: list[str] = []
    if isinstance(value, dict):
        for key, inner in value.items():
            keys.append(key)
            if key == "input" and value.get("type") == "tool_use":
                continue
            if key == "arguments":
                continue
            keys.extend(walk_keys(inner))
    elif isinstance(value, list):
        for inner in value:
            keys.extend(walk_keys(inner))
    return keys


async def test_provider_forms_of_a_mixed_conversation_hold_no_audience_key(store_path):
    """SPEC 3.3.1: ``to_anthropic("assistant")`` and ``to_openai("assistant")`` of a compile over a
    multi-party conversation with audiences, tool calls and thinking are lists without any
    ``audience`` key (a key of that name inside a tool call's input is the tool's data)."""
    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/writer", strategy=PassthroughStrategy()) as writer:
            await write_all(
                writer,
                [
                    ("user", [text("Find it."), text("[channel: ann-dm]", ["ann"]), text("[channel: bob-dm]", ["bob"])]),
                    (
                        "assistant",
                        [thinking("plan", signature="sig"), text("Searching."), tool_use("t1", "search", {"audience": ["ops"], "q": "x"})],
                    ),
                    ("user", [tool_result("t1", [text("hit"), text("more")])]),
                    ("carol", [text("Carol: any luck?"), text("for ann only", ["ann"]), tool_use("t9", "ping")]),
                    ("user", [tool_result("t9", "pong")]),
                    ("assistant", [thinking("done", signature="sig2", audience=["ann"]), text("Found it.")]),
                ],
            )
        for reader in ("ann", "bob", None):
            for make in (PassthroughStrategy, WindowedPassthroughStrategy):
                async with rt.manager(f"agents/{reader}-{make.name}", strategy=make(), view_reader=reader) as m:
                    compiled = await m.compile(**BIG)
                anthropic = compiled.to_anthropic("assistant")
                openai = compiled.to_openai("assistant")
                assert isinstance(anthropic, list) and isinstance(openai, list) and anthropic and openai
                for form in (anthropic, openai):
                    assert "audience" not in walk_keys(form), (reader, make.name)
                calls = [b for msg in anthropic for b in msg["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
                assert {"audience": ["ops"], "q": "x"} in [c["input"] for c in calls]
                rendered = json.dumps(anthropic)
                assert ("ann-dm" in rendered) == (reader == "ann")
                assert ("bob-dm" in rendered) == (reader == "bob")
