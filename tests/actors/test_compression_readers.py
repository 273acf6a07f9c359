"""Compression under readers: summaries, drains and claims (SPEC 1 D3-D4, 3, A, R3, R5, R8,
R8.2, R10, N2, N6, N7, C3, C4, F; STRATEGIES 5).

Seed rows 5, 23, 29, 34, 64, 65 and 72 of ``seed/TESTS.md`` (titles verbatim in the docstrings,
with their SPEC ids), the review's R1-1 probe (b) turned around (a manager opened with no reader
never thins the recorded reader's memory), a Hypothesis property for C4 over three readers, and
the drains of D3/F (closing cancels and waits, the runtime waits for every drain, a failing
model is retried with back-off on a mock clock).

The models here are ``asides.testing`` models answering as the seed probe's *marker-reporting*
summariser (``MarkerSummary``, a ``ScriptedModel``'s ``respond``): each joins the text of every
request message and answers ``end_turn`` with a text naming every ``(ANN|BOB|CLEO)-ONLY-<n>``
marker it was shown, plus filler. Because it echoes every marker it reads, "which markers reached
a summary" is exactly "which markers compression read", and a marker that is missing from a
reader's compile was thinned away. A *blocking* model is a ``GatedModel`` around it, holding
its request out until released; a *flaky* one is a ``FailingModel`` answering with it when it
does not fail.

No sleeps are used for synchronisation: tests wait on a gated model's ``wait_for_request()``, on
``manager.drain()``, or on ``trio.testing.wait_all_tasks_blocked()``; the back-off test runs on
``trio.testing.MockClock`` (``autojump_clock``).

Sections:
  1. Helpers (models, strategies, conversations, readers of the store)
  2. Seed rows 23, 29 (+ probe (b) inverse), 34 (+ D4's late answer to a host's own ``tick`` and
     to a transition request), 5, 64, 65, 72
  3. C4 as a property (Hypothesis, three readers, shared audiences)
  4. Drains (D3, F): close cancels and waits, the runtime waits, back-off on a failing model
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Container
from typing import Any

import anyio
import attrs
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asides import ModelPolicy
from asides.actors import ManagerClosedError, ReaderClaimError, open_runtime
from asides.store import text
from asides.store._blocks import TextBlock
from asides.strategies._autobiographical import AutobiographicalStrategy
from asides.strategies._autobiographical.compression import TRANSITION_SYSTEM
from asides.strategies._base import CompiledMessage
from asides.strategies._models import Completion, CompletionRequest, Usage, completion_text
from asides.strategies._passthrough import PassthroughStrategy
from asides.testing import FailingModel, GatedModel, ScriptedModel
from tests.helpers import sibling_store

# -- 1. Helpers ---------------------------------------------------------------------------------

MARKER = re.compile(r"(?:ANN|BOB|CLEO)-ONLY-\d+")
BIG = {"max_tokens": 10_000_000, "reserve_for_response": 0}
KIND = "autobiographical"


def request_text(request: CompletionRequest) -> str:
    """The text of every message of a request, joined."""
    return "\n".join(b.text for m in request.messages for b in m.content if isinstance(b, TextBlock))


def markers(value: str) -> set[str]:
    return set(MARKER.findall(value))


class MarkerSummary:
    """The seed probe's summariser, as the ``respond`` of a :class:`ScriptedModel`: answers
    ``end_turn`` naming every marker the request showed, plus filler. ``tag`` starts each answer
    (with the answer's number), so an answer can be traced to the model that wrote it; ``answers``
    records every answer given."""

    def __init__(self, tag: str = "SUMMARY") -> None:
        self.tag = tag
        self.answers: list[str] = []

    def __call__(self, request: CompletionRequest) -> Completion:
        seen = request_text(request)
        found = list(dict.fromkeys(MARKER.findall(seen)))  # each marker once, in order
        body = f"{self.tag}#{len(self.answers) + 1} {' '.join(found)} {'x ' * 40}".strip()
        self.answers.append(body)
        return Completion("end_turn", body, Usage(max(1, len(seen) // 4), 25))


def marker_model(tag: str = "SUMMARY") -> ScriptedModel:
    """A model answering every request with :class:`MarkerSummary` (``tag``), recording each."""
    return ScriptedModel(respond=MarkerSummary(tag), name=tag)


def shown(model: ScriptedModel | GatedModel) -> list[set[str]]:
    """The markers each request ``model`` received showed, in order."""
    return [markers(request_text(request)) for request in model.requests]


def blocking_model(tag: str = "BLOCKED", *, shield: bool = False) -> tuple[GatedModel, MarkerSummary]:
    """A model holding each request until the test releases it, then answering with the marker
    summariser (returned too, for its ``answers``). With ``shield`` a held request ignores
    cancellation, so its answer arrives late, after whatever cancelled it."""
    summariser = MarkerSummary(tag)
    return GatedModel(ScriptedModel(respond=summariser, name=tag), shield=shield, name=tag), summariser


def finished(blocking: GatedModel, summariser: MarkerSummary) -> int:
    """How many of ``blocking``'s requests have ended: abandoned by their caller (cancelled while
    held), or answered (the summariser's answer is the last step of a call)."""
    return len(blocking.abandoned) + len(summariser.answers)


def flaky_model(fail: Container[int], tag: str = "RECOVERED") -> tuple[FailingModel, list[float]]:
    """A model whose calls numbered in ``fail`` (1-based) raise, the others answered by the marker
    summariser (``tag``); also the list of ``trio.current_time()`` at each call, filled as the
    failure schedule is consulted (once per call, when it arrives)."""
    times: list[float] = []

    def fails(number: int) -> bool:
        times.append(trio.current_time())
        return number in fail

    def outage(number: int) -> BaseException:
        return (RuntimeError, ConnectionError, ValueError)[number % 3](f"model outage #{number}")

    model = FailingModel(outage, fails=fails, then=ScriptedModel(respond=MarkerSummary(tag), name=tag), name=tag)
    return model, times


def memory(**overrides: Any) -> AutobiographicalStrategy:
    options: dict[str, Any] = {"target_chunk_tokens": 300, "head_window_tokens": 0, "recent_window_tokens": 0}
    options.update(overrides)
    return AutobiographicalStrategy(**options)


def filler(i: int) -> TextBlock:
    return text(f"Message {i}. {'filler words ' * 20}")


async def write_conversation(manager, count: int, *, private: dict[str, int] | None = None) -> dict[str, tuple[str, ...]]:
    """Write ``count`` messages through ``manager``. ``private`` maps a reader to a period: every
    ``period``-th message (i % period == 0) also holds a block ``<READER>-ONLY-<n>`` for that
    reader alone, ``n`` counting that reader's blocks. Returns marker -> audience."""
    audiences: dict[str, tuple[str, ...]] = {}
    counters = {reader: 0 for reader in (private or {})}
    for i in range(count):
        blocks = []
        for reader, period in (private or {}).items():
            if i % period == 0:
                marker = f"{reader.upper()}-ONLY-{counters[reader]}"
                counters[reader] += 1
                audiences[marker] = (reader,)
                blocks.append(text(marker, [reader]))
        blocks.append(filler(i))
        await manager.add_message("user", blocks)
    return audiences


def stored_summaries(store, namespace: str, branch: str = "main") -> dict[str, dict[str, Any]]:
    """The summary records of ``namespace`` on ``branch``, straight from the store."""
    prefix = f"{namespace}/{KIND}/summary/"
    return {k[len(prefix) :]: v for k, v in store.state_items(branch, prefix).items()}


def all_summary_texts(store, branch: str = "main") -> list[str]:
    return [v["text"] for k, v in store.state_items(branch).items() if f"/{KIND}/summary/" in k and isinstance(v, dict)]


def compiled_text(compiled) -> str:
    return "\n".join(b.text for m in compiled.messages for b in m.content if isinstance(b, TextBlock))


def summary_reads(manager, summary_id: str | None) -> dict[str, Any]:
    """The three summary reads of SPEC R8.2, each as a value or the exception it raised."""

    def tried(fn):
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - the probe reports whatever it met
            return exc

    return {
        "search": tried(lambda: manager.search_summaries(r"[\s\S]", limit=10_000)),
        "range": tried(lambda: manager.get_summaries_in_range()),
        "get": tried(lambda: manager.get_summary(summary_id) if summary_id is not None else None),
    }


def read_markers(reads: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    for value in reads.values():
        for summary in value if isinstance(value, tuple) else [value]:
            if summary is not None and not isinstance(summary, Exception):
                found |= markers(summary.text)
    return found


async def make_branch(rt, name: str) -> None:
    """Make branch ``name`` off main's head through a throwaway manager of another namespace."""
    helper = await rt.open_manager("setup/brancher", strategy=PassthroughStrategy())
    await helper.fork(name)
    await helper.aclose()


async def wait_for_drain(manager, outcome: list[BaseException | None]) -> None:
    """Await ``manager.drain()`` and record how it ended (``None``: it returned)."""
    try:
        await manager.drain()
    except Exception as exc:  # noqa: BLE001 - recorded for the test to judge
        outcome.append(exc)
    else:
        outcome.append(None)


def all_tasks() -> set[Any]:
    """Every task now alive under the root task."""
    found: set[Any] = set()
    pending = [trio.lowlevel.current_root_task()]
    while pending:
        task = pending.pop()
        found.add(task)
        for nursery in task.child_nurseries:
            pending.extend(nursery.child_tasks)
    return found


# -- 2. Seed rows -------------------------------------------------------------------------------


async def test_row23_summaries_written_before_a_claim_are_kept_and_used(store_path):
    """keeps summaries written before a reader claims the namespace, and that reader's compiles use them

    Seed row 23. SPEC R8, C3, R3, A1. A manager with no reader compresses an unclaimed namespace
    (its view holds no audience block, so neither do its summaries). Then ann claims the
    namespace: every summary record is still there, byte for byte, ann's three summary reads
    return them, and ann's compile renders them (every message of her view is covered by one of
    those summaries or compiled raw). Ann's manager has no model, so any summary in her compile
    is one written before her claim. (As R8 and STRATEGIES 5 accept, those summaries were written
    from the no-reader view, so her blocks in the messages they cover are not in them.)"""
    async with open_runtime(store_path) as rt:
        model = marker_model()
        nobody = await rt.open_manager("agents/s", strategy=memory(), model=model)
        audiences = await write_conversation(nobody, 40, private={"ann": 4})
        await nobody.drain()
        before = nobody.get_summaries_in_range()
        records = stored_summaries(rt.store, "agents/s")
        assert before and records, "the premise: the no-reader manager wrote summaries"
        assert all(not markers(v["text"]) for v in records.values()), "a no-reader view holds no audience block"
        await nobody.aclose()

        head = rt.store.head("main")
        ann = await rt.open_manager("agents/s", strategy=memory(), view_reader="ann")
        assert rt.store.get_state("main", "agents/s/reader") == "ann"
        assert rt.store.head("main") == head + 1, "the claim is one write and removes nothing"
        assert stored_summaries(rt.store, "agents/s") == records
        assert ann.get_summaries_in_range() == before
        assert {s.id for s in ann.search_summaries(r"[\s\S]", limit=1000)} <= {s.id for s in before}
        assert all(ann.get_summary(s.id) == s for s in before)

        compiled = await ann.compile(**BIG)
        entries = compiled.provenance.entries
        used = {e.summary_id for e in entries if e.kind == "summary"}
        assert used, "ann's compile renders the summaries written before her claim"
        assert used <= {s.id for s in before}
        by_id = {s.id: s for s in before}
        body = compiled_text(compiled)
        assert all(by_id[sid].text in body for sid in used)
        covered = {i for e in entries for i in e.message_ids}
        assert covered == {m.id for m in rt.store.messages("main")}, "every message raw or in a summary"
        # The raw part of her compile is her view: her blocks that no summary covers are there.
        raw_ids = {i for e in entries if e.kind == "raw" for i in e.message_ids}
        raw_markers = {
            mk for m in rt.store.messages("main") if m.id in raw_ids for b in m.content for mk in markers(getattr(b, "text", ""))
        }
        assert raw_markers <= markers(body) and raw_markers <= set(audiences)
        assert stored_summaries(rt.store, "agents/s") == records, "a compile writes no summary"


async def test_row29_no_reader_manager_compresses_for_the_recorded_reader(store_path):
    """compiles and compresses for the namespace's reader when opened with no reader, so it neither
    reads her material as no one nor thins her memory

    Seed row 29 (the review's R1-1 probe (b), turned into the guarantee). SPEC R3, A1, A1.5, C3,
    C4, STRATEGIES 5. Ann claims agents/ann and writes 60 messages (every third holds one of her
    20 ``ANN-ONLY`` blocks, every fifth one of bob's) with no model, so nothing compresses. A
    manager opened on agents/ann with NO reader then compresses it: it compiles for ann, every one
    of her 20 markers is in her compile (raw or in a summary), none of bob's is anywhere, and the
    two managers' compiles are equal. Probe (b)'s inverse: no summary thins her memory; each
    summary names every one of her markers in the messages it covers."""
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=memory(), view_reader="ann")
        audiences = await write_conversation(ann, 60, private={"ann": 3, "bob": 5})
        ann_markers = {m for m, a in audiences.items() if a == ("ann",)}
        bob_markers = {m for m, a in audiences.items() if a == ("bob",)}
        assert len(ann_markers) == 20
        assert not stored_summaries(rt.store, "agents/ann"), "the premise: nothing compressed yet"
        await ann.aclose()

        model = marker_model()
        nobody = await rt.open_manager("agents/ann", strategy=memory(), model=model)
        assert nobody.view_reader == "ann"
        await nobody.drain()
        assert model.requests, "the no-reader manager compressed"
        summaries = nobody.get_summaries_in_range()
        assert summaries

        # Compression read her view: her markers, none of bob's, in the requests and the summaries.
        assert set().union(*shown(model)) <= ann_markers and len(set().union(*shown(model))) >= 10
        assert not markers("\n".join(s.text for s in summaries)) & bob_markers

        # Never thinned: each summary (every level) names every one of her markers it covers.
        marker_of = {
            m.id: {mk for b in m.content if getattr(b, "audience", None) == ("ann",) for mk in markers(b.text)}
            for m in rt.store.messages("main")
        }
        for summary in summaries:
            covered = set().union(*(marker_of.get(i, set()) for i in summary.message_ids))
            assert covered <= markers(summary.text), f"{summary.id} thinned her memory: {covered - markers(summary.text)}"

        reopened = await rt.open_manager("agents/ann", strategy=memory(), view_reader="ann")
        from_ann = await reopened.compile(**BIG)
        from_nobody = await nobody.compile(**BIG)
        assert markers(compiled_text(from_ann)) == ann_markers, "all 20 of her blocks, raw or summarised"
        assert any(e.kind == "summary" for e in from_ann.provenance.entries)
        assert from_ann.messages == from_nobody.messages
        assert from_ann.provenance == from_nobody.provenance


@pytest.mark.parametrize("late_answer", [False, True], ids=["request-cancelled", "answer-arrives-late"])
async def test_row34_drain_that_began_before_a_claim_summarises_nothing_more(store_path, caplog, late_answer):
    """summarises nothing more of a namespace another manager claimed, through a drain that began before the claim

    Seed row 34, changed by SPEC D4. SPEC R10, R5, D3, D4, C4, F. A manager with no reader has its
    drain's first model request out (a blocking model) when a manager for ann claims the
    namespace. After the model is released: no summary is written from that answer, that manager's
    model gets no further request (while ann's manager goes on compressing the namespace with its
    own model), the claim change is logged, and the stale manager is refused ``compile``,
    ``drain`` and ``tick`` with ``ReaderClaimError`` (a host already awaiting its ``drain()`` is
    answered with that refusal rather than left waiting). Two variants: the request is abandoned
    (cancelled), or the model ignores the cancellation and answers late (the answer is
    discarded)."""
    caplog.set_level(logging.WARNING)
    async with open_runtime(store_path) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        blocking, summariser = blocking_model("STALE-ANSWER", shield=late_answer)
        stale = await rt.open_manager("agents/s", strategy=memory(), model=blocking)
        await write_conversation(host, 30, private={"ann": 3})
        await blocking.wait_for_request()
        assert len(blocking.requests) == 1
        assert not shown(blocking)[0], "the no-reader view holds none of ann's blocks"

        waited: list[BaseException | None] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait_for_drain, stale, waited)
            await trio.testing.wait_all_tasks_blocked()
            assert not waited, "the premise: the host waits on the stale manager's drain"
            ann_model = marker_model("ANN-SUMMARY")
            ann = await rt.open_manager("agents/s", strategy=memory(), view_reader="ann", model=ann_model)
            # the stale drain hears of the claim in its own task: let it, then release the model
            await trio.testing.wait_all_tasks_blocked()
            blocking.open()
            await trio.testing.wait_all_tasks_blocked()
        assert len(waited) == 1 and isinstance(waited[0], ReaderClaimError), "a waiting drain() ends, refused"
        await ann.drain()
        await trio.testing.wait_all_tasks_blocked()

        assert finished(blocking, summariser) == 1
        if not late_answer:
            assert len(blocking.abandoned) == 1, "the claim change abandoned the request (D4)"
        assert len(blocking.requests) == 1, "the stale manager asked its model nothing more"
        texts = all_summary_texts(rt.store)
        assert not any("STALE-ANSWER" in t for t in texts), "no summary from the in-flight answer"
        assert texts and all(t.startswith("ANN-SUMMARY#") for t in texts)
        assert any(markers(t) for t in texts), "ann's manager compresses her view"

        claim_logs = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("asides")]
        assert any("agents/s" in m and "'ann'" in m and "claimed" in m for m in claim_logs), claim_logs

        for call in (lambda: stale.compile(**BIG), stale.drain, stale.tick):
            with pytest.raises(ReaderClaimError) as refused:
                await call()
            assert "ann" in str(refused.value)
        assert len(blocking.requests) == 1


