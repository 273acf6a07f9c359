"""Prompt caching: ``CompiledContext.to_anthropic(assistant, cache=True)`` and
``to_anthropic_request(system=, cache=True)`` (issue 24, item 3), and the cache benchmark's
arithmetic.

Breakpoints go on the stable boundaries of a compile (the end of the head window, the end of
the memories, the end of the previous turn, the end of the request), at most four in a request
(system included); without ``cache`` the forms are exactly as before.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import hypothesis.strategies as st
import trio
from hypothesis import given, settings

from asides import AutobiographicalStrategy, CompiledMessage, ExtractiveModel, PassthroughStrategy, open_runtime, text
from asides.actors._cache_points import MAX_BREAKPOINTS, boundaries
from asides.actors._compiled import CompiledContext, Provenance
from asides.store._blocks import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from asides.strategies._base import SourceEntry
from asides.strategies._provider_forms import to_anthropic


def marks(request: list[dict[str, Any]] | dict[str, Any]) -> list[tuple[int, int]]:
    messages = request["messages"] if isinstance(request, dict) else request
    return [(i, j) for i, m in enumerate(messages) for j, b in enumerate(m["content"]) if "cache_control" in b]


def stripped(value: Any) -> Any:
    """``value`` without any ``cache_control`` key."""
    if isinstance(value, dict):
        return {k: stripped(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [stripped(v) for v in value]
    return value


def flat(messages: list[dict[str, Any]]) -> list[Any]:
    return [(m["role"], stripped(b)) for m in messages for b in m["content"]]


def compile_of(messages: list[CompiledMessage], sources: list[SourceEntry]) -> CompiledContext:
    return CompiledContext(tuple(messages), (), Provenance(tuple(sources)), 0)


async def compressed(turns: int) -> list[CompiledContext]:
    """ann's compile after each of ``turns`` turns of a conversation with bob, compressed."""
    strategy = AutobiographicalStrategy(
        target_chunk_tokens=80, head_window_tokens=80, recent_window_tokens=160, summary_target_tokens=30, summary_participant="ann"
    )
    out = []
    async with open_runtime(model=ExtractiveModel()) as rt:
        ann = await rt.open_manager("ann", strategy=strategy, view_reader="ann")
        bob = await rt.open_manager("bob", strategy=PassthroughStrategy(), view_reader="bob")
        for turn in range(turns):
            await bob.add_message("bob", [text(f"Bob, turn {turn}: the venue needs {turn * 7 % 40} more chairs by Friday.")])
            await ann.add_message("ann", [text(f"Ann, turn {turn}: noted, I will ask the caterer about item {turn}.")])
            await ann.drain()
            out.append(await ann.compile(max_tokens=10**9, reserve_for_response=0))
    return out


def test_without_cache_the_forms_are_unchanged() -> None:
    ctxs = trio.run(compressed, 12)
    for ctx in ctxs:
        plain = ctx.to_anthropic("ann")
        assert ctx.to_anthropic("ann", cache=False) == plain
        assert marks(plain) == []
        assert ctx.to_anthropic_request("ann") == {"messages": plain}


def test_breakpoints_end_the_head_the_memories_and_the_request() -> None:
    """A compressed compile: the head's last block, the memories' last block and the request's
    last block carry ``cache_control``; nothing else changes, and there are at most four."""
    ctx = trio.run(compressed, 14)[-1]
    kinds = [s.kind for s in ctx.provenance.entries]
    assert "summary" in kinds and kinds[0] == "raw"
    cached = ctx.to_anthropic("ann", cache=True)
    assert stripped(cached) == ctx.to_anthropic("ann")
    points = marks(cached)
    assert 3 <= len(points) <= MAX_BREAKPOINTS
    assert points[-1] == (len(cached) - 1, len(cached[-1]["content"]) - 1), "the request's end is a breakpoint"
    texts = [cached[i]["content"][j].get("text", "") for i, j in points]
    memory_texts = {b.text for m, s in zip(ctx.messages, ctx.provenance.entries, strict=True) if s.kind == "summary" for b in m.content}
    assert any(t in memory_texts for t in texts), "the memories' end is a breakpoint"
    first_memory = kinds.index("summary")
    head_last = ctx.messages[first_memory - 1].content[-1]
    assert any(isinstance(head_last, TextBlock) and head_last.text in t for t in texts), "the head's end is a breakpoint"


def test_system_content_takes_a_breakpoint_and_the_total_stays_four() -> None:
    ctx = trio.run(compressed, 14)[-1]
    request = ctx.to_anthropic_request("ann", system="You are ann.", cache=True)
    assert request["system"] == [{"type": "text", "text": "You are ann.", "cache_control": {"type": "ephemeral"}}]
    assert 1 + len(marks(request)) <= MAX_BREAKPOINTS
    assert stripped(request["messages"]) == ctx.to_anthropic("ann")
    assert ctx.to_anthropic_request("ann", system="You are ann.") == {
        "system": [{"type": "text", "text": "You are ann."}],
        "messages": ctx.to_anthropic("ann"),
    }


