"""AutobiographicalStrategy and KnowledgeStrategy, behaviour through the public API
(SPEC 3.2, 3.3, 3.3.1, C3, C5, C6, C7, P1; STRATEGIES 1, 4, 6, 7, 8).

Most tests price content with ``tok`` (one token per character of text, string tool-result content
and system-change text; a tool call costs ``input["cost"]`` (default 10); an image 10; no
per-message overhead), so every window, chunk and budget can be read off the test. STRATEGIES 1.1
lets every strategy take such an estimator. Conversation messages are ``body(i)``: ``m03.......``,
ten characters, ten tokens.

Work is made deterministic by writing the conversation first, through a passthrough "host"
manager, and only then opening the compressing manager with a recording ``fake_model()``: its first
drain then sees every message at once, so units run in the order 4.5 gives (closes, then L1s
oldest first, then merges lowest level first) and summary ids are predictable. ``settle`` routes a
preview through the namespace actor before draining, so every delivery has reached the strategy.

Sections:
  1. Helpers
  2. Options (4.1)
  3. Regions and chunking (4.3, 4.4)
  4. Units, ids, readiness and rejections (4.5, 4.8, 4.9)
  5. Compression requests (4.6, 4.7, 4.9, 8)
  6. Rendering a compile (4.10, 4.11, P1)
  7. Summary reads (4.13)
  8. Persistence and sharing (C7, 4.14)
  9. reset_head_window (4.12)
 10. KnowledgeStrategy (C5, 6)
 11. Ingress sharding and shard provenance (C6, 7, P1; seed rows 10 and 17)
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Callable
from typing import Any

import anyio
import pytest
import trio.testing
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from asides import image, redacted_thinking, system_change
from asides.actors import CompressionError, OverBudgetError, ReaderClaimError, StrategyCapabilityError, open_runtime
from asides.store import (
    ImageBlock,
    SystemChangeBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    text,
    thinking,
    tool_result,
    tool_use,
)
from asides.store._message_ids import ids_from_record
from asides.strategies import AutobiographicalStrategy, ExtractiveModel, KnowledgeStrategy, PassthroughStrategy
from asides.strategies._errors import ModelError
from asides.strategies._models import Completion, CompletionRequest, Usage
from asides.strategies._tokens import estimate_text
from asides.testing import FailingModel, GatedModel, ScriptedModel
from tests.helpers import dump, message_body, seed_records, sibling_store

BIG = {"max_tokens": 10_000_000, "reserve_for_response": 0}
NS = "agents/a"

SYSTEM_ASSISTANT = (
    "You are assistant. You are writing your own memory of part of a conversation, to rely on later when its "
    "messages are no longer in view."
)
MARKER = "[Memory point] Everything from here to the next instruction is what your next memory covers."
L1_TEXT = (
    "Write your memory of the stretch since the memory point. Write as yourself, in the first person, as notes you "
    "will rely on when these messages are gone. Keep what you need to carry on: names, numbers, file paths, "
    "commands, decisions and why they were made, what was asked of you and is still open, and anything you "
    "promised. Leave out what your earlier memories already hold. If the stretch was routine, say so in a sentence "
    "or two. Aim for about {target} tokens. Write only the memory itself: no preamble, no headings, no closing "
    "remarks."
)
MERGE_TEXT = (
    "You have just re-read {what} covering this period, in order. Combine it into one level-{k} memory of the "
    "whole period: what happened, what was decided and why, what is still open, and the concrete details you would "
    "need to carry on. Write as yourself, in the first person, in order of events. Aim for about {target} tokens. "
    "Write only the memory itself: no preamble, no headings, no closing remarks."
)
KNOWLEDGE_L1_TEXT = (
    "Extract the durable knowledge from the stretch since the memory point. Write one item per line, each starting "
    "with one of: Decision:, Open:, Preference:, Fact:. Decisions keep their reasons; Open: covers unfinished tasks "
    "and unanswered questions; Fact: covers names, numbers, paths and commands you will need later. Skip small talk "
    "and anything your earlier notes already hold. If nothing in the stretch is durable, write: Nothing durable. "
    "Aim for at most about {target} tokens."
)
KNOWLEDGE_MERGE_TEXT = (
    "You have just re-read {what} covering this period, in order. Merge the knowledge in it into one list for the "
    "whole period, in the same line format: keep every item that still holds, drop items a later one replaced, keep "
    "every Open: item not yet resolved, and mark resolved ones as Decision: or Fact: with the outcome. Aim for at "
    "most about {target} tokens."
)
TRANSITION_SYSTEM = "You write short transition notes between topics of one conversation. Be concise."
TRANSITION_REQUEST = (
    "The conversation is moving on to a new topic. Write a short transition note, two or three paragraphs, that "
    "carries over what matters: the original goal and what was achieved, the findings, decisions and open "
    "questions, and anything the next topic should refer back to."
)
STUB = (
    "[this call's result isn't shown in this context. If you need its output and the tool only reads, "
    "call it again; you'll get what it returns now.]"
)


# -- 1. Helpers ---------------------------------------------------------------------------------


def tok(content: Any) -> int:
    """One token per character of text; a tool call costs ``input["cost"]`` (default 10)."""
    total = 0
    for block in content:
        if isinstance(block, TextBlock):
            total += len(block.text)
        elif isinstance(block, ThinkingBlock):
            total += len(block.thinking)
        elif isinstance(block, ToolUseBlock):
            total += int(block.input.get("cost", 10))
        elif isinstance(block, ToolResultBlock):
            total += len(block.content) if isinstance(block.content, str) else tok(block.content)
        elif isinstance(block, SystemChangeBlock):
            total += len(block.text)
        else:
            total += 10
    return total


def body(i: int, size: int = 10) -> str:
    return f"m{i:02d}".ljust(size, ".")


def convo(n: int, *, start: int = 0, size: int = 10, speakers: tuple[str, str] = ("user", "assistant")) -> list[tuple[str, list[Any]]]:
    """``n`` plain messages ``body(start) ...``, speakers alternating."""
    return [(speakers[i % 2], [text(body(i, size))]) for i in range(start, start + n)]


def auto(*, target: int = 25, head: int = 0, recent: int = 0, holdback: int = 0, **kw: Any) -> AutobiographicalStrategy:
    return AutobiographicalStrategy(
        target_chunk_tokens=target,
        head_window_tokens=head,
        recent_window_tokens=recent,
        holdback_chunks=holdback,
        estimator=kw.pop("estimator", tok),
        **kw,
    )


def knowledge(*, target: int = 25, head: int = 0, recent: int = 0, **kw: Any) -> KnowledgeStrategy:
    return KnowledgeStrategy(
        target_chunk_tokens=target, head_window_tokens=head, recent_window_tokens=recent, estimator=kw.pop("estimator", tok), **kw
    )


def text_of(message: Any) -> str:
    return "\n".join(b.text for b in message.content if isinstance(b, TextBlock))


def shape(messages: Any) -> list[tuple[str, list[str]]]:
    """Compiled or request messages as (participant, [text of each block])."""
    out = []
    for m in messages:
        parts = []
        for b in m.content:
            if isinstance(b, TextBlock):
                parts.append(b.text)
            elif isinstance(b, ToolResultBlock):
                parts.append(f"<result {b.tool_use_id}: {b.content}>")
            elif isinstance(b, ToolUseBlock):
                parts.append(f"<call {b.id}>")
            else:
                parts.append(f"<{type(b).__name__}>")
        out.append((m.participant, parts))
    return out


def target_of(request: CompletionRequest) -> list[str]:
    """The texts between the last memory-point marker and the final instruction."""
    messages = list(request.messages)
    start = max(i for i, m in enumerate(messages) if text_of(m) == MARKER)
    return [text_of(m) for m in messages[start + 1 : -1]]


def instruction_of(request: CompletionRequest) -> str:
    return text_of(request.messages[-1])


def is_merge(request: CompletionRequest) -> bool:
    return instruction_of(request).startswith("You have just re-read")


def fake_model(answer: Any = None, *, numbered_by: Callable[[], list[CompletionRequest]] | None = None) -> ScriptedModel:
    """A recording test model (SPEC 3.3, 3.3.1), an ``asides.testing`` ``ScriptedModel``: answers
    request n with ``memory <n>`` unless ``answer`` says otherwise (a str or a ``Completion`` for
    every request, or a callable ``(request, n)`` giving one, an exception to raise, or ``None``
    for ``memory <n>``). ``n`` is the request's number in the record ``numbered_by()`` gives
    (default: this model's own ``requests``), so a model wrapped by a ``GatedModel`` numbers
    requests as the gate received them."""

    def respond(request: CompletionRequest) -> Completion | BaseException:
        received = numbered_by() if numbered_by is not None else model.requests
        n = max(i for i, r in enumerate(received, 1) if r is request)
        given = answer(request, n) if callable(answer) else answer
        if given is None:
            given = f"memory {n}"
        if isinstance(given, Completion | BaseException):
            return given
        return Completion("end_turn", given, Usage(1, 1))

    model = ScriptedModel(respond=respond, name="memory")
    return model


def gated_model(answer: Any = None) -> GatedModel:
    """A ``GatedModel`` holding each request until the test releases it, then answering as
    :func:`fake_model` (``answer``), numbering requests as the gate received them."""
    gate: GatedModel
    gate = GatedModel(fake_model(answer, numbered_by=lambda: gate.requests), name="gated memory")
    return gate


async def write(rt: Any, items: list[tuple[str, list[Any]]], *, branch: str = "main") -> list[Any]:
    """Write messages through a passthrough manager of another namespace (messages are shared by
    every manager on a branch, SPEC 3.3.1)."""
    writer = await rt.open_manager("host", strategy=PassthroughStrategy(), branch=branch)
    out = [await writer.add_message(p, c) for p, c in items]
    await writer.aclose()
    return out


async def settle(m: Any) -> None:
    """Let every delivery reach the strategy (a preview takes the actor's turn after them), then
    drain."""
    await m.preview_context(**BIG)
    await m.drain()


async def opened(rt: Any, strategy: Any, model: Any = None, *, ns: str = NS, **kw: Any) -> Any:
    """Open a manager and let it finish the work its first drain finds."""
    m = await rt.open_manager(ns, strategy=strategy, model=model, **kw)
    await settle(m)
    return m


def layout(compiled: Any) -> list[tuple[str, Any]]:
    """A compile as ("raw", id) / ("summary", summary id) (one per recall pair) / ("repair", ids)."""
    out: list[tuple[str, Any]] = []
    entries = compiled.provenance.entries
    i = 0
    while i < len(entries):
        e = entries[i]
        if e.kind == "summary":
            assert entries[i + 1].kind == "summary" and entries[i + 1].summary_id == e.summary_id
            out.append(("summary", e.summary_id))
            i += 2
            continue
        out.append((e.kind, e.message_ids[0] if e.kind == "raw" else e.message_ids))
        i += 1
    return out


def raw(messages: Any) -> list[tuple[str, str]]:
    return [("raw", m.id) for m in messages]


def ids(messages: Any) -> tuple[str, ...]:
    return tuple(m.id for m in messages)


def summary_ids(m: Any) -> list[str]:
    return [s.id for s in m.get_summaries_in_range()]


def state(rt: Any, prefix: str = f"{NS}/autobiographical/") -> dict[str, Any]:
    return rt.store.state_items("main", prefix)


# -- 2. Options (4.1) ---------------------------------------------------------------------------


def test_defaults_are_readable_attributes():
    """STRATEGIES 4.1, SPEC 3.3.1: the documented defaults, readable as attributes of the same
    names; Knowledge differs only in ``holdback_chunks`` (0, STRATEGIES 6)."""
    s = AutobiographicalStrategy()
    assert s.name == "autobiographical"
    assert s.marks_compression_reads is True
    expected = {
        "compression_model": None,
        "target_chunk_tokens": 2000,
        "head_window_tokens": 4000,
        "recent_window_tokens": 30000,
        "hierarchical": True,
        "adaptive_resolution": False,
        "merge_threshold": 6,
        "holdback_chunks": 1,
        "summary_target_tokens": 600,
        "summary_participant": "assistant",
        "compression_max_tokens": 4000,
        "compression_context_tokens": 50000,
        "request_message_tokens": 16000,
        "l1_attempt_limit": 3,
        "merge_attempt_limit": 5,
        "max_message_tokens": None,
    }
    assert {k: getattr(s, k) for k in expected} == expected
    k = KnowledgeStrategy()
    assert {n: getattr(k, n) for n in expected} == {**expected, "holdback_chunks": 0}
    assert KnowledgeStrategy(holdback_chunks=2).holdback_chunks == 2


def test_options_are_keyword_only():
    """STRATEGIES 4.1: options are keyword-only."""
    with pytest.raises(TypeError):
        AutobiographicalStrategy(None, 100)  # type: ignore[misc]


BAD_OPTIONS = [
    ("target_chunk_tokens", 0),
    ("summary_target_tokens", 0),
    ("compression_max_tokens", 0),
    ("request_message_tokens", 0),
    ("l1_attempt_limit", 0),
    ("merge_attempt_limit", 0),
    ("head_window_tokens", -1),
    ("recent_window_tokens", -1),
    ("compression_context_tokens", -1),
    ("merge_threshold", 1),
    ("holdback_chunks", -1),
    ("summary_participant", ""),
    ("max_message_tokens", 0),
]


@pytest.mark.parametrize("cls", [AutobiographicalStrategy, KnowledgeStrategy])
@pytest.mark.parametrize(("option", "value"), BAD_OPTIONS)
def test_each_bound_is_a_value_error(cls, option, value):
    """STRATEGIES 4.1 (and 1.4 for ``max_message_tokens``; 6: Knowledge has the same options): a
    value past each bound is a ``ValueError`` at construction."""
    with pytest.raises(ValueError):
        cls(**{option: value})


GOOD_EDGES = [
    ("target_chunk_tokens", 1),
    ("summary_target_tokens", 1),
    ("compression_max_tokens", 1),
    ("request_message_tokens", 1),
    ("l1_attempt_limit", 1),
    ("merge_attempt_limit", 1),
    ("head_window_tokens", 0),
    ("recent_window_tokens", 0),
    ("compression_context_tokens", 0),
    ("merge_threshold", 2),
    ("holdback_chunks", 0),
    ("summary_participant", "x"),
    ("max_message_tokens", 1),
]


@pytest.mark.parametrize(("option", "value"), GOOD_EDGES)
def test_each_bound_itself_is_accepted(option, value):
    """STRATEGIES 4.1: the bounds are inclusive (``>= 1``, ``>= 0``, ``>= 2``)."""
    assert getattr(AutobiographicalStrategy(**{option: value}), option) == value


# -- 3. Regions and chunking (4.3, 4.4) ---------------------------------------------------------


@pytest.mark.parametrize(("size", "length"), [(10, 4), (5, 5), (3, 9), (30, 4)])
async def test_a_chunk_closes_at_target_tokens_and_four_messages(store_path, size, length):
    """STRATEGIES 4.4 rule 2, SPEC C3: a chunk closes once its cost is ``>= target_chunk_tokens``
    AND it holds at least 4 messages. Target 25: ten-token messages close at 4 (40, not at 30
    with 3), five-token ones at 5 (exactly 25: equal is enough), three-token ones at 9 (27); a
    30-token message alone reaches the target but a chunk still waits for 4 messages. Holdback 0,
    no windows: every closed chunk gets its L1; the rest is the trailing open chunk, raw."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(2 * length + 1, size=size))
        m = await opened(rt, auto(target=25), fake_model())
        got = [s.message_ids for s in m.get_summaries_in_range()]
        assert got == [ids(msgs[:length]), ids(msgs[length : 2 * length])]
        compiled = await m.compile(**BIG)
        assert layout(compiled) == [("summary", "L1-1"), ("summary", "L1-2"), ("raw", msgs[-1].id)]


async def test_a_tool_call_never_ends_a_chunk_its_result_rides_along(store_path):
    """STRATEGIES 4.4 rule 2, 1.3, SPEC C3: a chunk never closes after a message holding a tool call
    waiting for its result: the 4th message (a call) reaches the target and the count, but the
    chunk closes one message later, holding the result too."""
    items = (
        convo(3)
        + [
            ("assistant", [tool_use("t1", "probe", {"cost": 10})]),
            ("user", [tool_result("t1", "r".ljust(10, "."))]),
        ]
        + convo(5, start=5)
    )
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, items)
        model = fake_model()
        m = await opened(rt, auto(target=25), model)
        assert [s.message_ids for s in m.get_summaries_in_range()] == [ids(msgs[:5]), ids(msgs[5:9])]
        assert target_of(model.requests[0]) == [body(0), body(1), body(2), '[tool call probe {"cost":10}]', "[tool result] r........."]


async def test_the_trailing_open_chunk_renders_raw_and_never_compresses(store_path):
    """STRATEGIES 4.4, 4.5: what is left after the last closed chunk is the trailing open chunk: it
    never closes or compresses (however long the drain), it renders raw, and it does not count as
    pending work (``is_ready()``); it closes once later messages complete it."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(3))
        model = fake_model()
        m = await opened(rt, auto(target=25), model)
        assert m.is_ready() and m.pending_work() is None
        assert model.requests == [] and m.get_summaries_in_range() == ()
        assert state(rt) == {}
        assert layout(await m.compile(**BIG)) == raw(msgs)
        more = await write(rt, convo(2, start=3))
        await settle(m)
        assert [s.message_ids for s in m.get_summaries_in_range()] == [ids(msgs + more[:1])]
        assert layout(await m.compile(**BIG)) == [("summary", "L1-1"), ("raw", more[1].id)]


async def test_holdback_one_keeps_the_newest_closed_chunk_until_another_closes(store_path):
    """STRATEGIES 4.4 holdback, SPEC C3 ("the newest closed chunk waits until another closes"):
    with ``holdback_chunks=1`` of two closed chunks only the older is compressed; the newer renders
    raw and is not pending work; once a third chunk closes the second is compressed."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(9))
        model = fake_model()
        m = await opened(rt, auto(target=25, holdback=1), model)
        assert [s.message_ids for s in m.get_summaries_in_range()] == [ids(msgs[:4])]
        assert m.is_ready() and m.pending_work() is None and len(model.requests) == 1
        chunks = state(rt, f"{NS}/autobiographical/chunk/")
        assert sorted(list(ids_from_record(v)) for v in chunks.values()) == sorted([list(ids(msgs[:4])), list(ids(msgs[4:8]))])
        assert layout(await m.compile(**BIG)) == [("summary", "L1-1")] + raw(msgs[4:])
        more = await write(rt, convo(4, start=9))
        await settle(m)
        assert [s.message_ids for s in m.get_summaries_in_range()] == [ids(msgs[:4]), ids(msgs[4:8])]
        assert layout(await m.compile(**BIG)) == [("summary", "L1-1"), ("summary", "L1-2")] + raw(msgs[8:] + more)


@pytest.mark.parametrize(("holdback", "compressed"), [(0, 2), (1, 1), (2, 0)])
async def test_holdback_counts_closed_chunks(store_path, holdback, compressed):
    """STRATEGIES 4.4: the newest ``holdback_chunks`` closed chunks are not queued; holdback 0
    compresses each chunk as soon as it closes."""
    async with open_runtime(store_path) as rt:
        await write(rt, convo(9))
        model = fake_model()
        m = await opened(rt, auto(target=25, holdback=holdback), model)
        assert len(m.get_summaries_in_range()) == compressed == len(model.requests)
        assert len(state(rt, f"{NS}/autobiographical/chunk/")) == 2


async def test_head_window_is_verbatim_at_the_start_and_never_compressed(store_path):
    """STRATEGIES 4.3, 4.10, SPEC C3: the head window (the oldest messages within
    ``head_window_tokens``) renders raw first and is never part of a chunk; chunking starts after
    it."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(11))
        m = await opened(rt, auto(target=25, head=20), fake_model())
        assert [s.message_ids for s in m.get_summaries_in_range()] == [ids(msgs[2:6]), ids(msgs[6:10])]
        assert layout(await m.compile(**BIG)) == raw(msgs[:2]) + [("summary", "L1-1"), ("summary", "L1-2")] + raw(msgs[10:])


async def test_recent_window_is_verbatim_at_the_end_and_never_compressed(store_path):
    """STRATEGIES 4.3, 4.10, SPEC C3: the newest messages within ``recent_window_tokens`` render raw
    last and are never chunked, however many there are."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(12))
        m = await opened(rt, auto(target=25, recent=40), fake_model())
        assert [s.message_ids for s in m.get_summaries_in_range()] == [ids(msgs[:4]), ids(msgs[4:8])]
        assert layout(await m.compile(**BIG)) == [("summary", "L1-1"), ("summary", "L1-2")] + raw(msgs[8:])


async def test_a_unit_straddling_the_recent_start_joins_the_recent_window_whole(store_path):
    """STRATEGIES 4.3, 1.3: the recent window (15 tokens) would start at a tool result; the unit
    (call + result) joins it whole, so the recent window costs 20, and the call is no chunk's.
    Observed through ``OverBudgetError``'s region totals (4.10 step 5)."""
    items = convo(4) + [
        ("assistant", [tool_use("t1", "probe", {"cost": 10})]),
        ("user", [tool_result("t1", "r".ljust(10, "."))]),
    ]
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, items)
        m = await opened(rt, auto(target=25, recent=15), fake_model("memory"))
        assert [s.message_ids for s in m.get_summaries_in_range()] == [ids(msgs[:4])]
        with pytest.raises(OverBudgetError) as info:
            await m.compile(max_tokens=1, reserve_for_response=0)
        err = info.value
        assert (err.head_tokens, err.middle_tokens, err.recent_tokens) == (0, len("[Recall L1-1]") + len("memory"), 20)
        assert layout(await m.preview_context(max_tokens=1, reserve_for_response=0)) == [("summary", "L1-1")] + raw(msgs[4:])