class OneRequest:
    """A host strategy whose ``tick`` makes one model request and stores the answer as a state
    record; it says it is always ready, so no drain starts and only a host's ``tick`` asks."""

    name = "one-request"
    marks_compression_reads = True

    def __init__(self) -> None:
        self.answers: list[str] = []

    async def initialize(self, ctx) -> None:
        return None

    async def on_new_message(self, message, ctx) -> None:
        return None

    async def select(self, ctx, budget, options):
        return await PassthroughStrategy().select(ctx, budget, options)

    async def tick(self, ctx) -> bool:
        messages = [m for m in ctx.view.get_all()]
        await ctx.mark_compression_read(max((m.sequence for m in messages), default=0))
        completion = await ctx.model.complete(
            CompletionRequest(
                messages=tuple(CompiledMessage("user", tuple(b for b in m.content if isinstance(b, TextBlock))) for m in messages)
            )
        )
        self.answers.append(completion_text(completion))
        await ctx.state.set("one-request/answer", completion_text(completion))
        return True

    def is_ready(self) -> bool:
        return True


async def test_late_answer_to_a_stale_managers_own_tick_is_discarded(store_path, caplog):
    """A compression answer that arrives after another reader claimed the namespace is discarded,
    even for a request no drain made (a host's own ``tick``).

    SPEC D4 ("any late result is discarded"), R10, R5. A manager with no reader runs a host
    strategy's unit through ``tick()``; its model request is out (blocking model) when ann
    claims the namespace. No drain is involved, so nothing cancels the request: the model answers
    after the claim. The answer never reaches the strategy, nothing is stored, the ``tick`` is
    refused with ``ReaderClaimError``, and the discard is logged."""
    caplog.set_level(logging.WARNING)
    async with open_runtime(store_path) as rt:
        blocking, summariser = blocking_model("LATE")
        strategy = OneRequest()
        stale = await rt.open_manager("agents/s", strategy=strategy, model=blocking)
        await stale.add_message("user", [text("hello")])
        outcome: list[BaseException | None] = []

        async def host_tick() -> None:
            try:
                await stale.tick()
            except Exception as exc:  # noqa: BLE001 - recorded for the test to judge
                outcome.append(exc)
            else:
                outcome.append(None)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(host_tick)
            await blocking.wait_for_request()
            head = rt.store.head("main")
            await rt.open_manager("agents/s", strategy=memory(), view_reader="ann")
            blocking.open()
        assert finished(blocking, summariser) == 1 and not blocking.abandoned, "the premise: the answer came back"
        assert strategy.answers == [], "the answer never reached the strategy"
        assert rt.store.get_state("main", "agents/s/one-request/answer") is None
        assert rt.store.head("main") == head + 1, "only ann's claim was written (the note of her strategy takes no sequence)"
        assert rt.recorded_strategy("agents/s").name == memory().name
        assert len(outcome) == 1 and isinstance(outcome[0], ReaderClaimError)
        assert any("discarded" in r.getMessage() and "agents/s" in r.getMessage() for r in caplog.records)