def test_each_request_reads_what_the_previous_one_wrote() -> None:
    """Between two compactions, each request's prefix up to the previous request's last
    breakpoint is exactly the previous request: a cache hit on all of it. Once the compile
    shows memories, a compaction still reads back at least the head (before the first memory
    the compile cannot tell where its head ends)."""
    ctxs = trio.run(compressed, 14)
    hits = 0
    for before, after in zip(ctxs, ctxs[1:], strict=False):
        a, b = flat(before.to_anthropic("ann", cache=True)), flat(after.to_anthropic("ann", cache=True))
        points = marks(before.to_anthropic("ann", cache=True))
        blocks = before.to_anthropic("ann", cache=True)
        ends = [sum(len(m["content"]) for m in blocks[:i]) + j + 1 for i, j in points]
        covered = max((e for e in ends if a[:e] == b[:e]), default=0)
        if any(s.kind == "summary" for s in before.provenance.entries):
            assert covered > 0, "at least the head is read back"
        hits += covered == len(a)
    assert hits >= len(ctxs) // 2


def test_the_previous_turn_is_a_boundary_and_drops_first_over_four() -> None:
    """Head, memories, previous turn and request end are four breakpoints; with system content,
    the previous turn's goes."""
    messages = [
        CompiledMessage("user", (TextBlock("hello"),)),
        CompiledMessage("Context Manager", (TextBlock("[Recall L1-0]"),)),
        CompiledMessage("ann", (TextBlock("I remember the venue."),)),
        CompiledMessage("bob", (TextBlock("The chairs?"),)),
        CompiledMessage("ann", (TextBlock("Forty more."),)),
        CompiledMessage("bob", (TextBlock("Thanks."),)),
    ]
    sources = [SourceEntry("raw", ("m0",)), SourceEntry("summary", ("m1",), "L1-0"), SourceEntry("summary", ("m1",), "L1-0")]
    sources += [SourceEntry("raw", (f"m{i}",)) for i in (2, 3, 4)]
    ctx = compile_of(messages, sources)
    assert boundaries(ctx.messages, ctx.provenance.entries, "ann") == {"head": 1, "memories": 3, "previous_turn": 4, "request": 6}
    assert len(marks(ctx.to_anthropic("ann", cache=True))) == 4
    with_system = ctx.to_anthropic_request("ann", system="sys", cache=True)
    points = marks(with_system)
    assert len(points) == 3
    assert with_system["messages"][points[-1][0]]["content"][points[-1][1]]["text"].endswith("Thanks.")


_blocks = st.one_of(
    st.builds(TextBlock, st.text(min_size=1, max_size=8)),
    st.builds(lambda t: ThinkingBlock(t, "sig"), st.text(min_size=1, max_size=8)),
    st.builds(lambda n: ToolUseBlock(f"c{n}", "tool", {"n": n}), st.integers(0, 3)),
    st.builds(lambda n: ToolResultBlock(f"c{n}", "ok"), st.integers(0, 3)),
)
_messages = st.lists(
    st.tuples(st.sampled_from(["ann", "bob", "user"]), st.lists(_blocks, min_size=1, max_size=3), st.sampled_from(["raw", "summary"])),
    max_size=10,
)


@settings(max_examples=150, deadline=None)
@given(_messages)
def test_property_breakpoints_are_few_markable_and_change_nothing_else(spec: list[Any]) -> None:
    """Property: for any compile, at most four breakpoints, never on a thinking block, and the
    form without them is exactly the uncached form; the input is not mutated."""
    messages = [CompiledMessage(p, tuple(blocks)) for p, blocks, _ in spec]
    sources = [SourceEntry(kind, (f"m{n}",), "L1-0" if kind == "summary" else None) for n, (_, _, kind) in enumerate(spec)]
    ctx = compile_of(messages, sources)
    before = copy.deepcopy(messages)
    for request in (ctx.to_anthropic("ann", cache=True), ctx.to_anthropic_request("ann", system="s", cache=True)):
        listed = request["messages"] if isinstance(request, dict) else request
        points = marks(listed)
        assert len(points) + (1 if isinstance(request, dict) else 0) <= MAX_BREAKPOINTS
        assert all(listed[i]["content"][j]["type"] not in ("thinking", "redacted_thinking") for i, j in points)
        assert stripped(listed) == to_anthropic(messages, "ann", sources=sources)
        if listed:
            assert points, "a non-empty request ends on a breakpoint"
    assert messages == before
    json.dumps(ctx.to_anthropic("ann", cache=True))


def test_the_benchmarks_arithmetic() -> None:
    """The cache benchmark's count: a request's cached tokens are its longest prefix equal to the
    previous request's prefix up to one of that request's breakpoints."""
    from benchmarks.prompt_cache import READ, WRITE, Tally, cache_use

    previous = [("a", True), ("b", False), ("c", True)]
    same_then_more = [("a", False), ("b", False), ("c", False), ("d", True)]
    total, cached, written = cache_use(previous, same_then_more)
    assert (total, cached, written) == (4, 3, 1)
    total, cached, written = cache_use(previous, [("a", False), ("x", False), ("c", True)])
    assert (cached, written) == (1, 2)
    assert cache_use(None, previous) == (3, 0, 3)
    tally = Tally()
    tally.add(10, 8, 2)
    assert tally.share == 0.8 and abs(tally.cost - (8 * READ + 2 * WRITE) / 10) < 1e-9


def test_the_benchmark_runs_small() -> None:
    """A short run of both sides (the benchmark's code paths, not its figures)."""
    import asyncio

    from benchmarks.prompt_cache import run_asides, run_langchain

    asides = asyncio.run(run_asides(9, {"target_chunk_tokens": 200, "recent_window_tokens": 200, "head_window_tokens": 100}))
    assert asides.requests == 9 and 0 < asides.share < 1
    langchain = asyncio.run(run_langchain(9, {"trigger": ("tokens", 600), "keep": ("tokens", 300)}))
    assert langchain.requests == 9 and 0 <= langchain.share < 1