async def test_a_unit_that_would_straddle_the_head_end_leaves_the_head_whole(store_path):
    """STRATEGIES 4.3: a call + result pair (20 tokens) does not fit a 15-token head, so the head is
    empty (not just the call): the pair opens the first chunk. With a 20-token head it is the head."""
    items = [
        ("assistant", [tool_use("t1", "probe", {"cost": 10})]),
        ("user", [tool_result("t1", "r".ljust(10, "."))]),
    ] + convo(3, start=2)
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, items)
        m = await opened(rt, auto(target=25, head=15), fake_model("memory"))
        assert [s.message_ids for s in m.get_summaries_in_range()] == [ids(msgs[:4])]
        with pytest.raises(OverBudgetError) as info:
            await m.compile(max_tokens=1, reserve_for_response=0)
        assert info.value.head_tokens == 0
        other = await opened(rt, auto(target=25, head=20), fake_model("memory"), ns="agents/b")
        assert other.get_summaries_in_range() == ()
        with pytest.raises(OverBudgetError) as info:
            await other.compile(max_tokens=1, reserve_for_response=0)
        assert (info.value.head_tokens, info.value.middle_tokens) == (20, 30)


async def test_a_head_that_shrinks_when_a_result_arrives_chunks_the_call_with_its_result(store_path):
    """STRATEGIES 4.4 ("Boundaries depend only on the view, not on when closing runs"), 4.3, 1.3 (a
    chunk boundary never falls inside a unit). Head window 25: m0 (10) and a tool call (10) fit
    while the call's result is not written; once the result (10) arrives, the unit (20) no longer
    fits and the head is m0 alone. Messages written one by one (the manager syncing after each)
    must chunk exactly as when the whole conversation is seen at once: [call, result, m3, m4]
    closes, the compile is m0, its recall pair, then m5, m6 raw, and no stub is needed."""
    items = (
        convo(1)
        + [
            ("assistant", [tool_use("t1", "probe", {"cost": 10})]),
            ("user", [tool_result("t1", "r" * 10)]),
        ]
        + convo(4, start=3)
    )
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, items)
        at_once = await opened(rt, auto(target=25, head=25), fake_model(), ns="agents/at-once")
        assert [s.message_ids for s in at_once.get_summaries_in_range()] == [ids(msgs[1:5])]
    async with open_runtime(sibling_store(store_path, "second")) as rt:
        m = await rt.open_manager(NS, strategy=auto(target=25, head=25), model=fake_model())
        msgs = [await m.add_message(p, c) for p, c in items]
        await settle(m)
        assert [s.message_ids for s in m.get_summaries_in_range()] == [ids(msgs[1:5])]
        assert layout(await m.compile(**BIG)) == [("raw", msgs[0].id), ("summary", "L1-1")] + raw(msgs[5:])


async def test_coverage_holds_when_the_head_shrinks_after_a_close(store_path):
    """SPEC C3 (every message raw or covered), STRATEGIES 4.10 step 2, 4.3. Head window 25 after a
    reset: the marker (21) and a pending tool call (4) fill it; a close runs meanwhile (the old
    head, five 5-token messages, closed by rule 2 while the drain's first request was held). When
    the result (10) arrives the unit (14) no longer fits, so the head is the marker alone and call
    and result are middle: the compile must hold the call, raw, before its result."""
    items = convo(5, size=5) + convo(8, start=5)
    async with open_runtime(store_path) as rt:
        await write(rt, items)
        model = gated_model()
        m = await rt.open_manager(NS, strategy=auto(target=25, head=25), model=model)
        await model.wait_for_request()
        await m.reset_head_window("x")
        marker = m.get_all_messages()[-1]
        call = await m.add_message("assistant", [tool_use("t1", "probe", {"cost": 4})])
        model.open()
        await settle(m)
        result = await m.add_message("user", [tool_result("t1", "r" * 10)])
        await settle(m)
        compiled = await m.compile(**BIG)
        covered = {i for kind, ref in layout(compiled) if kind == "summary" for i in m.get_summary(ref).message_ids}
        listed = covered | {ref for kind, ref in layout(compiled) if kind == "raw"}
        assert listed == {x.id for x in m.get_all_messages()}
        assert layout(compiled) == [
            ("raw", marker.id),
            ("summary", "L1-2"),
            ("summary", "L1-1"),
            ("summary", "L1-3"),
            ("raw", call.id),
            ("raw", result.id),
        ]