async def test_transition_note_a_stale_manager_waited_for_is_discarded(store_path):
    """A transition note whose request was out when another reader claimed the namespace is not
    stored.

    SPEC D4, R10, R5, C3 (``reset_head_window``), C4. A manager with no reader asks its model for
    a transition note (a host's ``reset_head_window()``, no drain); ann claims the namespace
    while the request is out; the model then answers. The call is refused with
    ``ReaderClaimError``, no ``[Topic Transition]`` message is appended and no head start is
    recorded: the note was written from the no-reader view and would otherwise enter ann's
    namespace."""
    async with open_runtime(store_path) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        await write_conversation(host, 4, private={"ann": 2})
        blocking, summariser = blocking_model("TRANSITION")
        stale = await rt.open_manager("agents/s", strategy=memory(head_window_tokens=5000), model=blocking)
        before = [m.id for m in rt.store.messages("main")]
        outcome: list[BaseException | str] = []

        async def reset() -> None:
            try:
                outcome.append(await stale.reset_head_window())
            except Exception as exc:  # noqa: BLE001 - recorded for the test to judge
                outcome.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(reset)
            await blocking.wait_for_request()
            assert blocking.requests[0].system == TRANSITION_SYSTEM
            await rt.open_manager("agents/s", strategy=memory(), view_reader="ann")
            blocking.open()
        assert summariser.answers, "the premise: the model answered after the claim"
        assert len(outcome) == 1 and isinstance(outcome[0], ReaderClaimError), outcome
        assert [m.id for m in rt.store.messages("main")] == before, "no transition message"
        assert rt.store.get_state("main", f"agents/s/{KIND}/head-start") is None


async def test_row5_summaries_read_for_a_reader_hold_none_of_another_readers_blocks(store_path):
    """reaches only its reader's summaries, pinned ranges and renderAsNewest

    Seed row 5. SPEC A4, C3, C4, R8.2. Pinned ranges and renderAsNewest have no counterpart in
    SPEC (TESTS.md marks them as a gap), so that part is N/A; what SPEC has is tested: ann and bob
    each compress their own namespace over one conversation holding blocks for each of them and
    plain blocks. Every request made for ann, every summary record in her namespace, all three of
    her summary reads and her compile hold none of bob's markers, and the other way round; each
    reader's own markers all reach their compile."""
    async with open_runtime(store_path) as rt:
        models = {"ann": marker_model("ANN-S"), "bob": marker_model("BOB-S")}
        managers = {
            reader: await rt.open_manager(f"agents/{reader}", strategy=memory(), view_reader=reader, model=models[reader])
            for reader in ("ann", "bob")
        }
        audiences = await write_conversation(managers["ann"], 48, private={"ann": 2, "bob": 3})
        for manager in managers.values():
            await manager.drain()
        for reader, other in (("ann", "bob"), ("bob", "ann")):
            mine = {m for m, a in audiences.items() if a == (reader,)}
            theirs = {m for m, a in audiences.items() if a == (other,)}
            manager = managers[reader]
            records = stored_summaries(rt.store, f"agents/{reader}")
            assert records, f"the premise: {reader} has summaries"
            assert not set().union(*shown(models[reader])) & theirs
            assert not markers("\n".join(v["text"] for v in records.values())) & theirs
            for sid in records:
                reads = summary_reads(manager, sid)
                assert not any(isinstance(v, Exception) for v in reads.values()), reads
                assert not read_markers(reads) & theirs
                assert reads["get"] is not None
            assert read_markers(summary_reads(manager, None)) & mine, "her own blocks reach her summaries"
            compiled = await manager.compile(**BIG)
            assert markers(compiled_text(compiled)) == mine