async def test_zero_windows_mean_no_head_and_no_recent_window(store_path):
    """STRATEGIES 4.3: ``head_window_tokens=0`` gives no head (the very first message is chunked)
    and ``recent_window_tokens=0`` an empty recent window (the trailing open chunk is middle)."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(6))
        m = await opened(rt, auto(target=25, head=0, recent=0), fake_model("memory"))
        assert [s.message_ids for s in m.get_summaries_in_range()] == [ids(msgs[:4])]
        with pytest.raises(OverBudgetError) as info:
            await m.compile(max_tokens=1, reserve_for_response=0)
        err = info.value
        assert (err.head_tokens, err.middle_tokens, err.recent_tokens) == (0, 13 + 6 + 20, 0)


async def test_a_message_widened_into_compressed_history_gets_a_chunk_of_its_own(store_path):
    """STRATEGIES 4.4 (last bullet), 4.3, 4.10: a message hidden from ann when her chunks closed
    (bob's block) is widened to include her (an edit that hides nothing, SPEC N4); it now lies
    inside her first chunk, compressible and unowned, so the gap rule gives it a chunk of its own:
    it is compressed by itself and rendered at its position, between the summaries."""
    items = convo(2) + [("user", [text(body(2), audience=["bob"])])] + convo(7, start=3)
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, items)
        m = await opened(rt, auto(target=25), fake_model(), view_reader="ann")
        first, second = (s.message_ids for s in m.get_summaries_in_range())
        assert first == (msgs[0].id, msgs[1].id, msgs[3].id, msgs[4].id)
        assert second == ids(msgs[5:9])
        await m.edit_message(msgs[2].id, [text(body(2), audience=["bob", "ann"])])
        await settle(m)
        assert m.get_summary("L1-3").message_ids == (msgs[2].id,)
        assert layout(await m.compile(**BIG)) == [("summary", "L1-1"), ("summary", "L1-3"), ("summary", "L1-2"), ("raw", msgs[9].id)]


async def test_holdback_is_by_the_position_of_the_last_message(store_path):
    """STRATEGIES 4.4 holdback: "the newest ``holdback_chunks`` closed chunks (by the position of
    their last message) are not queued". ann's chunks are A = [m0, m1, m3, m4] and B = [m5 .. m8]
    (m2 was bob's). m2 is widened to ann and gets a chunk C = [m2] of its own (last message at
    position 2, before A's last at 4). With ``holdback_chunks=2`` the newest two by last position
    are B and A, so C is the one compressed. (Found while writing these tests; the library held
    back by first message until commit 1059ad7.)"""
    items = convo(2) + [("user", [text(body(2), audience=["bob"])])] + convo(7, start=3)
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, items)
        m = await opened(rt, auto(target=25, holdback=2), fake_model(), view_reader="ann")
        assert m.get_summaries_in_range() == ()
        await m.edit_message(msgs[2].id, [text(body(2), audience=["bob", "ann"])])
        await settle(m)
        assert [s.message_ids for s in m.get_summaries_in_range()] == [(msgs[2].id,)]


# -- 4. Units, ids, readiness and rejections (4.5, 4.8, 4.9) ------------------------------------


async def test_six_level_one_summaries_merge_into_L2_7_with_the_shared_counter(store_path):
    """STRATEGIES 4.2 (counter shared by all levels), 4.8, 4.9, SPEC C3: six adjacent level-1
    summaries (``merge_threshold`` 6) merge into ``L2-7``: ids ``L1-1`` ... ``L1-6``, ``L2-7``. The
    merge covers every message of its members, in order, and its sequences span them; the
    members are merged away (not searchable, not rendered) but still readable."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(25))
        m = await opened(rt, auto(target=25), fake_model())
        assert summary_ids(m) == ["L1-1", "L2-7", "L1-2", "L1-3", "L1-4", "L1-5", "L1-6"]
        top = m.get_summary("L2-7")
        assert (top.level, top.text, top.message_ids) == (2, "memory 7", ids(msgs[:24]))
        assert (top.first_sequence, top.last_sequence) == (msgs[0].sequence, msgs[23].sequence)
        for n in range(1, 7):
            s = m.get_summary(f"L1-{n}")
            assert (s.level, s.text, s.message_ids) == (1, f"memory {n}", ids(msgs[4 * (n - 1) : 4 * n]))
        assert [s.id for s in m.search_summaries("memory")] == ["L2-7"]
        assert layout(await m.compile(**BIG)) == [("summary", "L2-7"), ("raw", msgs[24].id)]


async def test_levels_go_on_merging_beyond_three(store_path):
    """STRATEGIES 4.9, with the levels unbounded (docs/strategies.md, "How long histories stay
    bounded"): with ``merge_threshold=2`` eight chunks give ``L1-1`` ... ``L1-8``, then the
    level-1 groups (``L2-9`` ... ``L2-12``, lowest level first), then the level-2 groups
    (``L3-13``, ``L3-14``), and the two adjacent level-3 summaries merge into ``L4-15``, whose
    request shows their children as recall pairs. A compile renders each chunk through its
    highest summary."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(33))
        model = fake_model()
        m = await opened(rt, auto(target=25, merge_threshold=2), model)
        assert sorted(summary_ids(m), key=lambda s: int(s.split("-")[1])) == [f"L1-{n}" for n in range(1, 9)] + [
            "L2-9",
            "L2-10",
            "L2-11",
            "L2-12",
            "L3-13",
            "L3-14",
            "L4-15",
        ]
        assert len(model.requests) == 15
        assert m.get_summary("L2-10").message_ids == ids(msgs[8:16])
        assert m.get_summary("L3-13").message_ids == ids(msgs[:16])
        assert m.get_summary("L3-14").message_ids == ids(msgs[16:32])
        assert m.get_summary("L4-15").message_ids == ids(msgs[:32])
        assert (m.get_summary("L4-15").first_sequence, m.get_summary("L4-15").last_sequence) == (msgs[0].sequence, msgs[31].sequence)
        top = model.requests[-1]
        assert instruction_of(top) == MERGE_TEXT.format(what="your earlier memories", k=4, target=600)
        assert target_of(top) == [x for n in (9, 10, 11, 12) for x in (f"[Recall L2-{n}]", f"memory {n}")]
        assert [s.id for s in m.search_summaries("memory")] == ["L4-15"]
        assert layout(await m.compile(**BIG)) == [("summary", "L4-15"), ("raw", msgs[32].id)]
        assert m.is_ready() and not await m.tick()


async def test_hierarchical_false_never_merges(store_path):
    """STRATEGIES 4.9, 4.5: ``hierarchical=False`` means level 1 only."""
    async with open_runtime(store_path) as rt:
        await write(rt, convo(17))
        model = fake_model()
        m = await opened(rt, auto(target=25, merge_threshold=2, hierarchical=False), model)
        assert summary_ids(m) == ["L1-1", "L1-2", "L1-3", "L1-4"]
        assert not any(is_merge(r) for r in model.requests)
        assert m.is_ready() and m.pending_work() is None


async def test_with_no_model_nothing_happens_and_pending_work_says_so(store_path):
    """STRATEGIES 4.5, SPEC 3.2, 3.3.1: with no model, chunks ready to close are pending work
    (``is_ready()`` false; ``pending_work()`` names the messages waiting, counted from 1 in the
    view, with the `` (no compression model)`` suffix), but nothing closes: ``tick`` returns
    False, ``drain()`` returns at once, nothing is written."""
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(NS, strategy=auto(target=25))
        for p, c in convo(9):
            await m.add_message(p, c)
        await m.preview_context(**BIG)
        assert not m.is_ready()
        assert m.pending_work() == "messages 1–4 and 1 later stretch to compress (no compression model)"
        head = rt.store.head("main")
        await m.drain()
        assert await m.tick() is False
        assert rt.store.head("main") == head
        assert rt.store.state_items("main", f"{NS}/") == {}, "no record: the open's note of its strategy takes no sequence"
        assert rt.recorded_strategy(NS) is not None and rt.recorded_strategy(NS).name == "autobiographical"
        assert m.pending_work() == "messages 1–4 and 1 later stretch to compress (no compression model)"


async def test_pending_work_wording_for_closes_compressions_merges_and_a_unit_in_flight(store_path):
    """STRATEGIES 4.5: while a request is out, ``pending_work()`` says which messages it
    compresses (``compressing messages 9–12``: positions in the reader's view, from 1),
    ``is_ready()`` is false and another ``tick`` does nothing. A later manager with no model finds
    the work left (two chunks queued, two more ready to close, one merge) and words it as the
    oldest stretch waiting, how many more, and the merge with the messages it covers."""
    async with open_runtime(store_path) as rt:
        await write(rt, convo(17))
        model = gated_model()
        m = await rt.open_manager(NS, strategy=auto(target=25, merge_threshold=2), model=model)
        for _ in range(2):  # the first two requests pass; the third is held
            await model.wait_for_request()
            model.release()
        await model.wait_for_request()
        assert m.pending_work() == "compressing messages 9–12"
        assert not m.is_ready()
        assert await m.tick() is False
        assert len(model.requests) == 3
        await m.aclose()  # the held request is abandoned; nothing of it is written
        await write(rt, convo(8, start=17))
        idle = await rt.open_manager(NS, strategy=auto(target=25, merge_threshold=2))
        await idle.preview_context(**BIG)
        assert summary_ids(idle) == ["L1-1", "L1-2"]
        assert idle.pending_work() == (
            "messages 9–12 and 3 later stretches to compress; 2 memories of messages 1–8 to merge (no compression model)"
        )
        assert not idle.is_ready()
        await idle.drain()


@pytest.mark.parametrize(
    "answer",
    [
        Completion("max_tokens", "a perfectly good memory"),
        Completion("refusal", "memory"),
        Completion("end_turn", ""),
        Completion("end_turn", "  \n "),
        Completion("end_turn", ()),
        Completion("end_turn", (ImageBlock("image/png", "AAAA"),)),
        Completion("end_turn", "<thinking>only thinking</thinking>"),
        Completion("end_turn", "<thinking>never closed, so nothing is left"),
    ],
    ids=["max_tokens", "refusal", "empty", "blank", "no-blocks", "no-text", "thinking-only", "unclosed-thinking"],
)
async def test_a_rejected_l1_answer_counts_until_the_chunk_fails_and_renders_raw(store_path, answer, autojump_clock):
    """STRATEGIES 4.8, 4.5, SPEC 3.3.1: only an ``end_turn`` completion with non-empty text (after
    removing a ``<thinking>`` prefix) becomes a summary; anything else is a rejection. After
    ``l1_attempt_limit`` rejections the chunk is failed: no more requests, no summary, it renders
    raw where it lies, and it is not pending work; ``drain()`` raises ``CompressionError``, and
    ``pending_work()`` says the stretch could not be compressed (issue 21, item 1)."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(5))
        model = fake_model(answer)
        m = await rt.open_manager(NS, strategy=auto(target=25, l1_attempt_limit=2), model=model)
        with pytest.raises(CompressionError, match="1 stretch could not be compressed"):
            await settle(m)
        await m.drain()  # nothing is pending any more
        assert len(model.requests) == 2
        assert m.get_summaries_in_range() == ()
        assert m.is_ready() and m.pending_work().startswith("1 stretch could not be compressed: the model's answers were rejected (")
        assert await m.tick() is False and len(model.requests) == 2
        assert state(rt, f"{NS}/autobiographical/attempts/")[f"{NS}/autobiographical/attempts/{msgs[0].id}"]["failed"] is True
        assert layout(await m.compile(**BIG)) == raw(msgs)


async def test_a_failed_chunk_splits_merge_runs_and_is_raw_prior_context(store_path, autojump_clock):
    """STRATEGIES 4.5 ("splits merge runs"), 4.9, 4.6: chunk 3 of 5 is always rejected (limit 2)
    and fails. Chunks 1-2 and 4-5 merge (``merge_threshold=2``) but the two level-2 summaries are
    no run (the failed chunk lies between), so no level 3. The failed chunk renders raw between
    them, and the next chunk's request shows it raw (reduced) as prior context. A rejection takes
    no id."""

    def answer(request, n):
        return Completion("max_tokens", "x") if body(8) in target_of(request) else f"memory {n}"

    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(21))
        model = fake_model(answer)
        m = await rt.open_manager(NS, strategy=auto(target=25, merge_threshold=2, l1_attempt_limit=2), model=model)
        with pytest.raises(CompressionError, match="1 stretch could not be compressed"):
            await settle(m)
        await m.drain()
        assert sorted(summary_ids(m)) == ["L1-1", "L1-2", "L1-3", "L1-4", "L2-5", "L2-6"]
        assert m.get_summary("L1-3").message_ids == ids(msgs[12:16])
        assert m.get_summary("L2-6").message_ids == ids(msgs[12:20])
        assert layout(await m.compile(**BIG)) == [("summary", "L2-5")] + raw(msgs[8:12]) + [("summary", "L2-6"), ("raw", msgs[20].id)]
        assert m.is_ready()
        assert m.pending_work() == (
            "1 stretch could not be compressed: the model's answers were rejected (stop_reason 'max_tokens' is not 'end_turn')"
        )
        chunk4 = next(r for r in model.requests if not is_merge(r) and target_of(r)[0] == body(12))
        assert shape(chunk4.messages) == [
            ("user", ["[Recall L1-1]"]),
            ("assistant", ["memory 1"]),
            ("user", ["[Recall L1-2]"]),
            ("assistant", ["memory 2"]),
            ("user", [body(8)]),
            ("assistant", [body(9)]),
            ("user", [body(10)]),
            ("assistant", [body(11)]),
            ("user", [MARKER]),
            ("user", [body(12)]),
            ("assistant", [body(13)]),
            ("user", [body(14)]),
            ("assistant", [body(15)]),
            ("user", [L1_TEXT.format(target=600)]),
        ]


async def test_a_rejected_merge_fails_after_the_merge_attempt_limit(store_path, autojump_clock):
    """STRATEGIES 4.5, 4.9: a merge answer that is not ``end_turn`` is a rejection; after
    ``merge_attempt_limit`` the group is failed: no more merge requests, the members render as
    they are, and they are never merge candidates at that level again. Later summaries still
    form their own run and merge."""

    def answer(request, n):
        if is_merge(request) and target_of(request)[0] == body(0):
            return Completion("max_tokens", "too long")
        return f"memory {n}"

    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(9))
        model = fake_model(answer)
        m = await rt.open_manager(NS, strategy=auto(target=25, merge_threshold=2, merge_attempt_limit=3), model=model)
        with pytest.raises(CompressionError, match="1 group of memories could not be merged"):
            await settle(m)
        assert sum(is_merge(r) for r in model.requests) == 3
        assert summary_ids(m) == ["L1-1", "L1-2"]
        assert m.is_ready()
        assert m.pending_work() == (
            "1 group of memories could not be merged: the model's answers were rejected (stop_reason 'max_tokens' is not 'end_turn')"
        )
        attempts = state(rt, f"{NS}/autobiographical/attempts/")
        assert attempts[f"{NS}/autobiographical/attempts/merge:2:L1-1:L1-2"]["failed"] is True
        assert layout(await m.compile(**BIG)) == [("summary", "L1-1"), ("summary", "L1-2"), ("raw", msgs[8].id)]
        more = await write(rt, convo(8, start=9))
        await settle(m)
        assert sorted(summary_ids(m)) == ["L1-1", "L1-2", "L1-3", "L1-4", "L2-5"]
        assert m.get_summary("L2-5").message_ids == ids(msgs[8:] + more[:7])
        assert sum(is_merge(r) for r in model.requests) == 4


async def test_a_model_exception_counts_nothing_and_the_chunk_stays_pending(store_path):
    """STRATEGIES 4.5: a model exception propagates out of ``tick`` and counts no rejection (no
    attempts record); the chunk stays queued (``messages 1–4 to compress``), and once the model answers the
    chunk is summarised as usual."""
    recovered = anyio.Event()
    model = FailingModel(RuntimeError("model outage"), fails=lambda n: not recovered.is_set(), then=fake_model())
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(5))
        m = await rt.open_manager(NS, strategy=auto(target=25, l1_attempt_limit=1), model=model)
        await model.wait_for_requests(1)  # the drain closed the chunk and asked once
        await trio.testing.wait_all_tasks_blocked()  # its request failed; the drain waits to retry
        with pytest.raises(ModelError, match="model outage"):  # the model's error, wrapped at the model boundary
            await m.tick()
        assert len(model.requests) >= 2
        assert state(rt, f"{NS}/autobiographical/attempts/") == {}
        assert m.get_summaries_in_range() == ()
        assert not m.is_ready() and m.pending_work().startswith("messages 1–4 to compress")
        recovered.set()
        assert await m.tick() is True
        assert [s.message_ids for s in m.get_summaries_in_range()] == [ids(msgs[:4])]
        assert m.is_ready()


async def test_a_model_exception_on_a_merge_counts_no_attempt(store_path):
    """STRATEGIES 4.5 ("Exceptions never count"), 4.9: a merge whose request raises counts no
    attempt (even with ``merge_attempt_limit=1``) and stays pending (``2 memories of messages 1–8 to merge``); once the model
    answers, the merge is written."""
    recovered = anyio.Event()
    model = fake_model(lambda request, n: RuntimeError("merge outage") if is_merge(request) and not recovered.is_set() else None)
    async with open_runtime(store_path) as rt:
        await write(rt, convo(8))
        m = await rt.open_manager(NS, strategy=auto(target=25, merge_threshold=2, merge_attempt_limit=1), model=model)
        await model.wait_for_requests(3)  # two L1s, then the drain's first merge request
        await trio.testing.wait_all_tasks_blocked()  # that request failed; the drain waits to retry
        with pytest.raises(ModelError, match="merge outage"):  # the model's error, wrapped at the model boundary
            await m.tick()
        assert state(rt, f"{NS}/autobiographical/attempts/") == {}
        assert summary_ids(m) == ["L1-1", "L1-2"]
        assert m.pending_work().startswith("2 memories of messages 1–8 to merge")
        recovered.set()
        assert await m.tick() is True
        assert [s.id for s in m.search_summaries(".")] == [f"L2-{3}"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("<thinking>plan it</thinking>\n  Real memory.  ", "Real memory."),
        ((TextBlock("<thinking>a</thinking> First"), ThinkingBlock("hidden"), TextBlock("Second  ")), "First\nSecond"),
        ("  plain memory\n", "plain memory"),
        ("I was <thinking>not a prefix</thinking>", "I was <thinking>not a prefix</thinking>"),
    ],
)
async def test_accepted_text_is_joined_stripped_and_loses_a_thinking_prefix(store_path, content, expected):
    """STRATEGIES 4.8: the summary text is every text block joined by a newline (a str content is
    the text), stripped; a leading ``<thinking>`` ... ``</thinking>`` is removed and the rest
    stripped (a tag later in the text is kept)."""
    async with open_runtime(store_path) as rt:
        await write(rt, convo(5))
        m = await opened(rt, auto(target=25), fake_model(Completion("end_turn", content)))
        assert [s.text for s in m.get_summaries_in_range()] == [expected]


# -- 5. Compression requests (4.6, 4.7, 4.9, 8) -------------------------------------------------


async def test_l1_request_shape_participants_prefixes_and_reductions(store_path):
    """STRATEGIES 4.6, 4.7, 8: an L1 request is ``CompletionRequest(messages, system,
    max_tokens=compression_max_tokens, model=compression_model)``; ``system`` names the
    ``summary_participant``; messages are the memory-point marker, the chunk reduced, and the L1
    instruction with ``{target}`` = ``summary_target_tokens``. Only ``user`` and ``assistant``
    participants: the summary participant's messages are ``assistant``, all others ``user``, with a
    ``name: `` prefix on the first text part unless the participant is ``user`` (any case) or
    ``Context Manager``. Tool calls, results, errors (nested blocks joined by a newline), images
    and system changes become the exact texts of 4.6; thinking and redacted thinking are dropped,
    and a message left with no text is dropped."""
    chunk = [
        ("user", [text("hello there")]),
        (
            "ann",
            [
                thinking("secret plan"),
                redacted_thinking("ZZZZ"),
                text("I will search"),
                tool_use("t1", "search", {"q": "ü", "a": 1, "cost": 3}),
            ],
        ),
        ("tool", [tool_result("t1", "found it")]),
        ("bob", [text("look"), image("image/png", data="AAAA"), system_change("new tools")]),
        ("USER", [text("upper")]),
        ("Context Manager", [text("note")]),
        ("ann", [thinking("only thinking")]),
        ("ann", [tool_use("t2", "calc", {"x": [1, 2]})]),
        ("user", [tool_result("t2", [text("a"), text("b")], is_error=True)]),
        ("ann", [text("done")]),
    ]
    target = sum(tok(c) for _, c in chunk)
    async with open_runtime(store_path) as rt:
        await write(rt, chunk + [("user", [text("tail")])])
        model = fake_model()
        strategy = auto(
            target=target, summary_participant="ann", compression_model="mini", compression_max_tokens=321, summary_target_tokens=77
        )
        await opened(rt, strategy, model)
        (request,) = model.requests
        assert request.system == (
            "You are ann. You are writing your own memory of part of a conversation, to rely on later when its "
            "messages are no longer in view."
        )
        assert (request.max_tokens, request.model) == (321, "mini")
        assert {m.participant for m in request.messages} <= {"user", "assistant"}
        assert all(isinstance(b, TextBlock) and b.audience is None for m in request.messages for b in m.content)
        assert shape(request.messages) == [
            ("user", [MARKER]),
            ("user", ["hello there"]),
            ("assistant", ["I will search", '[tool call search {"a":1,"cost":3,"q":"ü"}]']),
            ("user", ["tool: [tool result] found it"]),
            ("user", ["bob: look", "[image]", "[system change] new tools"]),
            ("user", ["upper"]),
            ("user", ["note"]),
            ("assistant", ['[tool call calc {"x":[1,2]}]']),
            ("user", ["[tool error] a\nb"]),
            ("assistant", ["done"]),
            ("user", [L1_TEXT.format(target=77)]),
        ]