class SpyingMemory(AutobiographicalStrategy):
    """AutobiographicalStrategy whose ``ctx.mark_compression_read`` calls are recorded with the
    branch's head before and after each one."""

    def __init__(self, store, **options: Any) -> None:
        defaults: dict[str, Any] = {"target_chunk_tokens": 300, "head_window_tokens": 0, "recent_window_tokens": 0}
        defaults.update(options)
        super().__init__(**defaults)
        self.store = store
        self.marks: list[tuple[int, int, int]] = []

    def _spied(self, ctx):
        real = ctx.mark_compression_read

        async def mark(sequence: int) -> None:
            before = self.store.head(ctx.branch)
            await real(sequence)
            self.marks.append((sequence, before, self.store.head(ctx.branch)))

        return attrs.evolve(ctx, mark=mark)

    async def tick(self, ctx) -> bool:
        return await super().tick(self._spied(ctx))


@pytest.mark.parametrize("reader", [None, "ann"], ids=["no-reader", "control-ann"])
async def test_row64_no_floor_record_for_a_manager_with_no_reader(store_path, reader):
    """writes no record of what compression has read for a manager that compiles for no reader

    Seed row 64. SPEC N2, STRATEGIES 5 (``mark_compression_read`` under no reader returns without
    writing). A manager with no reader compresses an unclaimed namespace fully: the strategy marks
    its reads (the marks are recorded), yet ``<ns>/narrowing-floor`` stays ``None``, no floor
    record exists anywhere on the branch, and no mark raised the branch's sequence. The control
    (a manager for ann) shows the spy works: there the floor is the highest mark and every mark
    above the floor was exactly one write."""
    async with open_runtime(store_path) as rt:
        # Written first, so that nothing but the drain writes while the marks are spied on.
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        await write_conversation(host, 40, private={"ann": 3})
        strategy = SpyingMemory(rt.store)
        manager = await rt.open_manager("agents/s", strategy=strategy, view_reader=reader, model=marker_model())
        await manager.drain()
        assert stored_summaries(rt.store, "agents/s"), "the premise: it compressed"
        assert strategy.marks, "the premise: the strategy marked its compression reads"
        floor = rt.store.get_state("main", "agents/s/narrowing-floor")
        if reader is None:
            assert floor is None
            assert not [k for k in rt.store.state_items("main") if k.endswith("/narrowing-floor")]
            assert all(after == before for _seq, before, after in strategy.marks), strategy.marks
        else:
            assert floor == max(seq for seq, _b, _a in strategy.marks)
            highest = 0
            for seq, before, after in strategy.marks:
                assert after == before + (1 if seq > highest else 0)
                highest = max(highest, seq)


async def test_row65_transition_summary_kept_to_its_reader_host_text_as_given(store_path):
    """keeps a transition summary made from a reader's view to that reader, and stores a host's own transition text as given

    Seed row 65. SPEC C3, C4, A2, A3, STRATEGIES 5. Under ann, ``reset_head_window()`` has the
    model write a transition note from ann's view (the request shows her markers, none of bob's)
    and stores it as a ``Context Manager`` message whose one block has ``audience=("ann",)``; bob's
    compile (his own namespace) and a no-reader compile hold nothing of it, not even an empty
    message. ``reset_head_window(text)`` stores the host's text as given, with no audience, and
    every reader compiles it."""
    async with open_runtime(store_path) as rt:
        model = marker_model("TRANSITION")
        ann = await rt.open_manager("agents/ann", strategy=memory(head_window_tokens=2000), view_reader="ann", model=model)
        bob = await rt.open_manager("agents/bob", strategy=memory(head_window_tokens=2000), view_reader="bob")
        nobody = await rt.open_manager("agents/none", strategy=PassthroughStrategy())
        await write_conversation(ann, 6, private={"ann": 2, "bob": 3})

        generated = await ann.reset_head_window()
        transitions = [r for r in model.requests if r.system == TRANSITION_SYSTEM]
        assert len(transitions) == 1, "the note was written by the model"
        assert markers(request_text(transitions[0])) == {"ANN-ONLY-0", "ANN-ONLY-1", "ANN-ONLY-2"}
        assert generated.startswith("TRANSITION#")
        stored = rt.store.messages("main")[-1]
        assert stored.participant == "Context Manager"
        assert stored.content == (TextBlock(f"[Topic Transition]\n\n{generated}", ("ann",)),)
        assert generated in compiled_text(await ann.compile(**BIG))
        for other in (bob, nobody):
            compiled = await other.compile(**BIG)
            assert "TRANSITION#" not in compiled_text(compiled) and "[Topic Transition]" not in compiled_text(compiled)
            assert stored.id not in {i for e in compiled.provenance.entries for i in e.message_ids}

        given = await ann.reset_head_window("Host note: on to the budget.")
        assert given == "Host note: on to the budget."
        stored = rt.store.messages("main")[-1]
        assert stored.content == (TextBlock("[Topic Transition]\n\nHost note: on to the budget."),)
        assert stored.content[0].audience is None
        assert len([r for r in model.requests if r.system == TRANSITION_SYSTEM]) == 1, "no request for a host's text"
        for manager in (ann, bob, nobody):
            assert "Host note: on to the budget." in compiled_text(await manager.compile(**BIG))


async def test_row72_stale_summary_reads_refused_and_other_branch_summaries_unseen(store_path):
    """probe: a stale manager's summary reads hold nothing written for another reader

    Seed row 72 (zz-probe-summary-reads). SPEC R5, R8.2, C3, C4, D1, S2. First case: a manager
    with no reader opened on agents/s before ann claims it; ann writes messages with her blocks
    and compresses; the stale manager's three summary reads are each refused with
    ``ReaderClaimError`` (R8.2 settles the seed's "refused or hold no marker" as refused).
    Second case, adapted to D1 (a manager is bound to its own branch; no store-wide switch): a
    branch ``bobs`` is forked off main; ann's manager of agents/t stays on main and compresses
    there; bob claims agents/t on ``bobs`` and compresses his own blocks. Ann's three reads (even
    of the ids bob's summaries have) hold none of bob's markers, and bob's hold none of ann's."""
    async with open_runtime(store_path) as rt:
        await make_branch(rt, "bobs")
        nobody = await rt.open_manager("agents/s", strategy=memory(), model=marker_model())
        ann = await rt.open_manager("agents/s", strategy=memory(), view_reader="ann", model=marker_model())
        await write_conversation(ann, 30, private={"ann": 3})
        await ann.drain()
        ann_ids = [s.id for s in ann.search_summaries("ANN-ONLY", limit=1000)]
        assert ann_ids, "the premise: ann has summaries holding her blocks"
        reads = summary_reads(nobody, ann_ids[0])
        for name, value in reads.items():
            assert isinstance(value, ReaderClaimError), (name, value)
            assert "ann" in str(value)

        ann_t = await rt.open_manager("agents/t", strategy=memory(), view_reader="ann", model=marker_model())
        bob = await rt.open_manager("agents/t", strategy=memory(), view_reader="bob", branch="bobs", model=marker_model())
        assert rt.store.get_state("main", "agents/t/reader") == "ann"
        assert rt.store.get_state("bobs", "agents/t/reader") == "bob"
        await write_conversation(bob, 30, private={"bob": 3})
        await bob.drain()
        await ann_t.drain()
        bob_summaries = bob.search_summaries("BOB-ONLY", limit=1000)
        assert bob_summaries, "the premise: bob has summaries holding his blocks"
        assert ann_t.branch == "main" and bob.branch == "bobs"
        ann_t_summaries = ann_t.get_summaries_in_range()
        assert ann_t_summaries, "ann's manager of agents/t compressed main"
        for summary in bob_summaries:
            reads = summary_reads(ann_t, summary.id)
            assert not any(isinstance(v, Exception) for v in reads.values()), reads
            assert not any(mk.startswith("BOB") for mk in read_markers(reads)), reads
            assert reads["get"] != summary
        assert not any(mk.startswith("ANN") for mk in read_markers(summary_reads(bob, ann_t_summaries[0].id)))
        assert not ann_t.search_summaries("BOB-ONLY")