async def test_l1_request_defaults_system_and_instruction(store_path):
    """STRATEGIES 4.6, 4.7: with defaults the system text names ``assistant``, ``max_tokens`` is
    4000, ``model`` is None (the Model's own default) and the instruction aims for 600 tokens."""
    async with open_runtime(store_path) as rt:
        await write(rt, convo(5))
        model = fake_model()
        await opened(rt, auto(target=25), model)
        (request,) = model.requests
        assert (request.system, request.max_tokens, request.model) == (SYSTEM_ASSISTANT, 4000, None)
        assert instruction_of(request) == L1_TEXT.format(target=600)
        assert shape(request.messages)[0] == ("user", [MARKER])


async def test_each_request_message_is_truncated_to_request_message_tokens(store_path):
    """STRATEGIES 4.6, 1.4: each message of a request is truncated to ``request_message_tokens``:
    3 x k characters kept, then ``\\n\\n[truncated — original was N tokens]``."""
    long = "x" * 400
    async with open_runtime(store_path) as rt:
        await write(rt, [("user", [text(long)])] + convo(4, start=1))
        model = fake_model()
        await opened(rt, auto(target=25, request_message_tokens=50), model)
        assert target_of(model.requests[0])[0] == "x" * 150 + "\n\n[truncated — original was 400 tokens]"
        assert target_of(model.requests[0])[1:] == [body(1), body(2), body(3)]


@pytest.mark.parametrize(("context_tokens", "shown"), [(50_000, [1, 2]), (42, [1, 2]), (41, [2]), (21, [2]), (20, [])])
async def test_prior_context_is_the_newest_items_within_compression_context_tokens(store_path, context_tokens, shown):
    """STRATEGIES 4.6: prior context = the middle items before the target rendered as in 4.10
    (summaries as recall pairs ``user`` ``[Recall <id>]`` + ``assistant`` text), newest first while
    their estimate stays ``<= compression_context_tokens`` (equal fits), then in order. A recall pair
    here costs 13 + 8 = 21."""
    async with open_runtime(store_path) as rt:
        await write(rt, convo(13))
        model = fake_model()
        await opened(rt, auto(target=25, compression_context_tokens=context_tokens), model)
        assert len(model.requests) == 3
        third = model.requests[2]
        prior = []
        for n in shown:
            prior += [("user", [f"[Recall L1-{n}]"]), ("assistant", [f"memory {n}"])]
        assert shape(third.messages)[: len(prior) + 1] == prior + [("user", [MARKER])]
        assert target_of(third) == [body(i) for i in range(8, 12)]


async def test_the_head_is_included_before_the_target(store_path):
    """STRATEGIES 4.6: the head (raw, reduced) opens a request whose target lies after it; prior
    context follows it, then the marker."""
    async with open_runtime(store_path) as rt:
        await write(rt, convo(10, speakers=("bob", "assistant")))
        model = fake_model()
        await opened(rt, auto(target=25, head=20), model)
        first, second = model.requests
        assert shape(first.messages) == [
            ("user", [f"bob: {body(0)}"]),
            ("assistant", [body(1)]),
            ("user", [MARKER]),
            ("user", [f"bob: {body(2)}"]),
            ("assistant", [body(3)]),
            ("user", [f"bob: {body(4)}"]),
            ("assistant", [body(5)]),
            ("user", [L1_TEXT.format(target=600)]),
        ]
        assert shape(second.messages)[:5] == [
            ("user", [f"bob: {body(0)}"]),
            ("assistant", [body(1)]),
            ("user", ["[Recall L1-1]"]),
            ("assistant", ["memory 1"]),
            ("user", [MARKER]),
        ]


async def test_merge_requests_level_two_and_three(store_path):
    """STRATEGIES 4.9, 4.6: a level-2 merge's target is its members' chunks, raw and reduced, with
    the merge instruction (``{what}`` = ``the conversation``, ``{k}`` = 2); a level-3 merge's target
    is its members' children as recall pairs (``your earlier memories``, 3). Prior context as for
    L1s: the second level-2 merge sees the first level-2 summary."""
    async with open_runtime(store_path) as rt:
        await write(rt, convo(17))
        model = fake_model()
        await opened(rt, auto(target=25, merge_threshold=2, summary_target_tokens=90), model)
        merges = [r for r in model.requests if is_merge(r)]
        assert len(merges) == 3
        first, second, third = merges
        for r in merges:
            assert (r.system, r.max_tokens, r.model) == (SYSTEM_ASSISTANT, 4000, None)
        assert shape(first.messages) == (
            [("user", [MARKER])]
            + [("user" if i % 2 == 0 else "assistant", [body(i)]) for i in range(8)]
            + [("user", [MERGE_TEXT.format(what="the conversation", k=2, target=90)])]
        )
        assert shape(second.messages) == (
            [("user", ["[Recall L2-5]"]), ("assistant", ["memory 5"]), ("user", [MARKER])]
            + [("user" if i % 2 == 0 else "assistant", [body(i)]) for i in range(8, 16)]
            + [("user", [MERGE_TEXT.format(what="the conversation", k=2, target=90)])]
        )
        recalls = []
        for n in range(1, 5):
            recalls += [("user", [f"[Recall L1-{n}]"]), ("assistant", [f"memory {n}"])]
        assert shape(third.messages) == (
            [("user", [MARKER])] + recalls + [("user", [MERGE_TEXT.format(what="your earlier memories", k=3, target=90)])]
        )


# -- 6. Rendering a compile (4.10, 4.11, P1) ----------------------------------------------------