# -- 3. C4 as a property -------------------------------------------------------------------------

READERS = ("ann", "bob", "cleo")
_AUDIENCES = st.sampled_from([("ann",), ("bob",), ("cleo",), ("ann", "bob"), ("bob", "cleo"), ("ann", "cleo"), ("ann", "bob", "cleo")])
_MESSAGE = st.tuples(
    st.sampled_from(["user", "assistant", "carol"]),
    st.lists(_AUDIENCES, max_size=3),  # the private blocks, in order
    st.integers(min_value=0, max_value=25),  # filler words in a plain block (0: no plain block)
)


@pytest.mark.slow
@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(
    conversation=st.lists(_MESSAGE, min_size=20, max_size=60),
    target=st.integers(min_value=30, max_value=120),
    head=st.sampled_from([0, 40]),
    recent=st.sampled_from([0, 60]),
)
def test_compression_reads_only_the_readers_view(store_path, conversation, target, head, recent):
    """A summary for reader X never holds a marker from a block hidden from X (property).

    SPEC C4, A2, A3, A4, C3, R3, STRATEGIES 5. Random conversations (20-60 messages) of plain
    blocks and private blocks for ann, bob and cleo (audiences of one, two or three of them,
    several per message, some messages wholly private); managers for ann, bob and cleo, each in
    its own namespace with small windows, compress fully. Then for each reader X: no summary
    record in X's namespace and no request made on X's behalf holds a marker of a block hidden
    from X, and every marker visible to X is in X's compile (raw or in a summary). Each example
    is a fresh runtime on a fresh store of the test's backend."""

    async def main(path: str) -> None:
        async with open_runtime(path) as rt:
            models = {r: marker_model(f"{r.upper()}-S") for r in READERS}
            managers = {
                r: await rt.open_manager(
                    f"agents/{r}",
                    strategy=memory(target_chunk_tokens=target, head_window_tokens=head, recent_window_tokens=recent),
                    view_reader=r,
                    model=models[r],
                )
                for r in READERS
            }
            host = await rt.open_manager("host", strategy=PassthroughStrategy())
            audiences: dict[str, tuple[str, ...]] = {}
            counter = itertools.count()
            for participant, private, words in conversation:
                blocks = []
                for audience in private:
                    marker = f"{audience[0].upper()}-ONLY-{next(counter)}"
                    audiences[marker] = audience
                    blocks.append(text(f"{marker} {'secret ' * 3}", list(audience)))
                if words or not blocks:
                    blocks.append(text(f"plain {'words ' * words}"))
                await host.add_message(participant, blocks)
            for manager in managers.values():
                await manager.drain()
            for reader in READERS:
                hidden = {m for m, a in audiences.items() if reader not in a}
                visible = set(audiences) - hidden
                records = stored_summaries(rt.store, f"agents/{reader}")
                assert not markers("\n".join(v["text"] for v in records.values())) & hidden
                for request_markers in shown(models[reader]):
                    assert not request_markers & hidden
                compiled = await managers[reader].compile(**BIG)
                seen = markers(compiled_text(compiled))
                assert not seen & hidden
                assert seen == visible, f"{reader} lost {sorted(visible - seen)}"

    trio.run(main, sibling_store(store_path, f"e{next(_EXAMPLES)}"))


#: Names the fresh store of each Hypothesis example (a sibling of the test's ``store_path``).
_EXAMPLES = itertools.count()


# -- 4. Drains (D3, F) ----------------------------------------------------------------------------


async def test_closing_a_manager_cancels_its_drain_and_waits_for_it(store_path):
    """Closing a manager cancels its drain and waits for it.

    SPEC D3, F (Close), 3.2 (``aclose``). A drain's model request is out (blocking model);
    ``aclose`` returns only after the request was cancelled and the drain finished (so the model
    saw the cancellation before ``aclose`` returned); a host awaiting ``drain()`` meanwhile is
    answered (``ManagerClosedError``) rather than left waiting; nothing is written from it; the closed
    manager is refused with ``ManagerClosedError``; the runtime and other managers go on."""
    async with open_runtime(store_path) as rt:
        blocking, summariser = blocking_model()
        manager = await rt.open_manager("agents/s", strategy=memory(), model=blocking)
        await write_conversation(manager, 30)
        await blocking.wait_for_request()
        state_before = rt.store.state_items("main")
        waited: list[BaseException | None] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait_for_drain, manager, waited)
            await trio.testing.wait_all_tasks_blocked()
            assert not waited, "the premise: the host waits on the drain"
            await manager.aclose()
            assert len(blocking.abandoned) == 1 and finished(blocking, summariser) == 1, "aclose waited for the cancelled request"
        assert len(waited) == 1 and isinstance(waited[0], ManagerClosedError), "a waiting drain() ends"
        assert manager.closed
        blocking.open()
        await trio.testing.wait_all_tasks_blocked()
        assert rt.store.state_items("main") == state_before, "nothing written from the abandoned request"
        assert len(blocking.requests) == 1
        with pytest.raises(ManagerClosedError):
            await manager.drain()
        with pytest.raises(ManagerClosedError):
            await manager.compile(**BIG)

        model = marker_model()
        again = await rt.open_manager("agents/s", strategy=memory(), model=model)
        await again.drain()
        assert model.requests and stored_summaries(rt.store, "agents/s")


async def test_leaving_the_runtime_waits_for_every_drain(store_path):
    """Leaving ``open_runtime`` waits for every drain: no task is left behind.

    SPEC D3, 3.2 (``open_runtime``), F (Close). Three managers in three namespaces each have a
    drain with a request out (blocking models, one of which ignores cancellation until it is
    released by a task of the test's own). Leaving the block cancels and awaits them all: every
    request has ended before the block is left, and the set of live tasks is what it was before
    the runtime opened."""
    before = all_tasks()
    blocking = [blocking_model(f"M{i}") for i in range(3)]
    blocking.append(blocking_model("SHIELDED", shield=True))
    models = [model for model, _summariser in blocking]
    async with trio.open_nursery() as nursery:
        async with open_runtime(store_path) as rt:
            host = await rt.open_manager("host", strategy=PassthroughStrategy())
            for i, model in enumerate(models):
                await rt.open_manager(f"agents/{i}", strategy=memory(), model=model)
            await write_conversation(host, 30)
            for model in models:
                await model.wait_for_request()

            async def release_when_only_the_shielded_one_waits() -> None:
                await trio.testing.wait_all_tasks_blocked()
                models[-1].open()

            nursery.start_soon(release_when_only_the_shielded_one_waits)
        for model, summariser in blocking:
            assert finished(model, summariser) == 1, "the runtime waited for the request to end"
        assert all(len(m.abandoned) == 1 for m in models[:-1])
        assert not all_summary_texts(rt.store), "no summary from an answer that came during the close"
    assert all_tasks() == before, "no task outlives the runtime"


async def test_a_failing_model_is_retried_with_backoff_and_never_takes_the_runtime_down(store_path, autojump_clock, caplog):
    """A model that raises is retried with back-off (1 s, 2 s, 4 s, ...) and never takes the
    runtime down; once it recovers the drain completes.

    SPEC F (Drain: errors are logged, retried with back-off, never take the runtime down), D3,
    3.3.1 (only an ``end_turn`` answer becomes a summary). On Trio's mock clock: a model failing
    its first five requests is asked again after 1, 2, 4, 8 and 16 s (``trio.current_time()``),
    each failure logged with its wait; then it answers, and a later failure waits 1 s again (the
    back-off restarts after a success); the drain completes with summaries from its answers only.
    Meanwhile a manager whose model always fails keeps retrying, the wait doubling up to the
    5-minute cap, without disturbing the others, and leaving the runtime stops it cleanly.

    Each wait is the doubling step scaled by a random factor in [0.5, 1] (jitter), so namespaces
    that fail together do not retry in lockstep. ``drain()`` here is allowed many failures in a
    row (``ModelPolicy.drain_failures``), so it waits for the recovery.

    (Only the gap between a failed request and its retry is asserted: the mock clock also jumps
    while the store does real I/O, so gaps around a successful unit, which writes, are not exact.)"""
    caplog.set_level(logging.WARNING)
    async with open_runtime(store_path, model_policy=ModelPolicy(drain_failures=1000)) as rt:
        # The conversation is written first: a unit that succeeds (a chunk closing as new
        # messages come) also restarts the back-off.
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        await write_conversation(host, 40)
        flaky, flaky_times = flaky_model({1, 2, 3, 4, 5, 7, 8})
        broken, broken_times = flaky_model(range(1, 10**9))
        manager = await rt.open_manager("agents/s", strategy=memory(), model=flaky)
        doomed = await rt.open_manager("agents/doomed", strategy=memory(), model=broken)
        await manager.drain()

        gaps = [b - a for a, b in itertools.pairwise(flaky_times)]

        def jittered(observed: list[float], steps: list[float]) -> bool:
            return len(observed) == len(steps) and all(0.5 * s - 1e-6 <= g <= s + 1e-6 for g, s in zip(observed, steps, strict=True))

        assert jittered(gaps[:5], [1.0, 2.0, 4.0, 8.0, 16.0]), gaps
        assert jittered(gaps[6:8], [1.0, 2.0]), "the back-off restarts after a success"
        assert len(flaky_times) > 9, "more units followed the recovery"
        assert manager.is_ready()
        summaries = stored_summaries(rt.store, "agents/s")
        assert summaries and all(v["text"].startswith("RECOVERED#") for v in summaries.values())
        waits = [
            float(re.search(r"retrying in ([\d.]+) s", r.getMessage()).group(1))  # type: ignore[union-attr]
            for r in caplog.records
            if r.name == "asides.drains" and "agents/s" in r.getMessage()
        ]
        assert jittered(waits, [1, 2, 4, 8, 16, 1, 2]), "each failure is logged with its wait"

        # The always-failing model: retried, the waits doubling up to the cap, never stopping the runtime.
        with trio.move_on_after(2000):
            await anyio.Event().wait()
        doomed_gaps = [b - a for a, b in itertools.pairwise(broken_times)]
        assert jittered(doomed_gaps[:4], [1.0, 2.0, 4.0, 8.0])
        assert 150.0 - 1e-6 <= max(doomed_gaps) <= 300.0 + 1e-6, "the wait is capped at 5 minutes"
        assert not doomed.is_ready() and not stored_summaries(rt.store, "agents/doomed")
        compiled = await manager.compile(**BIG)
        assert compiled.messages