async def test_compile_order_head_recall_pairs_raw_then_recent_with_provenance(store_path):
    """STRATEGIES 4.10, 8, 1.5, SPEC C3, P1: head raw -> the middle in position order (each
    compressed chunk as a recall pair: ``Context Manager`` ``[Recall <id>]`` then the summary text
    by ``summary_participant``; uncompressed messages raw) -> recent window raw. Both halves of a
    pair are ``summary`` entries carrying ``summary_id`` and the summary's ``message_ids``; raw
    entries carry their id and are complete. ``to_anthropic(<summary participant>)`` puts the
    recall text in the assistant role (4.1)."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(18, speakers=("user", "ann")))
        m = await opened(rt, auto(target=25, head=20, recent=20, holdback=1, summary_participant="ann"), fake_model())
        compiled = await m.compile(**BIG)
        assert layout(compiled) == raw(msgs[:2]) + [("summary", "L1-1"), ("summary", "L1-2")] + raw(msgs[10:])
        assert shape(compiled.messages[2:6]) == [
            ("Context Manager", ["[Recall L1-1]"]),
            ("ann", ["memory 1"]),
            ("Context Manager", ["[Recall L1-2]"]),
            ("ann", ["memory 2"]),
        ]
        entries = compiled.provenance.entries
        assert entries[2] == entries[3]
        assert (entries[2].kind, entries[2].summary_id, entries[2].message_ids) == ("summary", "L1-1", ids(msgs[2:6]))
        assert (entries[4].kind, entries[4].summary_id, entries[4].message_ids) == ("summary", "L1-2", ids(msgs[6:10]))
        assert all(e.summary_id is None for e in entries if e.kind == "raw")
        raw_ids = ids(msgs[:2] + msgs[10:])
        assert dict(compiled.provenance.complete) == {i: True for i in raw_ids}
        assert set(compiled.provenance.raw_bodies) == set(raw_ids)
        assert compiled.token_estimate == sum(tok(x.content) for x in compiled.messages)
        anthropic = compiled.to_anthropic("ann")
        holder = next(x for x in anthropic if any(b.get("text") == "memory 1" for b in x["content"]))
        assert holder["role"] == "assistant"


#: Names the fresh store of each Hypothesis example (a sibling of the test's ``store_path``).
_EXAMPLES = itertools.count()


@st.composite
def scenarios(draw):
    options = {
        "cls": draw(st.sampled_from([AutobiographicalStrategy, KnowledgeStrategy])),
        "target": draw(st.integers(1, 60)),
        "head": draw(st.sampled_from([0, 10, 25, 40])),
        "recent": draw(st.sampled_from([0, 10, 30, 60])),
        "holdback": draw(st.integers(0, 2)),
        "merge_threshold": draw(st.integers(2, 3)),
        "hierarchical": draw(st.booleans()),
    }
    items = []
    n = draw(st.integers(0, 30))
    for i in range(n):
        kind = draw(st.sampled_from(["text", "text", "text", "tool"]))
        size = draw(st.integers(1, 25))
        if kind == "tool":
            items.append(("assistant", [tool_use(f"t{i}", "probe", {"cost": size})]))
            items.append(("user", [tool_result(f"t{i}", "r" * size)]))
        else:
            items.append((draw(st.sampled_from(["user", "assistant", "bob"])), [text(f"m{i}:" + "x" * size)]))
    reset_at = draw(st.one_of(st.none(), st.integers(0, len(items))))
    return options, items, reset_at


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(scenarios())
def test_coverage_every_view_message_is_raw_or_in_exactly_one_rendered_summary(store_path, scenario):
    """SPEC C3 ("every message is either raw or covered by a summary"), STRATEGIES 4.10 step 2
    (coverage), 4.9 (merged-away summaries are never rendered), 4.5, 6: over random small option
    sets (Autobiographical or Knowledge) and conversations (tool pairs and a topic transition
    included), after a drain the strategy is ready (``pending_work()`` None), a preview equals the
    compile, and every view message is listed exactly once: as a raw entry, or in the
    ``message_ids`` of exactly one rendered summary; every rendered summary is rendered once, as a
    pair, and is not merged away, and every summary not merged away is rendered."""
    trio.run(_coverage_scenario, sibling_store(store_path, f"e{next(_EXAMPLES)}"), scenario)


async def _coverage_scenario(path: str, scenario: Any) -> None:
    """One example of the coverage property, on a fresh store at ``path``."""
    options, items, reset_at = scenario
    cls = options.pop("cls")
    strategy = cls(
        target_chunk_tokens=options.pop("target"),
        head_window_tokens=options.pop("head"),
        recent_window_tokens=options.pop("recent"),
        holdback_chunks=options.pop("holdback"),
        estimator=tok,
        **options,
    )
    async with open_runtime(path) as rt:
        m = await rt.open_manager(NS, strategy=strategy, model=fake_model())
        for index, (p, c) in enumerate(items):
            if index == reset_at:
                await m.reset_head_window("moving on")
            await m.add_message(p, c)
        if reset_at == len(items):
            await m.reset_head_window("moving on")
        await settle(m)
        assert m.is_ready() and m.pending_work() is None
        compiled = await m.preview_context(**BIG)
        real = await m.compile(**BIG)
        assert (real.messages, real.provenance.entries, real.token_estimate) == (
            compiled.messages,
            compiled.provenance.entries,
            compiled.token_estimate,
        )
        counts: dict[str, int] = {}
        rendered: list[str] = []
        for kind, ref in layout(compiled):
            if kind == "raw":
                counts[ref] = counts.get(ref, 0) + 1
            elif kind == "summary":
                rendered.append(ref)
                for message_id in m.get_summary(ref).message_ids:
                    counts[message_id] = counts.get(message_id, 0) + 1
        view_ids = [x.id for x in m.get_all_messages()]
        assert counts == {i: 1 for i in view_ids}
        assert len(rendered) == len(set(rendered))
        roots = {s.id for s in m.search_summaries(".")}
        assert set(rendered) == roots
        event(f"highest level rendered: {max((int(r[1]) for r in rendered), default=0)}")


def _glued(items: list[tuple[str, list[Any]]], j: int) -> bool:
    calls = {b.id for b in items[j - 1][1] if isinstance(b, ToolUseBlock)} if j > 0 else set()
    return any(isinstance(b, ToolResultBlock) and b.tool_use_id in calls for b in items[j][1])


def expected_chunks(options: dict[str, Any], items: list[tuple[str, list[Any]]], trailing: bool) -> list[list[int]]:
    """An oracle for STRATEGIES 4.3-4.4 (and 6's trailing close) over a conversation seen at once:
    the head by whole units, the recent window widened to whole units, then the greedy walk."""
    n = len(items)
    costs = [tok(c) for _, c in items]
    he, total = 0, 0
    while he < n:
        q = he + 1
        while q < n and _glued(items, q):
            q += 1
        if total + sum(costs[he:q]) > options["head"]:
            break
        total += sum(costs[he:q])
        he = q
    rs, total = n, 0
    while rs > 0 and total + costs[rs - 1] <= options["recent"]:
        total += costs[rs - 1]
        rs -= 1
    while 0 < rs < n and _glued(items, rs):
        rs -= 1
    chunks: list[list[int]] = []
    running: list[int] = []
    for p in range(he, rs):
        running.append(p)
        last_has_call = any(isinstance(b, ToolUseBlock) for b in items[p][1])
        if sum(costs[i] for i in running) >= options["target"] and len(running) >= 4 and not last_has_call:
            chunks.append(running)
            running = []
    if trailing and len(running) >= 4 and not any(isinstance(b, ToolUseBlock) for b in items[running[-1]][1]):
        chunks.append(running)
    return chunks


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(scenarios(), st.booleans())
def test_chunk_boundaries_follow_the_regions_and_chunking_rules(store_path, scenario, incremental):
    """STRATEGIES 4.3, 4.4, 1.3, 6 (property over random options and conversations): the closed
    chunks are exactly those of the greedy
    walk over [head end, recent start): a chunk closes at the first message where its cost is
    >= ``target_chunk_tokens``, it holds 4 messages and the message holds no tool call; the head
    takes whole units within ``head_window_tokens``; the recent window takes the newest messages
    within ``recent_window_tokens``, widened to a whole unit. Knowledge also closes a qualifying
    trailing chunk. Every closed chunk but the newest ``holdback_chunks`` has its level-1 summary.
    Boundaries depend only on the view, not on when closing runs (4.4): for Autobiographical the
    same holds when the manager drains as each message arrives. (Knowledge's trailing close does
    depend on when the drain runs, so it is checked with the conversation written before the
    manager opens.)"""
    trio.run(_chunk_boundaries_scenario, sibling_store(store_path, f"e{next(_EXAMPLES)}"), scenario, incremental)


async def _chunk_boundaries_scenario(path: str, scenario: Any, incremental: bool) -> None:
    """One example of the chunk-boundary property, on a fresh store at ``path``."""
    options, items, _reset_at = scenario
    cls = options.pop("cls")
    incremental = incremental and cls is AutobiographicalStrategy
    strategy = cls(
        target_chunk_tokens=options["target"],
        head_window_tokens=options["head"],
        recent_window_tokens=options["recent"],
        holdback_chunks=options["holdback"],
        merge_threshold=options["merge_threshold"],
        hierarchical=options["hierarchical"],
        estimator=tok,
    )
    async with open_runtime(path) as rt:
        if incremental:
            m = await rt.open_manager(NS, strategy=strategy, model=fake_model())
            msgs = [await m.add_message(p, c) for p, c in items]
            await settle(m)
        else:
            msgs = await write(rt, items)
            m = await opened(rt, strategy, fake_model())
        expected = [[msgs[p].id for p in chunk] for chunk in expected_chunks(options, items, cls is KnowledgeStrategy)]
        records = rt.store.state_items("main", f"{NS}/{strategy.name}/chunk/")
        got = sorted((list(ids_from_record(v)) for v in records.values()), key=lambda ids_: int(ids_[0]))
        assert got == expected
        level_one = sorted((s.message_ids for s in m.get_summaries_in_range() if s.level == 1), key=lambda t: int(t[0]))
        keep = len(expected) - options["holdback"] if len(expected) > options["holdback"] else 0
        assert [list(t) for t in level_one] == expected[:keep]


async def test_over_budget_compile_raises_with_the_region_totals_and_writes_nothing(store_path):
    """STRATEGIES 4.10 step 5, 1.2, 1.5, SPEC 3.3.1: nothing is dropped to fit; a compile over ``B``
    raises ``OverBudgetError`` carrying ``budget``, ``needed``, ``head_tokens``, ``middle_tokens``,
    ``recent_tokens`` and ``pending_chunks`` and saying so in one sentence, and writes nothing; a
    preview returns the selection it would have refused, its ``token_estimate`` showing the excess;
    a budget equal to the need fits."""
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(NS, strategy=auto(target=25, head=20, recent=20))
        for p, c in convo(14):
            await m.add_message(p, c)
        before = dump(rt.store)
        with pytest.raises(OverBudgetError) as info:
            await m.compile(max_tokens=100, reserve_for_response=10)
        err = info.value
        assert (err.budget, err.needed, err.head_tokens, err.middle_tokens, err.recent_tokens, err.pending_chunks) == (
            90,
            140,
            20,
            100,
            20,
            2,
        )
        assert str(err) == (
            f"compile for {NS} on main needs 140 tokens but the budget is 90 (max_tokens 100 less reserve_for_response 10; "
            "head 20, middle 100, recent 20; 2 chunks await compression, and no compression model is configured): "
            "configure a compression model (model= on open_runtime or open_manager), raise max_tokens or lower "
            "recent_window_tokens."
        )
        assert dump(rt.store) == before
        preview = await m.preview_context(max_tokens=100, reserve_for_response=10)
        assert len(preview.messages) == 14 and preview.token_estimate == 140
        assert dump(rt.store) == before
        assert len((await m.compile(max_tokens=140, reserve_for_response=0)).messages) == 14


async def test_over_budget_advice_suggests_a_drain_only_when_one_would_help(store_path):
    """``OverBudgetError``'s advice is true: with a model and chunks waiting it suggests
    ``await manager.drain()``; once everything is compressed (nothing waits) it does not, and it
    never says that no model is configured when one is."""
    async with open_runtime(store_path) as rt:
        await write(rt, convo(14))
        model = gated_model()
        m = await rt.open_manager(NS, strategy=auto(target=25, recent=20), model=model)
        await model.wait_for_request()
        with pytest.raises(OverBudgetError) as info:
            await m.compile(max_tokens=50, reserve_for_response=0)
        assert info.value.pending_chunks > 0
        assert str(info.value).endswith(": await manager.drain(), raise max_tokens or lower recent_window_tokens.")
        assert "no compression model" not in str(info.value)
        model.open()
        await settle(m)
        with pytest.raises(OverBudgetError) as info:
            await m.compile(max_tokens=30, reserve_for_response=0)
        assert info.value.pending_chunks == 0
        assert "0 chunks await compression" in str(info.value)
        assert "drain" not in str(info.value) and "no compression model" not in str(info.value)
        assert str(info.value).endswith(": raise max_tokens or lower recent_window_tokens.")


@pytest.mark.parametrize(("max_tokens", "reserve"), [(100, 100), (50, 4_000), (0, 1)])
async def test_a_reserve_that_takes_all_of_max_tokens_is_named(store_path, max_tokens, reserve):
    """When ``reserve_for_response`` is not below ``max_tokens`` the budget is 0 whatever the
    strategy does: the error says that the reserve takes it all, with both numbers, and offers
    only the two remedies that work. Nothing is written."""
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(NS, strategy=auto(target=25, recent=20))
        await m.add_message("user", [text("hello")])
        before = dump(rt.store)
        with pytest.raises(OverBudgetError) as info:
            await m.compile(max_tokens=max_tokens, reserve_for_response=reserve)
        assert info.value.budget == 0
        assert str(info.value) == (
            f"compile for {NS} on main needs 5 tokens but the budget is 0: reserve_for_response ({reserve}) takes all of "
            f"max_tokens ({max_tokens}), so nothing is left for the context: lower reserve_for_response or raise max_tokens."
        )
        assert dump(rt.store) == before


async def test_a_reserve_that_alone_does_not_fit_is_offered_as_a_remedy(store_path):
    """A compile that would fit in ``max_tokens`` but not once ``reserve_for_response`` is set
    aside says so: the budget's sum is shown and lowering the reserve comes first among the
    remedies."""
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(NS, strategy=auto(target=25, recent=100))
        for p, c in convo(3):
            await m.add_message(p, c)
        with pytest.raises(OverBudgetError) as info:
            await m.compile(max_tokens=40, reserve_for_response=20)
        message = str(info.value)
        assert message.startswith(
            f"compile for {NS} on main needs 30 tokens but the budget is 20 (max_tokens 40 less reserve_for_response 20;"
        )
        assert message.endswith(
            ": lower reserve_for_response, configure a compression model (model= on open_runtime or open_manager), raise "
            "max_tokens or lower recent_window_tokens."
        )


async def test_repair_moves_a_result_up_and_leaves_the_moved_text(store_path):
    """STRATEGIES 4.11 steps 2-3, 8, 1.5: a call whose result comes two messages later (not glued)
    gets the result moved up into a new ``repair`` message (participant ``user``, ``message_ids``
    naming where it came from) before the next message; the message it left holds only
    ``[tool result moved during context repair]`` and is ``complete=False``."""
    items = [
        ("assistant", [tool_use("t1", "probe", {"cost": 1})]),
        ("user", [text("meanwhile")]),
        ("user", [tool_result("t1", "late")]),
        ("assistant", [text("ok")]),
    ]
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(NS, strategy=auto(target=1000))
        msgs = [await m.add_message(p, c) for p, c in items]
        compiled = await m.compile(**BIG)
        assert shape(compiled.messages) == [
            ("assistant", ["<call t1>"]),
            ("user", ["<result t1: late>"]),
            ("user", ["meanwhile"]),
            ("user", ["[tool result moved during context repair]"]),
            ("assistant", ["ok"]),
        ]
        assert [(e.kind, e.message_ids) for e in compiled.provenance.entries] == [
            ("raw", (msgs[0].id,)),
            ("repair", (msgs[2].id,)),
            ("raw", (msgs[1].id,)),
            ("raw", (msgs[2].id,)),
            ("raw", (msgs[3].id,)),
        ]
        assert compiled.provenance.complete[msgs[2].id] is False
        assert compiled.provenance.complete[msgs[1].id] is True


async def test_repair_puts_moved_results_first_in_a_message_that_holds_results(store_path):
    """STRATEGIES 4.11 steps 2-3: when the message after the calls already holds tool results, the
    moved result goes at its front, in the order of the calls; the message is ``complete=False``."""
    items = [
        ("assistant", [tool_use("t1", "probe", {}), tool_use("t2", "probe", {})]),
        ("user", [tool_result("t2", "two"), text("note")]),
        ("user", [tool_result("t1", "one")]),
    ]
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(NS, strategy=auto(target=1000))
        msgs = [await m.add_message(p, c) for p, c in items]
        compiled = await m.compile(**BIG)
        assert shape(compiled.messages) == [
            ("assistant", ["<call t1>", "<call t2>"]),
            ("user", ["<result t1: one>", "<result t2: two>", "note"]),
            ("user", ["[tool result moved during context repair]"]),
        ]
        assert [e.kind for e in compiled.provenance.entries] == ["raw", "raw", "raw"]
        assert dict(compiled.provenance.complete) == {msgs[0].id: True, msgs[1].id: False, msgs[2].id: False}


@pytest.mark.parametrize(("gap", "moved"), [(6, True), (7, False)])
async def test_repair_looks_six_messages_ahead_then_stubs(store_path, gap, moved):
    """STRATEGIES 4.11 steps 1-3: a missing result is looked for in messages i+1 ... i+6 (i: the
    message after the call). Found there, it is moved up; one message further, the call gets the
    stub result instead and the late result, answering nothing before it, becomes
    ``[tool call omitted]``."""
    items = [("assistant", [tool_use("t1", "probe", {})])] + convo(gap, start=1) + [("user", [tool_result("t1", "late")])]
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(NS, strategy=auto(target=10_000))
        for p, c in items:
            await m.add_message(p, c)
        got = shape((await m.compile(**BIG)).messages)
        assert got[1] == ("user", ["<result t1: late>" if moved else f"<result t1: {STUB}>"])
        assert got[-1] == ("user", ["[tool result moved during context repair]" if moved else "[tool call omitted]"])
        assert len(got) == len(items) + 1


async def test_repair_omits_a_result_whose_call_was_compressed(store_path):
    """STRATEGIES 4.11 step 1, 8: a tool call compressed into a summary leaves its (unglued) result
    raw after the recall pair: the result becomes ``[tool call omitted]`` and the message is
    ``complete=False``."""
    items = [
        ("assistant", [tool_use("t1", "probe", {"cost": 10})]),
        ("user", [text(body(1))]),
        ("assistant", [text(body(2))]),
        ("user", [text(body(3))]),
        ("user", [tool_result("t1", "late"), text("and more")]),
    ]
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, items)
        m = await opened(rt, auto(target=25), fake_model())
        compiled = await m.compile(**BIG)
        assert layout(compiled) == [("summary", "L1-1"), ("raw", msgs[4].id)]
        assert shape(compiled.messages)[2] == ("user", ["[tool call omitted]", "and more"])
        assert compiled.provenance.complete[msgs[4].id] is False


async def test_repair_answers_a_pending_call_with_the_stub(store_path):
    """STRATEGIES 4.11 (end), 8, SPEC C3: a call in the last message, its result not written yet, is
    answered by a ``repair`` message (participant ``user``, no message ids) holding the exact stub
    result, so coverage keeps the newest message."""
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(NS, strategy=auto(target=1000))
        await m.add_message("user", [text("go")])
        call = await m.add_message("assistant", [text("checking"), tool_use("t9", "probe", {})])
        compiled = await m.compile(**BIG)
        assert shape(compiled.messages) == [
            ("user", ["go"]),
            ("assistant", ["checking", "<call t9>"]),
            ("user", [f"<result t9: {STUB}>"]),
        ]
        assert (compiled.provenance.entries[-1].kind, compiled.provenance.entries[-1].message_ids) == ("repair", ())
        assert compiled.provenance.complete[call.id] is True


async def test_raw_messages_are_truncated_to_max_message_tokens_and_priced_as_shown(store_path):
    """STRATEGIES 1.4, 4.10 step 1: with ``max_message_tokens=k`` a raw message over ``k`` is shown
    truncated (3 x k characters, then ``\\n\\n[truncated — original was N tokens]``), reported
    ``complete=False`` and priced at what is shown, regions included: the 100-token message,
    shown at 69 tokens, fits a 70-token recent window."""
    shown = "x" * 30 + "\n\n[truncated — original was 100 tokens]"
    assert len(shown) == 69
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(4) + [("user", [text("x" * 100)])])
        m = await opened(rt, auto(target=1000, recent=70, max_message_tokens=10), fake_model())
        with pytest.raises(OverBudgetError) as info:
            await m.compile(max_tokens=1, reserve_for_response=0)
        assert (info.value.recent_tokens, info.value.middle_tokens) == (69, 40)
        compiled = await m.compile(**BIG)
        assert shape(compiled.messages)[-1] == ("user", [shown])
        assert compiled.provenance.complete[msgs[4].id] is False
        assert compiled.provenance.raw_bodies[msgs[4].id] == (TextBlock("x" * 100),)
        assert compiled.token_estimate == 40 + 69


def _levels_needed(chunks: int, threshold: int) -> int:
    """How many levels a pyramid of ``chunks`` level-1 summaries has when every run of
    ``threshold`` merges: 1 + floor(log_threshold(chunks))."""
    levels, reach = 1, threshold
    while reach <= chunks:
        levels, reach = levels + 1, reach * threshold
    return levels


async def test_the_summaries_a_compile_walks_stay_a_few_per_level_as_history_grows(store_path):
    """docs/strategies.md, "How long histories stay bounded": merges go on at every level, so a
    compile shows (and walks) at most ``merge_threshold - 1`` summaries per level, and the number
    of levels grows by one each time history grows ``merge_threshold``-fold. Counted at two
    history lengths (24 and 200 chunks of four messages, merged in threes, with the offline
    ``ExtractiveModel``): every chunk is covered, the summaries shown stay within that bound, and
    they are far fewer than the 22 level-3 summaries the compile walked when levels stopped at 3."""
    threshold = 3
    strategy = AutobiographicalStrategy(
        target_chunk_tokens=1, head_window_tokens=0, recent_window_tokens=0, holdback_chunks=0, merge_threshold=threshold
    )
    shown: dict[int, int] = {}
    async with open_runtime(store_path, model=ExtractiveModel()) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        m = await rt.open_manager(NS, strategy=strategy)
        written = 0
        for chunks in (24, 200):
            for i in range(written, 4 * chunks):
                await host.add_message(("user", "assistant")[i % 2], [text(f"note {i}. Something happened at step {i}.")])
            written = 4 * chunks
            await settle(m)
            compiled = await m.compile(**BIG)
            items = layout(compiled)
            summaries = [ref for kind, ref in items if kind == "summary"]
            assert [kind for kind, _ref in items] == ["summary"] * len(summaries), "every chunk is covered by a summary"
            covered = [i for ref in summaries for i in m.get_summary(ref).message_ids]
            assert len(covered) == written and len(set(covered)) == written
            level_one = sum(1 for s in m.get_summaries_in_range() if s.level == 1)
            assert level_one == chunks
            levels = _levels_needed(chunks, threshold)
            per_level = {}
            for ref in summaries:
                per_level[m.get_summary(ref).level] = per_level.get(m.get_summary(ref).level, 0) + 1
            assert max(per_level.values()) <= threshold - 1 and max(per_level) <= levels
            assert len(summaries) <= (threshold - 1) * levels
            assert not any(s.text.startswith("- - ") for s in m.get_summaries_in_range())
            shown[chunks] = len(summaries)
    # The summaries shown are the digits of the chunk count in base 3: 24 is 220 (four shown),
    # 200 is 21102 (six), where levels that stopped at 3 showed 200 // 9 = 22 level-3 summaries.
    assert shown == {24: 4, 200: 6}
    assert shown[200] < 200 // threshold**2


# -- 7. Summary reads (4.13) --------------------------------------------------------------------

SEARCH_TEXTS = {1: "alpha alpha beta", 2: "alpha", 3: "gamma aaaa", 4: "alpha beta"}


async def test_search_scores_matches_orders_by_score_then_newest_and_limits(store_path):
    """STRATEGIES 4.13, SPEC 3.3.1: ``search_summaries`` scores each summary by its number of
    non-overlapping matches, returns those scoring >= 1 by score (high first) then newest (highest
    ``n``) first, at most ``limit``; a ``str`` pattern is compiled with no flags, a compiled one is
    used as is; ``limit < 0`` is a ``ValueError`` and a bad pattern ``re.error``."""
    async with open_runtime(store_path) as rt:
        await write(rt, convo(17))
        m = await opened(rt, auto(target=25, hierarchical=False), fake_model(lambda r, n: SEARCH_TEXTS[n]))
        assert [s.id for s in m.search_summaries("alpha")] == ["L1-1", "L1-4", "L1-2"]
        assert [s.id for s in m.search_summaries("alpha", limit=2)] == ["L1-1", "L1-4"]
        assert m.search_summaries("alpha", limit=0) == ()
        assert m.search_summaries("ALPHA") == ()
        assert [s.id for s in m.search_summaries(re.compile("ALPHA", re.IGNORECASE))] == ["L1-1", "L1-4", "L1-2"]
        assert [s.id for s in m.search_summaries("aa")] == ["L1-3"]  # "aaaa": two non-overlapping
        # "a+": L1-1 scores 5; L1-3 and L1-4 tie at 3 (newest first); L1-2 scores 2
        assert [s.id for s in m.search_summaries("a+")] == ["L1-1", "L1-4", "L1-3", "L1-2"]
        assert [s.id for s in m.search_summaries("beta|gamma")] == ["L1-4", "L1-3", "L1-1"]
        assert m.search_summaries("zzz") == ()
        found = m.search_summaries("gamma")[0]
        assert (found.level, found.text) == (1, "gamma aaaa")
        with pytest.raises(ValueError):
            m.search_summaries("alpha", limit=-1)
        with pytest.raises(re.error):
            m.search_summaries("(")


async def test_merged_away_summaries_are_not_searched_but_are_read_by_range_and_id(store_path):
    """STRATEGIES 4.13, 4.2: a merged-away summary is excluded from ``search_summaries`` but
    returned by ``get_summaries_in_range`` (ordered by ``first_sequence``, then level, then ``n``)
    and by ``get_summary``; an unknown id gives ``None``."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(9))
        m = await opened(rt, auto(target=25, merge_threshold=2), fake_model(lambda r, n: f"alpha {n}"))
        assert [s.id for s in m.search_summaries("alpha")] == ["L2-3"]
        assert summary_ids(m) == ["L1-1", "L2-3", "L1-2"]
        assert m.get_summary("L1-1").text == "alpha 1"
        assert m.get_summary("L1-2").message_ids == ids(msgs[4:8])
        assert m.get_summary("L9-9") is None and m.get_summary("nope") is None


async def test_range_reads_are_inclusive_overlaps_by_sequence(store_path):
    """STRATEGIES 4.13, SPEC 3.3.1: ``get_summaries_in_range(start, end)`` returns every summary
    whose [first_sequence, last_sequence] overlaps [start, end], inclusive; ``None`` is open."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(13))
        m = await opened(rt, auto(target=25, hierarchical=False), fake_model())
        s1, s2, s3 = (m.get_summary(f"L1-{n}") for n in (1, 2, 3))
        assert (s1.first_sequence, s1.last_sequence) == (msgs[0].sequence, msgs[3].sequence)
        assert (s2.first_sequence, s2.last_sequence) == (msgs[4].sequence, msgs[7].sequence)

        def got(start=None, end=None):
            return [s.id for s in m.get_summaries_in_range(start, end)]

        assert got() == ["L1-1", "L1-2", "L1-3"]
        assert got(s1.last_sequence, s1.last_sequence) == ["L1-1"]
        assert got(s1.last_sequence, s2.first_sequence) == ["L1-1", "L1-2"]
        assert got(s1.last_sequence + 1, s2.first_sequence) == ["L1-2"]
        assert got(s2.first_sequence + 1, s2.last_sequence - 1) == ["L1-2"]
        assert got(None, s1.first_sequence) == ["L1-1"]
        assert got(s2.last_sequence, None) == ["L1-2", "L1-3"]
        assert got(s3.last_sequence + 1, None) == []
        assert got(None, s1.first_sequence - 1) == []


async def test_strategies_without_summaries_answer_empty_reads(store_path):
    """STRATEGIES 4.13: on a strategy without summaries the three reads answer ``()``, ``()`` and
    ``None``."""
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(NS, strategy=PassthroughStrategy())
        assert (m.search_summaries("x"), m.get_summaries_in_range(), m.get_summary("L1-1")) == ((), (), None)


# -- 8. Persistence and sharing (C7, 4.14) ------------------------------------------------------


def persisted() -> AutobiographicalStrategy:
    return auto(target=25, recent=10, holdback=1, merge_threshold=2)


async def test_reopening_a_store_resumes_exactly(store_path):
    """SPEC C7, STRATEGIES 4.14, 4.2: after closing and reopening a file store, a manager of the
    namespace reads the same summaries and compiles the same context, its open writes nothing, and
    the model gets no request for work already done (the held-back chunk, the trailing chunk and
    the merged members stay as they were). New work continues the same counter: ``L1-5``,
    ``L2-6``, then ``L3-7``."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(18))
        m = await opened(rt, persisted(), fake_model())
        assert sorted(summary_ids(m)) == ["L1-1", "L1-2", "L1-3", "L2-4"]
        before_summaries = m.get_summaries_in_range()
        before = await m.compile(**BIG)
        assert layout(before) == [("summary", "L2-4"), ("summary", "L1-3")] + raw(msgs[12:])
    async with open_runtime(store_path) as rt:
        stored = dump(rt.store)
        model = fake_model(lambda r, n: f"later {n}")
        m = await opened(rt, persisted(), model)
        assert model.requests == []
        assert m.is_ready() and m.pending_work() is None
        assert m.get_summaries_in_range() == before_summaries
        after = await m.compile(**BIG)
        assert (after.messages, after.provenance.entries, after.token_estimate) == (
            before.messages,
            before.provenance.entries,
            before.token_estimate,
        )
        assert dump(rt.store) == stored
        await write(rt, convo(4, start=18))
        await settle(m)
        assert sorted(summary_ids(m), key=lambda s: int(s.split("-")[1])) == ["L1-1", "L1-2", "L1-3", "L2-4", "L1-5", "L2-6", "L3-7"]
        assert m.get_summary("L1-5").message_ids == ids(msgs[12:16])
        assert m.get_summary("L3-7").message_ids == ids(msgs[:16])
        assert len(model.requests) == 3


async def test_changing_options_between_opens_never_recuts_or_rewrites(store_path):
    """STRATEGIES 4.1 (last bullet), 4.14: reopened with another ``target_chunk_tokens`` and
    ``summary_participant``, a namespace keeps its closed chunks and summaries as they were; only
    what is chunked from then on follows the new options."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(9))
        m = await opened(rt, auto(target=25), fake_model())
        before = m.get_summaries_in_range()
        assert [s.message_ids for s in before] == [ids(msgs[:4]), ids(msgs[4:8])]
    async with open_runtime(store_path) as rt:
        model = fake_model()
        m = await opened(rt, auto(target=55, summary_participant="ann"), model)
        assert model.requests == [] and m.get_summaries_in_range() == before
        more = await write(rt, convo(6, start=9))
        await settle(m)
        assert m.get_summaries_in_range()[:2] == before
        assert m.get_summary("L1-3").message_ids == ids(msgs[8:] + more[:5])
        compiled = await m.compile(**BIG)
        assert shape(compiled.messages)[:2] == [("Context Manager", ["[Recall L1-1]"]), ("ann", ["memory 1"])]


async def test_two_managers_on_one_namespace_never_summarise_a_chunk_twice(store_path):
    """STRATEGIES 4.14, 4.5 (commit checks), SPEC F (drain): two managers of one namespace and
    branch, each with its own model, drain at once (the first holding its first request out while
    the second opens). Each chunk gets exactly one level-1 summary, ids never repeat, and both
    managers read the same summaries and compile the same context."""
    async with open_runtime(store_path) as rt:
        await write(rt, convo(25))
        first_model = gated_model()
        second_model = fake_model(lambda r, n: f"second {n}")
        first = await rt.open_manager(NS, strategy=auto(target=25), model=first_model)
        await first_model.wait_for_request()
        second = await rt.open_manager(NS, strategy=auto(target=25), model=second_model)
        await second.preview_context(**BIG)
        async with anyio.create_task_group() as tg:
            tg.start_soon(settle, first)
            tg.start_soon(settle, second)
            first_model.open()
        await settle(first)
        await settle(second)
        records = state(rt, f"{NS}/autobiographical/summary/")
        level_one = [v for v in records.values() if v["level"] == 1]
        assert len(level_one) == 6
        assert len({v["chunk"] for v in level_one}) == 6
        assert len({tuple(list(ids_from_record(v))) for v in level_one}) == 6
        assert sorted(records) == sorted(f"{NS}/autobiographical/summary/{s}" for s in summary_ids(first))
        assert first.get_summaries_in_range() == second.get_summaries_in_range()
        assert (await first.compile(**BIG)).messages == (await second.compile(**BIG)).messages
        assert [s.id for s in first.search_summaries(".")] == ["L2-7"]


async def test_a_manager_far_behind_another_of_its_namespace_catches_up_from_the_store(store_path, monkeypatch):
    """Two managers of one namespace and branch: the first, with no model, compiles once and then
    idles while the second writes many more records than the namespace's actor holds (its
    newest 2 keys here, at most 4). The first's next read takes them in from the store: it reads
    the same summaries and compiles the same context as the second."""
    monkeypatch.setattr("asides.actors._written.WRITTEN_WINDOW", 2)
    async with open_runtime(store_path) as rt:
        await write(rt, convo(25))
        idle = await rt.open_manager(NS, strategy=auto(target=25))
        await idle.preview_context(**BIG)
        busy = await opened(rt, auto(target=25), fake_model())
        await settle(busy)
        assert len(state(rt, f"{NS}/autobiographical/")) > 8
        (held,) = [a for a in rt.statistics().actors if a.namespace == NS]
        assert held.written_keys_held <= 4
        assert summary_ids(idle) == summary_ids(busy) != []
        assert idle.get_summaries_in_range() == busy.get_summaries_in_range()
        assert (await idle.compile(**BIG)).messages == (await busy.compile(**BIG)).messages


async def test_a_broken_summary_record_is_read_fail_closed(store_path, caplog):
    """STRATEGIES 4.2, SPEC E: a malformed summary record is reported once (naming it) and neither
    rendered nor read: its chunk renders raw and is queued again, and the new summary takes a
    fresh id (the broken record's key is never reused)."""
    msg_ids = seed_records(
        store_path, [("main", "message", None, message_body("user", [{"type": "text", "text": body(i)}])) for i in range(5)]
    )
    prefix = f"{NS}/autobiographical"
    chunk = {"id": msg_ids[0], "message_ids": msg_ids[:4], "first_sequence": 1, "last_sequence": 4}
    seed_records(
        store_path,
        [
            ("main", "state", f"{prefix}/chunk/{msg_ids[0]}", chunk),
            ("main", "state", f"{prefix}/summary/L1-1", {"id": "L1-1", "level": 1, "text": 7, "chunk": msg_ids[0]}),
        ],
    )
    caplog.set_level("WARNING")
    async with open_runtime(store_path) as rt:
        idle = await rt.open_manager(NS, strategy=auto(target=25))
        assert idle.get_summaries_in_range() == () and idle.get_summary("L1-1") is None
        assert layout(await idle.compile(**BIG)) == [("raw", i) for i in msg_ids]
        assert idle.pending_work() == "messages 1–4 to compress (no compression model)"
        await idle.aclose()
        m = await opened(rt, auto(target=25), fake_model())
        assert summary_ids(m) == ["L1-2"]
        assert m.get_summary("L1-2").message_ids == tuple(msg_ids[:4])
        assert rt.store.get_state("main", f"{prefix}/summary/L1-1")["text"] == 7
    reports = [r.getMessage() for r in caplog.records if "summary/L1-1" in r.getMessage()]
    assert len(reports) == 1, reports


async def test_a_fork_resumes_the_records_and_each_branch_reads_its_own(store_path):
    """STRATEGIES 4.14, SPEC C7, S2: a forked branch holds the records as of the fork point and
    continues the same counter; ids on the two branches coincide for different summaries, and
    each branch's reads see only its own."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(5))
        m = await opened(rt, auto(target=25), fake_model(lambda r, n: f"main {n}"))
        forked = await opened(rt, auto(target=25), fake_model(lambda r, n: f"fork {n}"), ns=NS)
        await forked.fork("b")
        assert forked.branch == "b" and summary_ids(forked) == ["L1-1"]
        main_more = await write(rt, convo(4, start=5))
        fork_more = await write(rt, convo(4, start=5), branch="b")
        await settle(m)
        await settle(forked)
        assert [(s.id, s.text, s.message_ids) for s in m.get_summaries_in_range()] == [
            ("L1-1", "main 1", ids(msgs[:4])),
            ("L1-2", "main 2", ids(msgs[4:] + main_more[:3])),
        ]
        assert [(s.id, s.text, s.message_ids) for s in forked.get_summaries_in_range()] == [
            ("L1-1", "main 1", ids(msgs[:4])),
            ("L1-2", "fork 1", ids(msgs[4:] + fork_more[:3])),
        ]


async def test_set_strategy_away_and_back_resumes_the_records(store_path):
    """STRATEGIES 4.14, 4.2: ``set_strategy`` leaves the old strategy's records in place; switching
    to passthrough, or to Knowledge (whose records live under ``knowledge/`` and never mix with
    Autobiographical's), and back resumes them, with no request for work already done."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(9))
        model = fake_model()
        m = await opened(rt, auto(target=25), model)
        before = await m.compile(**BIG)
        auto_records = state(rt)
        await m.set_strategy(PassthroughStrategy())
        assert layout(await m.compile(**BIG)) == raw(msgs)
        await m.set_strategy(knowledge(target=25))
        await settle(m)
        assert [s.id for s in m.get_summaries_in_range()] == ["L1-1", "L1-2"]
        assert len(model.requests) == 4
        assert state(rt) == auto_records
        await m.set_strategy(auto(target=25))
        await settle(m)
        assert len(model.requests) == 4
        assert (await m.compile(**BIG)).messages == before.messages


async def test_a_fork_while_a_request_is_out_writes_its_result_nowhere(store_path):
    """STRATEGIES 4.14: a manager that forks while its L1 request is out cancels the unit; its
    result is written to neither branch. The work waits on the old branch for whoever works there
    next, and is done afresh on the new one."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(5))
        model = gated_model()
        m = await rt.open_manager(NS, strategy=auto(target=25), model=model)
        await model.wait_for_request()
        await m.fork("b")
        model.open()
        await settle(m)
        assert [(s.id, s.text) for s in m.get_summaries_in_range()] == [("L1-1", "memory 2")]
        assert rt.store.state_items("main", f"{NS}/autobiographical/summary/") == {}
        idle = await rt.open_manager(NS, strategy=auto(target=25))
        await idle.preview_context(**BIG)
        assert idle.pending_work() == "messages 1–4 to compress (no compression model)"
        assert m.get_summary("L1-1").message_ids == ids(msgs[:4])


async def test_records_name_what_they_cover_as_runs_whatever_they_cover(store_path):
    """docs/strategies.md, "Records": a chunk or summary record names its messages as runs of
    consecutive ids (``message_runs``), so a record covering four messages and one covering
    twenty-four are the same size; the summaries read back name every message, in order, equal
    to the tuple of their ids."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(25))
        m = await opened(rt, auto(target=25), fake_model())
        records = state(rt)
        top = records[f"{NS}/autobiographical/summary/L2-7"]
        assert top["message_runs"] == [[int(msgs[0].id), 24]] and "message_ids" not in top
        for n in range(1, 7):
            record = records[f"{NS}/autobiographical/summary/L1-{n}"]
            assert record["message_runs"] == [[int(msgs[4 * (n - 1)].id), 4]]
            chunk = records[f"{NS}/autobiographical/chunk/{record['chunk']}"]
            assert chunk["message_runs"] == record["message_runs"]
        summary = m.get_summary("L2-7")
        assert summary.message_ids == ids(msgs[:24]) and list(summary.message_ids) == [x.id for x in msgs[:24]]
        assert len(summary.message_ids) == 24 and summary.message_ids[-1] == msgs[23].id and msgs[5].id in summary.message_ids
        (entry, _) = [e for e in (await m.compile(**BIG)).provenance.entries if e.kind == "summary"]
        assert entry.message_ids == ids(msgs[:24])


async def test_a_reader_whose_view_skips_messages_covers_them_in_as_many_runs(store_path):
    """A reader's chunk skips what the reader does not see: its runs break there, and its
    summary names exactly the messages the reader saw."""
    async with open_runtime(store_path) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        msgs = []
        for i in range(9):
            msgs.append(await host.add_message("user", [text(body(i))]))
            if i == 1:
                await host.add_message("user", [text("for bob", audience=["bob"])])
        m = await opened(rt, auto(target=25), fake_model(), view_reader="ann")
        (first,) = [s for s in m.get_summaries_in_range() if s.id == "L1-1"]
        assert first.message_ids == ids(msgs[:4])
        record = state(rt)[f"{NS}/autobiographical/summary/L1-1"]
        assert record["message_runs"] == [[int(msgs[0].id), 2], [int(msgs[2].id), 2]]


async def test_records_that_list_their_ids_are_still_read(store_path):
    """Records written before runs were, which list ``message_ids``, are read as they were: the
    summary renders and reads back, its chunk is owned, and what is written next uses runs."""
    msg_ids = seed_records(
        store_path, [("main", "message", None, message_body("user", [{"type": "text", "text": body(i)}])) for i in range(9)]
    )
    prefix = f"{NS}/autobiographical"
    chunk = {"id": msg_ids[0], "message_ids": msg_ids[:4], "first_sequence": 1, "last_sequence": 4}
    summary = {"id": "L1-1", "level": 1, "text": "old memory", "message_ids": msg_ids[:4], "first_sequence": 1,
               "last_sequence": 4, "chunk": msg_ids[0]}
    seed_records(
        store_path, [("main", "state", f"{prefix}/chunk/{msg_ids[0]}", chunk), ("main", "state", f"{prefix}/summary/L1-1", summary)]
    )
    async with open_runtime(store_path) as rt:
        m = await opened(rt, auto(target=25), fake_model())
        assert m.get_summary("L1-1").message_ids == tuple(msg_ids[:4])
        assert layout(await m.compile(**BIG))[:2] == [("summary", "L1-1"), ("summary", "L1-2")]
        assert state(rt)[f"{prefix}/summary/L1-2"]["message_runs"] == [[int(msg_ids[4]), 4]]


async def test_erasing_a_message_inside_a_run_drops_the_records_that_cover_it(store_path):
    """Erasure reaches a record by its runs: erasing a message in the middle of a chunk drops
    the chunk and every summary over it (the level-2 one too), what remains is chunked again
    around the gap, and no record or summary names the erased message."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(25))
        m = await opened(rt, auto(target=25), fake_model())
        erasure = await rt.erase([msgs[9].id], reason="asked")
        assert erasure.summaries_invalidated == 2 and erasure.records_invalidated == 3
        await settle(m)
        records = state(rt)
        assert records[f"{NS}/autobiographical/summary/L2-7"] is None and records[f"{NS}/autobiographical/summary/L1-3"] is None
        assert records[f"{NS}/autobiographical/summary/L1-2"]["message_runs"] == [[int(msgs[4].id), 4]]
        assert all(msgs[9].id not in (ids_from_record(v) or ()) for v in records.values() if isinstance(v, dict))
        assert all(msgs[9].id not in s.message_ids for s in m.get_summaries_in_range())
        remade = records[f"{NS}/autobiographical/chunk/{msgs[8].id}"]
        assert remade["message_runs"] == [[int(msgs[8].id), 1], [int(msgs[10].id), 2]]


async def test_an_open_reads_the_records_and_the_windows_not_the_history(store_path):
    """Counted, not timed: a compressing manager opened over a long, compressed history, with a
    message cache of 16, reads as many records and messages at 1,200 messages as at 300: the
    store's open reads none of the strategy's records (it counts them a block of sequences),
    the strategy reads its own, and the first compile the messages it shows (the head,
    the recent window, what is not summarised yet), as many at 1,200 messages as at 300, for a
    reader whose view skips other readers' messages: it does not walk its chunks' places in the
    history to find where compression stopped (the blocks of who sees what it reads stay as
    few)."""

    def strategy() -> AutobiographicalStrategy:
        return AutobiographicalStrategy(target_chunk_tokens=100, head_window_tokens=60, recent_window_tokens=200, merge_threshold=3)

    async def grow(until: int) -> None:
        async with open_runtime(store_path, model=ExtractiveModel(keep_requests=0)) as rt:
            host = await rt.open_manager("host", strategy=PassthroughStrategy())
            for i in range(written, until):
                blocks = [text(f"message {i:05d} " + "x" * 40)] + ([text(f"for ann {i}", ["ann"])] if i % 10 == 3 else [])
                await host.add_message("user", [text(f"for bob {i}", ["bob"])] if i % 7 == 2 else blocks)
            m = await rt.open_manager(NS, strategy=strategy(), view_reader="ann")
            await m.drain()

    async def first_compile() -> tuple[int, int, int, int]:
        async with open_runtime(store_path, model=ExtractiveModel(keep_requests=0), message_cache=16) as rt:
            m = await rt.open_manager(NS, strategy=strategy(), view_reader="ann")
            compiled = await m.compile(max_tokens=100_000)
            stats = rt.store.statistics()
            memories = sum(1 for e in compiled.provenance.entries if e.kind == "summary") // 2
            return stats.messages_read, stats.records_read_at_open, memories, stats.audience_blocks_read

    written = 0
    await grow(300)
    written = 300
    short = await first_compile()
    await grow(1200)
    long = await first_compile()
    assert short[2] >= 2 and long[2] >= 2 and long[1] == short[1]  # as many windows, no record read by the store's open
    assert long[0] <= short[0] + 8 and long[0] < 60 and long[3] <= short[3] + 2, (short, long)


def test_what_memory_holds_follows_the_records_not_the_messages_they_cover():
    """Loaded records cost memory by record, not by message covered: records whose chunks cover
    400 messages each take about what records of 4 messages each take."""
    import tracemalloc

    from asides.strategies._autobiographical.records import Memory

    def records(per_chunk: int, chunks: int = 300) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for c in range(chunks):
            first = 1 + c * per_chunk
            runs = {"message_runs": [[first, per_chunk]], "first_sequence": first, "last_sequence": first + per_chunk - 1}
            out[f"autobiographical/chunk/{first}"] = {"id": str(first), **runs}
            out[f"autobiographical/summary/L1-{c + 1}"] = {"id": f"L1-{c + 1}", "level": 1, "text": "m", "chunk": str(first), **runs}
        return out

    def held(per_chunk: int) -> int:
        loaded = records(per_chunk)
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        memory = Memory("autobiographical")
        memory.load(loaded)
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert len(memory.chunks) == len(memory.summaries) == 300
        assert memory.owns(str(1 + 299 * per_chunk + per_chunk - 1)) and not memory.owns(str(1 + 300 * per_chunk))
        return after - before

    small, large = held(4), held(400)
    assert large < 1.1 * small, (small, large)


# -- 9. reset_head_window (4.12) ----------------------------------------------------------------


async def test_reset_with_text_appends_the_marker_and_starts_the_head_there(store_path):
    """STRATEGIES 4.12, 8, SPEC C3: ``reset_head_window(text)`` appends a message by
    ``Context Manager`` whose one text block is ``[Topic Transition]\\n\\n<text>`` with no audience
    (even under a reader), records the head start and returns ``text``. The head now starts at the
    marker; the old head and everything before it become middle: chunked with the gap rule (a
    two-message chunk closes at the marker), compressed without the head in their requests (it
    lies after them), rendered after the new head. The head start is namespace state: another
    namespace's head does not move."""
    async with open_runtime(store_path) as rt:
        first = await write(rt, convo(6))
        model = fake_model()
        m = await rt.open_manager(NS, strategy=auto(target=40, head=40, recent=20), model=model, view_reader="ann")
        other = await rt.open_manager("agents/b", strategy=auto(target=40, head=40, recent=20))
        assert await m.reset_head_window("new topic") == "new topic"
        marker = m.get_all_messages()[-1]
        assert marker.participant == "Context Manager"
        assert marker.content == (TextBlock("[Topic Transition]\n\nnew topic"),)
        assert marker.content[0].audience is None
        assert state(rt)[f"{NS}/autobiographical/head-start"] == marker.sequence
        later = await write(rt, convo(5, start=6))
        await settle(m)
        assert [s.message_ids for s in m.get_summaries_in_range()] == [ids(first[:4]), ids(first[4:6])]
        assert layout(await m.compile(**BIG)) == (
            [("raw", marker.id), ("raw", later[0].id), ("summary", "L1-1"), ("summary", "L1-2")] + raw(later[1:])
        )
        assert shape(model.requests[0].messages)[0] == ("user", [MARKER])
        assert shape(model.requests[1].messages)[:3] == [("user", ["[Recall L1-1]"]), ("assistant", ["memory 1"]), ("user", [MARKER])]
        assert layout(await other.compile(**BIG))[:4] == raw(first[:4])


def transition_answer(request, n):
    return "the note" if request.system == TRANSITION_SYSTEM else f"memory {n}"


async def test_generated_transition_request_with_head_and_memories(store_path):
    """STRATEGIES 4.12 steps 1, 3, 4, 8, SPEC C3: with ``text=None`` and a model, one request:
    ``system`` ``You write short transition notes ...``, ``max_tokens`` 1500, ``model`` =
    ``compression_model``, one ``user`` message: the request text, a blank line, ``Opening of the
    conversation:``, a blank line, the head as ``<participant>: <text>`` lines; a blank line,
    ``Your recent memories:``, a blank line, the newest level-2/3 summary then newest level-1
    ones (three at most, in order of events) separated by ``\\n\\n---\\n\\n``; a blank line and
    ``Write only the note.``. The answer is stored as ``[Topic Transition]\\n\\n<answer>`` with
    ``audience=(reader,)`` and returned."""
    async with open_runtime(store_path) as rt:
        await write(rt, convo(14, speakers=("bob", "assistant")))
        model = fake_model(transition_answer)
        strategy = auto(target=25, head=20, merge_threshold=2, compression_model="mini")
        m = await opened(rt, strategy, model, view_reader="ann")
        assert sorted(s.id for s in m.search_summaries(".")) == ["L1-3", "L2-4"]
        count = len(model.requests)
        assert await m.reset_head_window() == "the note"
        (request,) = model.requests[count:]
        assert (request.system, request.max_tokens, request.model) == (TRANSITION_SYSTEM, 1500, "mini")
        assert shape(request.messages) == [
            (
                "user",
                [
                    TRANSITION_REQUEST
                    + f"\n\nOpening of the conversation:\n\nbob: {body(0)}\nassistant: {body(1)}"
                    + "\n\nYour recent memories:\n\nmemory 4\n\n---\n\nmemory 3"
                    + "\n\nWrite only the note."
                ],
            )
        ]
        marker = m.get_all_messages()[-1]
        assert marker.participant == "Context Manager"
        assert marker.content == (TextBlock("[Topic Transition]\n\nthe note", audience=("ann",)),)


async def test_generated_transition_sections_appear_only_with_content(store_path):
    """STRATEGIES 4.12 step 1, 3: with no head, only ``Your recent memories:`` (the three newest
    level-1 summaries of four, in order); with no summaries, only ``Opening of the
    conversation:``."""
    async with open_runtime(store_path) as rt:
        await write(rt, convo(16))
        model = fake_model(transition_answer)
        m = await opened(rt, auto(target=25, hierarchical=False), model)
        await m.reset_head_window()
        assert text_of(model.requests[-1].messages[0]) == (
            TRANSITION_REQUEST + "\n\nYour recent memories:\n\nmemory 2\n\n---\n\nmemory 3\n\n---\n\nmemory 4\n\nWrite only the note."
        )
    async with open_runtime(sibling_store(store_path, "second")) as rt:
        await write(rt, [("user", [text("hello")]), ("bob", [text("hi all")])])
        model = fake_model(transition_answer)
        m = await opened(rt, auto(target=1000, head=100), model)
        await m.reset_head_window()
        (request,) = model.requests
        assert text_of(request.messages[0]) == (
            TRANSITION_REQUEST + "\n\nOpening of the conversation:\n\nuser: hello\nbob: hi all\n\nWrite only the note."
        )


async def test_generated_transition_opening_is_cut_at_8000_characters(store_path):
    """STRATEGIES 4.12 step 3: the head lines are cut at 8000 characters with a final line
    ``[...truncated...]``."""
    async with open_runtime(store_path) as rt:
        await write(rt, [("user", [text(c * 3000)]) for c in "abc"])
        model = fake_model(transition_answer)
        m = await opened(rt, auto(target=100_000, head=10_000), model)
        await m.reset_head_window()
        opening = "\n".join(f"user: {c * 3000}" for c in "abc")
        assert text_of(model.requests[0].messages[0]) == (
            TRANSITION_REQUEST + "\n\nOpening of the conversation:\n\n" + opening[:8000] + "\n[...truncated...]\n\nWrite only the note."
        )


async def test_generated_transition_with_nothing_to_read_makes_no_request(store_path):
    """STRATEGIES 4.12 step 1, 8: with no head and no summaries there is no request: the text is
    ``No earlier context.`` (stored for the reader, like any generated note)."""
    async with open_runtime(store_path) as rt:
        await write(rt, convo(2))
        model = fake_model()
        m = await opened(rt, auto(target=1000, head=0), model, view_reader="ann")
        assert await m.reset_head_window() == "No earlier context."
        assert model.requests == []
        marker = m.get_all_messages()[-1]
        assert (marker.participant, marker.content[0].text) == ("Context Manager", "[Topic Transition]\n\nNo earlier context.")
        assert marker.content[0].audience == ("ann",)


async def test_generated_transition_with_no_model_raises_and_writes_nothing(store_path):
    """STRATEGIES 4.12 step 4, SPEC 3.4: with something to read and no model,
    ``reset_head_window()`` raises ``CompressionError``; nothing is written."""
    async with open_runtime(store_path) as rt:
        await write(rt, convo(3))
        m = await rt.open_manager(NS, strategy=auto(target=1000, head=40))
        before = dump(rt.store)
        with pytest.raises(CompressionError):
            await m.reset_head_window()
        assert dump(rt.store) == before


async def test_generated_transition_rejected_raises_naming_the_stop_reason(store_path):
    """STRATEGIES 4.12 step 4, 4.8: a rejected answer raises ``CompressionError`` naming the stop
    reason; nothing is written (a manager with no reader writes no floor)."""
    async with open_runtime(store_path) as rt:
        await write(rt, convo(3))
        model = fake_model(Completion("max_tokens", "cut off"))
        m = await opened(rt, auto(target=1000, head=40), model)
        before = dump(rt.store)
        with pytest.raises(CompressionError, match="max_tokens"):
            await m.reset_head_window()
        assert len(model.requests) == 1
        assert dump(rt.store) == before


async def test_reset_on_a_strategy_without_a_head_window_is_refused(store_path):
    """STRATEGIES 4.12, SPEC 3.4: on Passthrough ``reset_head_window`` raises
    ``StrategyCapabilityError`` naming the strategy; nothing is written."""
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(NS, strategy=PassthroughStrategy())
        await m.add_message("user", [text("hi")])
        before = dump(rt.store)
        for arg in ("text", None):
            with pytest.raises(StrategyCapabilityError, match="passthrough"):
                await m.reset_head_window(arg)
        assert dump(rt.store) == before


async def test_with_no_head_window_the_marker_is_ordinary_middle_history(store_path):
    """STRATEGIES 4.12 (effects): with ``head_window_tokens=0`` there is still no head after a
    reset; the marker is ordinary middle history, chunked with its neighbours."""
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(NS, strategy=auto(target=25), model=fake_model())
        msgs = [await m.add_message(p, c) for p, c in convo(2)]
        await m.reset_head_window("next")
        marker = m.get_all_messages()[-1]
        msgs += [await m.add_message(p, c) for p, c in convo(2, start=2)]
        await settle(m)
        assert m.get_summary("L1-1").message_ids == (msgs[0].id, msgs[1].id, marker.id, msgs[2].id)
        assert layout(await m.compile(**BIG)) == [("summary", "L1-1"), ("raw", msgs[3].id)]


async def test_a_claim_while_the_transition_request_is_out_discards_the_answer(store_path):
    """STRATEGIES 4.12 step 4, SPEC D4, R10: when ann claims the namespace while a no-reader
    manager's transition request is out, the answer is discarded: ``ReaderClaimError``, and no
    ``[Topic Transition]`` message or head start is written."""
    async with open_runtime(store_path) as rt:
        await write(rt, convo(3))
        model = gated_model(transition_answer)  # holds every request: the only one is the transition
        m = await opened(rt, auto(target=1000, head=40), model)
        count = len(rt.store.messages("main"))
        failures: list[BaseException] = []

        async def reset() -> None:
            try:
                await m.reset_head_window()
            except Exception as exc:  # noqa: BLE001 - recorded for the assertion below
                failures.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(reset)
            await model.wait_for_request()
            assert model.requests[0].system == TRANSITION_SYSTEM
            ann = await rt.open_manager(NS, strategy=auto(target=1000, head=40), view_reader="ann")
            model.open()
        assert len(failures) == 1 and isinstance(failures[0], ReaderClaimError)
        assert len(rt.store.messages("main")) == count
        assert f"{NS}/autobiographical/head-start" not in state(rt)
        assert ann.view_reader == "ann"


# -- 10. KnowledgeStrategy (C5, 6) --------------------------------------------------------------


async def test_knowledge_name_state_prefix_holdback_and_instructions(store_path):
    """STRATEGIES 6, 4.2, SPEC C5: ``name`` ``knowledge``; records under ``knowledge/`` (none under
    ``autobiographical/``); holdback 0 by default (both closed chunks compressed); the L1 and merge
    instructions are Knowledge's own, with ``{target}`` (and ``{what}``) filled in; the system text
    and the rest of the request are as for Autobiographical."""
    assert KnowledgeStrategy.name == "knowledge"
    async with open_runtime(store_path) as rt:
        await write(rt, convo(8))
        model = fake_model()
        m = await opened(rt, knowledge(target=25, merge_threshold=2, summary_target_tokens=44), model)
        assert m.strategy.name == "knowledge"
        assert summary_ids(m) == ["L1-1", "L2-3", "L1-2"]
        keys = set(rt.store.state_items("main", f"{NS}/knowledge/"))
        assert {f"{NS}/knowledge/summary/L1-1", f"{NS}/knowledge/summary/L1-2", f"{NS}/knowledge/summary/L2-3"} <= keys
        assert any(k.startswith(f"{NS}/knowledge/chunk/") for k in keys)
        assert rt.store.state_items("main", f"{NS}/autobiographical/") == {}
        l1, _, merge = model.requests
        assert l1.system == SYSTEM_ASSISTANT
        assert shape(l1.messages) == (
            [("user", [MARKER])]
            + [("user" if i % 2 == 0 else "assistant", [body(i)]) for i in range(4)]
            + [("user", [KNOWLEDGE_L1_TEXT.format(target=44)])]
        )
        assert instruction_of(merge) == KNOWLEDGE_MERGE_TEXT.format(what="the conversation", target=44)


async def test_knowledge_closes_and_compresses_the_trailing_chunk(store_path):
    """STRATEGIES 6, SPEC C5: when nothing else is pending, a trailing close closes the trailing
    open chunk (>= 4 messages, far below the target) and it is compressed like any other; later
    messages form a new trailing chunk that closes the same way. Autobiographical leaves the
    same trailing chunk open and raw (4.4)."""
    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(6))
        model = fake_model()
        k = await opened(rt, knowledge(target=1000), model, ns="agents/k")
        a = await opened(rt, auto(target=1000), fake_model(), ns="agents/a")
        assert [s.message_ids for s in k.get_summaries_in_range()] == [ids(msgs)]
        assert k.is_ready() and k.pending_work() is None
        assert layout(await k.compile(**BIG)) == [("summary", "L1-1")]
        assert a.get_summaries_in_range() == () and layout(await a.compile(**BIG)) == raw(msgs)
        # The bounds of a trailing close depend on when the drain runs (6): write the next
        # stretch while no manager of agents/k is open, so one trailing close takes all of it.
        await k.aclose()
        more = await write(rt, convo(5, start=6))
        k = await opened(rt, knowledge(target=1000), model, ns="agents/k")
        assert [s.message_ids for s in k.get_summaries_in_range()] == [ids(msgs), ids(more)]
        assert len(model.requests) == 2


@pytest.mark.parametrize(
    "items",
    [
        convo(3),
        convo(4) + [("assistant", [tool_use("t1", "probe", {})])],
    ],
    ids=["three-messages", "ends-in-a-call"],
)
async def test_knowledge_trailing_close_needs_four_messages_and_no_trailing_call(store_path, items):
    """STRATEGIES 6: the trailing close needs at least 4 messages and a last message holding no
    tool call; otherwise the trailing chunk stays open, raw, and is not pending work."""
    async with open_runtime(store_path) as rt:
        await write(rt, items)
        model = fake_model()
        k = await opened(rt, knowledge(target=1000), model)
        assert model.requests == [] and k.get_summaries_in_range() == ()
        assert k.is_ready()
        assert rt.store.state_items("main", f"{NS}/knowledge/") == {}


# -- 11. Ingress sharding and shard provenance (C6, 7, P1; seed rows 10 and 17) -----------------

LONG = (
    "# Notes\n\nThe first paragraph has a sentence. And another one follows it here.\n\n```\ncode line one\n"
    "code line two\n```\n" + "Plain words go on and on. " * 12 + "\nlast line"
)


def sharding(target: int = 10, **kw: Any) -> AutobiographicalStrategy:
    return AutobiographicalStrategy(adaptive_resolution=True, target_chunk_tokens=target, **kw)


async def test_a_long_message_is_stored_as_shards_sharing_a_body_id(store_path):
    """STRATEGIES 7, SPEC C6 (seed row 17, the sharded half): with ``adaptive_resolution=True`` a
    message with at least 2 x ``target_chunk_tokens`` tokens of text is stored as several
    messages: shard k holds one text block (shard 0 also the message's non-text blocks, after its
    text), metadata ``body_id`` = ``bg-`` + the first 16 hex digits of the SHA-256 of the full text,
    ``shard_index`` and ``shard_count``; the shards' texts joined give the text back exactly, and
    each is at most 25% longer than ``target_chunk_tokens`` x 3 characters."""
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(NS, strategy=sharding(10))
        await m.add_message("user", [text(LONG), image("image/png", data="AAAA"), system_change("tools changed")])
        shards = m.get_all_messages()
        assert len(shards) >= 3
        body_id = "bg-" + hashlib.sha256(LONG.encode("utf-8")).hexdigest()[:16]
        assert re.fullmatch(r"bg-[0-9a-f]{16}", body_id)
        for index, shard in enumerate(shards):
            assert shard.participant == "user"
            meta = dict(shard.metadata)
            assert (meta["body_id"], meta["shard_index"], meta["shard_count"]) == (body_id, index, len(shards))
            assert isinstance(shard.content[0], TextBlock) and 0 < len(shard.content[0].text) <= 37
        assert shards[0].content[1:] == (ImageBlock("image/png", "AAAA"), SystemChangeBlock("tools changed"))
        assert all(len(s.content) == 1 for s in shards[1:])
        assert "".join(s.content[0].text for s in shards) == LONG


async def test_shards_prefer_the_best_seam_and_join_exactly(store_path):
    """STRATEGIES 7: seams, best first: a line starting a heading wins over a plain newline nearer
    the target size; with no whitespace at all the text is cut hard; joining always gives the
    text back."""
    heading_text = "A" * 17 + "\n# BBBBBBBBBB\n" + "C" * 40
    hard_text = "z" * 100
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(NS, strategy=sharding(10))
        await m.add_message("user", [text(heading_text)])
        pieces = [s.content[0].text for s in m.get_all_messages()]
        assert pieces[0] == "A" * 17 + "\n" and pieces[1].startswith("# B")
        assert "".join(pieces) == heading_text
    async with open_runtime(sibling_store(store_path, "second")) as rt:
        m = await rt.open_manager(NS, strategy=sharding(10))
        await m.add_message("user", [text(hard_text)])
        pieces = [s.content[0].text for s in m.get_all_messages()]
        assert len(pieces) >= 3 and all(0 < len(p) <= 37 for p in pieces)
        assert "".join(pieces) == hard_text


@pytest.mark.parametrize(
    ("blocks", "count"),
    [
        ([text("x" * 57)], 1),  # T = 19 < 20: whole
        ([text("x" * 58)], 2),  # T = 20: sharded
        ([text("x" * 30), text("y" * 30)], 2),  # T of the joined text: 20
    ],
    ids=["below-twice-target", "at-twice-target", "joined-blocks"],
)
async def test_the_sharding_threshold_is_twice_the_target_of_the_joined_text(store_path, blocks, count):
    """STRATEGIES 7: a message with fewer than 2 x ``target_chunk_tokens`` tokens of text (``T``
    of its text blocks joined with no separator) is stored whole."""
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(NS, strategy=sharding(10))
        await m.add_message("user", blocks)
        stored = m.get_all_messages()
        assert len(stored) == count
        assert "".join(b.text for s in stored for b in s.content) == "".join(b.text for b in blocks)


@pytest.mark.parametrize(
    "blocks",
    [
        [text(LONG), text("for ann only", audience=["ann"])],
        [text(LONG, audience=["ann"])],
    ],
    ids=["plus-an-audience-block", "audience-on-the-long-block"],
)
async def test_row17_a_message_holding_an_audience_block_is_stored_whole(store_path, blocks):
    """Seed row 17 "keeps a message that holds an audience block whole, never sharded at ingress"
    (SPEC W3, C6; STRATEGIES 7): the same long text that is sharded alone is stored as one message,
    unchanged and without shard metadata, once the message holds an audience block."""
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(NS, strategy=sharding(10), view_reader="ann")
        await m.add_message("user", [text(LONG)])
        sharded = m.get_all_messages()
        assert len(sharded) > 1 and len({s.metadata["body_id"] for s in sharded}) == 1
        await m.add_message("user", blocks)
        whole = m.get_all_messages()[len(sharded) :]
        assert len(whole) == 1
        assert whole[0].content == tuple(blocks)
        assert "body_id" not in whole[0].metadata


async def test_without_adaptive_resolution_nothing_is_sharded(store_path):
    """STRATEGIES 7: sharding is off by default."""
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(NS, strategy=AutobiographicalStrategy(target_chunk_tokens=10))
        await m.add_message("user", [text(LONG)])
        assert len(m.get_all_messages()) == 1


async def test_row10_a_body_only_some_of_whose_shards_are_raw_is_incomplete(store_path):
    """SPEC P1, C6 (seed row 10, first half): shards are ordinary messages to a strategy; when some
    shards of a body are compressed and others are compiled raw, provenance reports each raw shard
    ``complete=False`` (only part of the body made it in). Before any compression every shard is
    raw and complete."""
    async with open_runtime(store_path) as rt:
        words = " ".join(f"word{i:03d}" for i in range(40))
        idle = await rt.open_manager("agents/idle", strategy=sharding(10, head_window_tokens=0, recent_window_tokens=30))
        await idle.add_message("user", [text(words)])
        shards = idle.get_all_messages()
        assert len(shards) >= 6
        before = await idle.compile(**BIG)
        assert dict(before.provenance.complete) == {s.id: True for s in shards}
        m = await opened(rt, sharding(10, head_window_tokens=0, recent_window_tokens=30, holdback_chunks=0), fake_model())
        compiled = await m.compile(**BIG)
        covered = {i for s in m.get_summaries_in_range() for i in s.message_ids}
        raw_ids = [e.message_ids[0] for e in compiled.provenance.entries if e.kind == "raw"]
        assert covered and raw_ids
        assert covered | set(raw_ids) == {s.id for s in shards}
        assert dict(compiled.provenance.complete) == {i: False for i in raw_ids}


def shard_body(content: list[dict[str, Any]], index: int, count: int) -> dict[str, Any]:
    return message_body("user", content, {"body_id": "bg-0123456789abcdef", "shard_index": index, "shard_count": count})


async def test_row10_a_shard_wholly_another_readers_is_no_part_of_the_body(store_path):
    """Seed row 10 "counts a shard every block of which is another reader's as no part of this
    reader's body, and no other empty shard" (SPEC P1, C6, A3): a body's middle shard holds only
    bob's block (written below the API, which never shards an audience message, W3). For ann it
    is not listed (no ``complete`` or ``raw_bodies`` entry, no compiled message) and does not make
    the body incomplete: her two shards are ``complete=True``."""
    ids_ = seed_records(
        store_path,
        [
            ("main", "message", None, shard_body([{"type": "text", "text": "alpha part "}], 0, 3)),
            ("main", "message", None, shard_body([{"type": "text", "text": "bob's part ", "audience": ["bob"]}], 1, 3)),
            ("main", "message", None, shard_body([{"type": "text", "text": "omega part"}], 2, 3)),
        ],
    )
    async with open_runtime(store_path) as rt:
        for strategy in (PassthroughStrategy(), auto(target=1000)):
            m = await rt.open_manager("agents/ann-" + strategy.name, strategy=strategy, view_reader="ann")
            compiled = await m.compile(**BIG)
            assert [e.message_ids for e in compiled.provenance.entries] == [(ids_[0],), (ids_[2],)]
            assert dict(compiled.provenance.complete) == {ids_[0]: True, ids_[2]: True}
            assert set(compiled.provenance.raw_bodies) == {ids_[0], ids_[2]}
            await m.aclose()


@pytest.mark.parametrize(
    ("first_shard", "complete"),
    [
        ([{"type": "text", "text": "bob's part", "audience": ["bob"]}], True),
        ([{"type": "text", "text": ""}], False),
    ],
    ids=["wholly-bobs", "empty-text"],
)
async def test_row10_any_other_empty_shard_still_counts(store_path, first_shard, complete):
    """Seed row 10, second half (SPEC P1): only a shard wholly another reader's is no part of the
    reader's body; any other empty shard still counts. A passthrough compile for ann whose budget
    holds exactly the last two shards: with the first shard bob's, ann's body is whole
    (``complete=True``); with the first shard an empty text, it is part of her body and missing,
    so the two compiled shards are ``complete=False``."""
    ids_ = seed_records(
        store_path,
        [
            ("main", "message", None, shard_body(first_shard, 0, 3)),
            ("main", "message", None, shard_body([{"type": "text", "text": "middle part"}], 1, 3)),
            ("main", "message", None, shard_body([{"type": "text", "text": "last part"}], 2, 3)),
        ],
    )
    budget = 2 * 4 + estimate_text("middle part") + estimate_text("last part")
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        compiled = await m.compile(max_tokens=budget, reserve_for_response=0)
        assert [e.message_ids for e in compiled.provenance.entries] == [(ids_[1],), (ids_[2],)]
        assert dict(compiled.provenance.complete) == {ids_[1]: complete, ids_[2]: complete}


async def test_a_request_that_shows_memories_names_what_they_cover_by_runs(store_path):
    """A merge request's ``source_ids`` (what it shows, its children's messages through them)
    is a ``MessageIds``: the messages its memories cover as a run or two, not id by id, and the
    runtime records every one of them as shown to the provider."""
    from asides import MessageIds

    async with open_runtime(store_path) as rt:
        msgs = await write(rt, convo(60))
        model = fake_model()
        m = await opened(rt, auto(target=25, merge_threshold=3, compression_context_tokens=400), model)
        widest = max(model.requests, key=lambda r: len(r.source_ids))
        ids = widest.source_ids
        assert isinstance(ids, MessageIds) and len(ids) >= 20 and len(ids.runs()) <= 2
        assert tuple(ids) == tuple(sorted(set(ids), key=int))  # each once, in order
        assert {d.via for d in rt.disclosures(ids[0])} >= {"compression"}
        assert {d.via for d in rt.disclosures(ids[-1])} >= {"compression"}
        assert any(s.level >= 2 for s in m.get_summaries_in_range()) and msgs[0].id in ids
