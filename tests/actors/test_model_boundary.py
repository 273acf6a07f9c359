"""The model boundary: a model cannot take the runtime down, its answers are checked before they
are stored, and a failing model is visible and bounded (issue 10, items 8, 9 and 10); a stray
``Cancelled`` from a model is the model's failure, and a rejected answer follows one rule and is
never silent (issues 19 and 21).

* Item 8: whatever ``Model.complete`` raises fails that unit only: any ``Exception``, and a
  ``BaseException`` that is not the runtime's own cancellation (``asyncio.CancelledError``
  raised by an asyncio library under Trio, ``GeneratorExit``, a ``BaseException`` subclass). The
  host's writes go on, under Trio and under asyncio. ``KeyboardInterrupt`` and ``SystemExit``
  still propagate.
* Item 9: an answer that is not a ``Completion``, whose text is not a ``str``, that is empty,
  only whitespace, holds a lone surrogate, or is longer than ``ModelPolicy.answer_limit_factor``
  times the request's ``max_tokens`` is rejected: counted like an unfinished answer (the chunk
  fails after the strategy's attempt limit and is compiled raw), logged at WARNING, and retried
  after a back-off. A model object without ``complete`` is refused where it is given.
* Item 10: a request that hangs fails after ``ModelPolicy.request_timeout``; back-off has
  jitter; ``pending_work()`` says the model is failing; ``drain()`` raises ``CompressionError``
  after ``ModelPolicy.drain_failures`` failures in a row, while the background drain keeps
  retrying and recovers with the model.
* Issue 19, item 6: a model's ``complete`` raising a ``trio.Cancelled`` that no scope of the
  runtime delivered fails its unit like any other exception: logged, retried with back-off, and
  shown by ``pending_work()``. A host awaiting ``drain()`` gets ``CompressionError`` (its block
  never ends silently); a host's own ``tick()`` gets ``ModelError``. A cancellation the runtime's
  own scope (or the host's) delivered still propagates.
* Issue 21, item 1: every rejection (a stop reason other than ``end_turn``, empty or blank text,
  unclosed thinking, text too long, not a ``Completion``) is logged at WARNING with the unit and
  the reason, counted toward the unit's attempt limit and asked again at once (no back-off: the
  model answered, so it is no outage; issue 31, item 1); a unit at its limit has failed,
  renders raw and is never asked again. ``pending_work()`` reports failed units and why;
  ``drain()`` raises ``CompressionError`` naming the reason when a unit it waited on failed
  during the call, and a second ``drain()`` returns. Autobiographical and Knowledge share
  the rule.

Time-dependent tests run on Trio's ``MockClock`` (pytest-trio's ``autojump_clock``): back-off
and timeouts take no real time, and the tests count work and read the mock clock, never the wall
clock. (The mock clock may also jump while the store does real I/O, so only lower bounds are
asserted on gaps around a write.)

Sections:
  1. Helpers
  2. Item 8: a model's exception fails only its unit
  3. Item 9: answers checked before they are stored
  4. Item 10: failing models are visible and bounded
  5. Issue 19, item 6: a stray Cancelled
  6. Issue 21, item 1: one rule for a rejected answer
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from typing import Any

import anyio
import pytest
import trio
import trio.testing

from asides import (
    ArgumentTypeError,
    AutobiographicalStrategy,
    CompiledMessage,
    Completion,
    CompletionRequest,
    CompressionError,
    ExtractiveModel,
    InvalidArgumentError,
    KnowledgeStrategy,
    ModelPolicy,
    PassthroughStrategy,
    Usage,
    completion_text,
    open_runtime,
    text,
)
from asides.actors import ModelError
from asides.lowlevel import Selection, SelectOptions, StrategyContext, estimate_text
from asides.testing import FailingModel, open_test_runtime
from tests.helpers import dump, sibling_store

# -- 1. Helpers ---------------------------------------------------------------------------------

LINES = 12


def memory(kind: type[AutobiographicalStrategy] = AutobiographicalStrategy, **overrides: Any) -> AutobiographicalStrategy:
    """Small windows, so that a short conversation is compressed into memories (cut into several
    stretches to compress). ``kind`` is AutobiographicalStrategy or KnowledgeStrategy."""
    options: dict[str, Any] = {"target_chunk_tokens": 20, "head_window_tokens": 20, "recent_window_tokens": 40, "holdback_chunks": 0}
    options.update(overrides)
    return kind(**options)


async def write_conversation(room: Any, count: int = LINES, start: int = 0) -> None:
    for number in range(start, start + count):
        await room.add_message("user", [text(f"Line {number} of a conversation long enough to compress.")])


def timed(fails: Callable[[int], bool], times: list[float]) -> Callable[[int], bool]:
    """A ``FailingModel`` schedule that also records when each call came (the runtime's clock)."""

    def schedule(number: int) -> bool:
        times.append(anyio.current_time())
        return fails(number)

    return schedule


def gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in zip(times, times[1:], strict=False)]


class Replies:
    """A model that answers every request with the same object (whatever it is: the tests give
    it answers that may not be stored), recording each request and when it came."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.requests: list[CompletionRequest] = []
        self.times: list[float] = []

    async def complete(self, request: CompletionRequest) -> Any:
        self.requests.append(request)
        self.times.append(anyio.current_time())
        await anyio.lowlevel.checkpoint()
        return self.answer


class AskOnTick:
    """A host's strategy: passthrough selection; each ``tick`` asks the model one request and
    stores the answer. Always ready, so no drain asks anything: only a host's ``tick`` does."""

    name = "ask-on-tick"
    marks_compression_reads = True

    async def initialize(self, ctx: StrategyContext) -> None:
        return None

    async def on_new_message(self, message: Any, ctx: StrategyContext) -> None:
        return None

    async def select(self, ctx: StrategyContext, budget: int, options: SelectOptions) -> Selection:
        return await PassthroughStrategy().select(ctx, budget, options)

    async def tick(self, ctx: StrategyContext) -> bool:
        messages = ctx.view.get_all()
        await ctx.mark_compression_read(max((m.sequence for m in messages), default=0))
        assert ctx.model is not None
        completion = await ctx.model.complete(CompletionRequest([CompiledMessage("user", [text("summarise")])], max_tokens=100))
        await ctx.state.set("ask-on-tick/answer", completion_text(completion))
        return True

    def is_ready(self) -> bool:
        return True


def stray_cancelled(number: int) -> BaseException:
    """A ``trio.Cancelled`` that no cancel scope delivered (as a model that kept one from an
    earlier, cancelled call and raised it again would)."""
    return trio.Cancelled._create()  # type: ignore[attr-defined]


def warnings_about(caplog: pytest.LogCaptureFixture, namespace: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and repr(namespace) in r.getMessage()]


# -- 2. Item 8: a model's exception fails only its unit ---------------------------------------------


class StrayBaseException(BaseException):
    """A ``BaseException`` some library raises that is neither a cancellation nor an interrupt."""


STRAYS = {
    "Exception": lambda: RuntimeError("boom"),
    "asyncio.CancelledError": lambda: asyncio.CancelledError("an asyncio library's own cancel"),
    "GeneratorExit": lambda: GeneratorExit("closed"),
    "BaseException-subclass": lambda: StrayBaseException("stray"),
}


@pytest.mark.parametrize("stray", sorted(STRAYS))
async def test_a_model_exception_fails_only_its_unit_and_the_host_writes_go_on(store_path, stray, autojump_clock, caplog):
    """Ann's model raises (an ``Exception``, a stray ``asyncio.CancelledError`` under Trio,
    ``GeneratorExit``, a ``BaseException`` subclass) on every request while the host writes 200
    messages. Every write completes and is stored; bob's manager, whose model is healthy,
    compresses meanwhile; each failure is logged at WARNING naming ann's namespace and the
    exception; once ann's model answers again, her drain completes."""
    caplog.set_level(logging.WARNING)
    writing = {"done": False}
    during: list[int] = []
    times: list[float] = []

    def fails(number: int) -> bool:
        if not writing["done"]:
            during.append(number)
        return not writing["done"]

    broken = FailingModel(lambda number: STRAYS[stray](), fails=timed(fails, times))
    async with open_test_runtime(store_path) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        ann = await rt.open_manager("agents/ann", strategy=memory(), view_reader="ann", model=broken)
        bob = await rt.open_manager("agents/bob", strategy=memory(), view_reader="bob", model=ExtractiveModel())
        written = 0
        for number in range(200):
            await room.add_message("user", [text(f"Line {number} of a conversation long enough to compress.")])
            written += 1
            if number % 20 == 19:
                await trio.sleep(2)  # the host pauses now and then: back-off time passes
        writing["done"] = True
        assert written == 200 and len(rt.store.messages("main")) == 200
        assert len(during) >= 2, "the premise: the model failed, and was retried, while the host wrote"
        await bob.drain()
        assert bob.get_summaries_in_range(), "bob's manager compressed meanwhile"
        await ann.drain()
        assert ann.get_summaries_in_range(), "ann's drain recovered with her model"
        name = type(STRAYS[stray]()).__name__
        logged = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "agents/ann" in r.getMessage()]
        assert len([m for m in logged if name in m]) >= len(during), logged


@pytest.mark.parametrize("stray", sorted(STRAYS))
async def test_a_hosts_own_tick_gets_a_model_error_for_what_the_model_raised(store_path, stray):
    """A host's ``tick()`` whose model raises gets ``ModelError`` (an ``AsidesError``) naming
    the exception, with it as the cause; no answer is stored; the runtime goes on."""
    async with open_test_runtime(store_path) as rt:
        manager = await rt.open_manager("agents/s", strategy=AskOnTick(), view_reader="ann", model=FailingModel(lambda n: STRAYS[stray]()))
        await manager.add_message("user", [text("hello")])
        with pytest.raises(ModelError) as failed:
            await manager.tick()
        name = type(STRAYS[stray]()).__name__
        assert name in str(failed.value) and type(failed.value.__cause__).__name__ == name
        assert rt.store.get_state("main", "agents/s/ask-on-tick/answer") is None
        await manager.add_message("user", [text("still writing")])
        assert len(rt.store.messages("main")) == 2


@pytest.mark.parametrize("stray", ["asyncio.CancelledError", "GeneratorExit"])
def test_under_asyncio_a_stray_exception_from_a_model_does_not_end_the_hosts_block(store_path, stray):
    """Under asyncio, a model raising ``asyncio.CancelledError`` (not a cancellation of the
    runtime: nobody cancelled its task) or ``GeneratorExit`` on every request while the host
    writes 200 messages: the host's block runs to its end (all 200 writes, and the code after
    them), the drain recovers once the model answers, and a reopen holds all 200 messages."""
    progress = {"written": 0, "after": False}
    writing = {"done": False}
    during: list[int] = []

    def fails(number: int) -> bool:
        if not writing["done"]:
            during.append(number)
        return not writing["done"]

    async def main(path: str) -> None:
        broken = FailingModel(lambda number: STRAYS[stray](), fails=fails)
        policy = ModelPolicy(first_backoff=0.001, max_backoff=0.005)  # asyncio has no mock clock
        async with open_runtime(path, model_policy=policy) as rt:
            room = await rt.open_manager("room", strategy=PassthroughStrategy())
            ann = await rt.open_manager("agents/ann", strategy=memory(), view_reader="ann", model=broken)
            for number in range(200):
                await room.add_message("user", [text(f"Line {number} of a conversation long enough to compress.")])
                progress["written"] += 1
                if number % 20 == 19:
                    await asyncio.sleep(0.002)
            writing["done"] = True
            await ann.drain()
            assert ann.get_summaries_in_range()
            progress["after"] = True
        async with open_runtime(path) as again:
            assert len(again.store.messages("main")) == 200

    anyio.run(main, store_path, backend="asyncio")
    assert progress == {"written": 200, "after": True}
    assert len(during) >= 2, "the premise: the model failed while the host wrote"


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
async def test_an_interrupt_from_a_model_propagates_from_a_hosts_tick(store_path, interrupt):
    """``KeyboardInterrupt`` and ``SystemExit`` raised by a model are not a unit's failure: a
    host's ``tick()`` raises them as they are, and they leave the runtime's block."""
    seen: list[BaseException] = []
    with pytest.raises(interrupt):
        async with open_test_runtime(store_path) as rt:
            manager = await rt.open_manager("agents/s", strategy=AskOnTick(), view_reader="ann", model=FailingModel(interrupt))
            await manager.add_message("user", [text("hello")])
            try:
                await manager.tick()
            except BaseException as exc:
                seen.append(exc)
                raise
    assert len(seen) == 1 and type(seen[0]) is interrupt


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
async def test_an_interrupt_from_a_model_in_a_background_drain_ends_the_runtime(store_path, interrupt):
    """``KeyboardInterrupt`` or ``SystemExit`` raised by a model in a background drain is not
    retried: it ends the runtime's block, stopping the host as it writes, as that exception."""
    model = FailingModel(interrupt)
    written = 0
    with pytest.raises(interrupt):
        async with open_test_runtime(store_path) as rt:
            room = await rt.open_manager("room", strategy=PassthroughStrategy())
            await rt.open_manager("agents/s", strategy=memory(), view_reader="ann", model=model)
            await write_conversation(room)
            await model.wait_for_requests(1)
            for number in range(2_000):
                await room.add_message("user", [text(f"More line {number}.")])
                written += 1
    assert model.failures == 1, "not retried"
    assert written < 2_000, "the interrupt stopped the host as it wrote"


class InterruptsWhileTheHostWaits:
    """A model whose request raises ``KeyboardInterrupt`` once the host awaits ``drain()``: the
    host sets ``host_waits`` just before the call, the request then waits until every task is
    blocked (the host inside ``drain()``), and raises."""

    def __init__(self) -> None:
        self.host_waits = trio.Event()
        self.requests: list[CompletionRequest] = []

    async def complete(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        await self.host_waits.wait()
        await trio.testing.wait_all_tasks_blocked()
        raise KeyboardInterrupt("from the model, while the host awaits drain()")


async def interrupted_while_awaiting_drain(path: str) -> tuple[BaseException, InterruptsWhileTheHostWaits]:
    """Run a host that awaits ``drain()`` while its model raises ``KeyboardInterrupt``, on a
    fresh store at ``path``; what left the runtime's block, and the model."""
    model = InterruptsWhileTheHostWaits()
    try:
        async with open_test_runtime(path) as rt:
            room = await rt.open_manager("room", strategy=PassthroughStrategy())
            manager = await rt.open_manager("agents/s", strategy=memory(), view_reader="ann", model=model)
            await write_conversation(room)
            model.host_waits.set()
            await manager.drain()
    except BaseException as exc:  # noqa: BLE001 - what left the block is what the test judges
        return exc, model
    raise AssertionError("the runtime's block ended without the interrupt")


async def test_an_interrupt_from_a_model_while_the_host_awaits_drain_leaves_as_itself(store_path):
    """A host awaiting ``drain()`` when the model raises ``KeyboardInterrupt`` in the background
    drain: the runtime's block raises that ``KeyboardInterrupt``, not retried, and not a group
    holding a ``BrokenResourceError`` from the host's own call (as it once did when the
    namespace actor's task had ended first). That depended on the order the scheduler ran the
    tasks, so the run is repeated."""
    for run in range(8):
        outcome, model = await interrupted_while_awaiting_drain(sibling_store(store_path, f"run{run}"))
        assert type(outcome) is KeyboardInterrupt, repr(outcome)
        assert len(model.requests) == 1


# -- 3. Item 9: answers checked before they are stored -------------------------------------------------


class NotText:
    """A block whose ``text`` is not a ``str``."""

    text = b"bytes, not text"


BAD_ANSWERS = {
    "not-a-completion": ("the summary, as a bare string", "not a Completion"),
    "text-not-a-str": (Completion("end_turn", (NotText(),)), "not a str"),
    "empty": (Completion("end_turn", ""), "empty"),
    "whitespace": (Completion("end_turn", " \n\t "), "empty"),
    "lone-surrogate": (Completion("end_turn", "a memory \udc80 of the talk"), "surrogate"),
    "too-long": (Completion("end_turn", "word " * 200_000), "over the limit"),
}


@pytest.mark.parametrize("case", sorted(BAD_ANSWERS))
async def test_an_answer_that_may_not_be_stored_is_rejected_counted_logged_and_retried_later(store_path, case, autojump_clock, caplog):
    """The model gives an answer that may not be stored (not a ``Completion``, text not a
    ``str``, empty, whitespace, a lone surrogate, over ``answer_limit_factor`` times
    ``max_tokens``). Each is a rejection:

    * counted: every chunk is asked exactly ``l1_attempt_limit`` times, then failed, and the
      compile renders the conversation raw (no memory is written, none holds the answer);
    * logged at WARNING naming the namespace, the branch and the reason;
    * retried at once, not after a back-off (a rejection is no outage: the model answered; its
      unit's attempt limit bounds it): every retry the drain logs comes after the rejection
      pause, none by default.

    ``drain()`` then raises ``CompressionError`` naming the reason (issue 21, item 1), a second
    ``drain()`` returns (nothing is left to do), and compiles work."""
    caplog.set_level(logging.WARNING)
    answer, reason = BAD_ANSWERS[case]
    model = Replies(answer)
    policy = ModelPolicy(drain_failures=1000)
    async with open_runtime(store_path, model_policy=policy) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        await write_conversation(room)
        manager = await rt.open_manager("agents/s", strategy=memory(l1_attempt_limit=2), view_reader="ann", model=model)
        with pytest.raises(CompressionError, match=re.escape(reason)):
            await manager.drain()  # the stretches it waited on failed (issue 21, item 1)
        await manager.drain()  # nothing is pending any more

        asked: dict[str, int] = {}
        for request in model.requests:
            asked[repr(request.messages)] = asked.get(repr(request.messages), 0) + 1
        assert asked and set(asked.values()) == {2}, "each chunk asked its attempt limit, then failed"
        assert manager.is_ready() and manager.get_summaries_in_range() == ()
        compiled = await manager.compile(max_tokens=100_000)
        assert {entry.kind for entry in compiled.provenance.entries} == {"raw"}
        assert len(compiled.messages) == LINES
        state = rt.store.state_items("main", "agents/s/")
        assert not any(key.startswith("agents/s/autobiographical/summary/") for key in state)
        assert max(len(repr(value)) for value in state.values()) < 10_000, "the answer is stored nowhere"

        drain_log = "\n".join(r.getMessage() for r in caplog.records if "a unit failed" in r.getMessage())
        assert set(re.findall(r"(?:the next unit in|retrying in) ([\d.]+) s", drain_log)) == {"0.0"}, drain_log
        rejections = [
            r.getMessage()
            for r in caplog.records
            if r.levelno == logging.WARNING and "AnswerRejectedError" in r.getMessage() and reason in r.getMessage()
        ]
        assert len(rejections) == len(model.requests), [r.getMessage() for r in caplog.records]
        assert all("'agents/s'" in m and "'main'" in m for m in rejections)


async def test_a_rejected_answer_is_retried_after_the_rejection_pause_then_stored(store_path, autojump_clock):
    """An empty answer, then good ones: the retry comes after ``ModelPolicy.rejection_pause``
    (here 0.5 s; a fixed pause, never a growing back-off: the unit's attempt limit bounds the
    retries), and the memory is written from the good answer."""
    times: list[float] = []
    answers = iter(["   ", *["A memory of the lines: the conversation went on."] * 100])

    async def respond(request: CompletionRequest) -> Completion:
        times.append(trio.current_time())
        await trio.lowlevel.checkpoint()
        return Completion("end_turn", next(answers), Usage(10, 10))

    class Model:
        complete = staticmethod(respond)

    async with open_runtime(store_path, model_policy=ModelPolicy(rejection_pause=0.5)) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        await write_conversation(room)
        manager = await rt.open_manager("agents/s", strategy=memory(), view_reader="ann", model=Model())
        await manager.drain()
        assert times[1] - times[0] >= 0.5, times
        assert any("A memory of the lines" in s.text for s in manager.get_summaries_in_range())


@pytest.mark.parametrize(("extra", "rejected"), [(0, False), (1, True)], ids=["at-the-limit", "one-token-over"])
async def test_the_answer_limit_is_answer_limit_factor_times_max_tokens(store_path, extra, rejected, autojump_clock):
    """With ``answer_limit_factor=2`` and requests of ``max_tokens=50``, an answer of 100
    estimated tokens is stored, one of 101 is rejected."""
    limit = 2 * 50
    answer = "a" * (3 * limit + 3 * extra)
    assert estimate_text(answer) == limit + extra
    model = Replies(Completion("end_turn", answer))
    async with open_runtime(store_path, model_policy=ModelPolicy(answer_limit_factor=2, drain_failures=1000)) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        await write_conversation(room)
        strategy = memory(compression_max_tokens=50, summary_target_tokens=20, l1_attempt_limit=1)
        manager = await rt.open_manager("agents/s", strategy=strategy, view_reader="ann", model=model)
        if rejected:
            with pytest.raises(CompressionError, match="over the limit of 100"):
                await manager.drain()
        else:
            await manager.drain()
        assert {r.max_tokens for r in model.requests} == {50}
        assert bool(manager.get_summaries_in_range()) is not rejected


async def test_a_megabyte_answer_is_never_stored_and_compiles_keep_working(autojump_clock, store_path):
    """A model answering a 1 MB text: nothing of it is stored, and compiles keep working within
    a small budget (before the fix, the answer was stored and every later compile raised
    ``OverBudgetError``), also after a reopen."""
    path = store_path
    megabyte = "The conversation went on and on. " * 32_000
    assert len(megabyte) > 1_000_000
    async with open_runtime(path, model_policy=ModelPolicy(drain_failures=1000)) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        await write_conversation(room)
        manager = await rt.open_manager("agents/s", strategy=memory(), view_reader="ann", model=Replies(megabyte))
        with pytest.raises(CompressionError, match="not a Completion"):
            await manager.drain()
        compiled = await manager.compile(max_tokens=4_000, reserve_for_response=500)
        assert len(compiled.messages) == LINES
        held = dump(rt.store)
        assert len(repr(held)) < 100_000, "the answer is stored nowhere"
    async with open_runtime(path) as again:
        manager = await again.open_manager("agents/s", strategy=memory(), view_reader="ann")
        compiled = await manager.compile(max_tokens=4_000, reserve_for_response=500)
        assert len(compiled.messages) == LINES


async def test_a_rejection_log_names_the_unit(store_path, autojump_clock, caplog):
    """The WARNING for a rejected answer names the unit: the messages it was compressing, in the
    words ``pending_work()`` uses while its request is out."""
    caplog.set_level(logging.WARNING)
    seen: list[str] = []
    model = Replies(Completion("end_turn", ""))
    async with open_runtime(store_path, model_policy=ModelPolicy(drain_failures=1000)) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        await write_conversation(room)
        manager = await rt.open_manager("agents/s", strategy=memory(l1_attempt_limit=1), view_reader="ann", model=model)
        original = model.complete

        async def looking(request: CompletionRequest) -> Any:
            seen.append(manager.pending_work() or "")
            return await original(request)

        model.complete = looking  # type: ignore[method-assign]
        with pytest.raises(CompressionError, match="the answer is empty"):
            await manager.drain()
    units = [re.search(r"compressing messages [\d–-]+", s) for s in seen]
    assert units and all(units), seen
    logged = [r.getMessage() for r in caplog.records if "AnswerRejectedError" in r.getMessage()]
    for unit in units:
        assert unit is not None and any(unit.group(0) in m for m in logged), (unit.group(0), logged)


@pytest.mark.parametrize("model", ["claude", 42, object()], ids=["str", "int", "object"])
async def test_a_model_without_complete_is_refused_at_open_runtime(model, tmp_path):
    """``open_runtime(model=...)`` with an object that has no ``complete`` is refused (a
    ``TypeError``, an ``ArgumentTypeError``) naming ``open_runtime``, before any file is made."""
    path = tmp_path / "store.db"
    with pytest.raises(TypeError) as refused:
        async with open_runtime(str(path), model=model):
            pass
    assert isinstance(refused.value, ArgumentTypeError)
    assert "open_runtime" in str(refused.value) and "complete" in str(refused.value)
    assert not path.exists()


@pytest.mark.parametrize("model", ["claude", 42, object()], ids=["str", "int", "object"])
async def test_a_model_without_complete_is_refused_at_open_manager(store_path, model):
    """``open_manager(model=...)`` with an object that has no ``complete`` is refused naming
    ``open_manager``; nothing is written (no claim) and the namespace may be opened after."""
    async with open_test_runtime(store_path) as rt:
        before = dump(rt.store)
        with pytest.raises(ArgumentTypeError) as refused:
            await rt.open_manager("agents/s", strategy=memory(), view_reader="ann", model=model)
        assert isinstance(refused.value, TypeError)
        assert "open_manager" in str(refused.value)
        assert dump(rt.store) == before
        opened = await rt.open_manager("agents/s", strategy=memory(), view_reader="bob", model=ExtractiveModel())
        assert opened.view_reader == "bob"


# -- 4. Item 10: failing models are visible and bounded ---------------------------------------------


def test_model_policy_documents_its_defaults_and_refuses_nonsense():
    """The defaults (a request may take 5 minutes; an answer 4 times ``max_tokens``; ``drain()``
    gives up after 5 failures in a row; back-off from 1 s to 5 min) and the refusals."""
    policy = ModelPolicy()
    assert (policy.request_timeout, policy.answer_limit_factor, policy.drain_failures) == (300.0, 4.0, 5)
    assert (policy.first_backoff, policy.max_backoff) == (1.0, 300.0)
    for bad in ({"request_timeout": 0}, {"answer_limit_factor": -1}, {"drain_failures": 0}, {"first_backoff": "1"}):
        with pytest.raises(InvalidArgumentError):
            ModelPolicy(**bad)


@pytest.mark.timeout(30)  # without the request timeout this hangs: fail sooner than the default
async def test_a_hanging_request_fails_after_the_request_timeout(store_path, autojump_clock, caplog):
    """The first request hangs (it never answers): it fails after ``request_timeout`` (30 s here,
    on the mock clock), is logged as a timeout, and is retried after a back-off; the retry is
    answered and the drain completes."""
    caplog.set_level(logging.WARNING)
    times: list[float] = []
    model = FailingModel(hang=True, fails=timed(lambda n: n == 1, times))
    async with open_runtime(store_path, model_policy=ModelPolicy(request_timeout=30)) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        await write_conversation(room)
        manager = await rt.open_manager("agents/s", strategy=memory(), view_reader="ann", model=model)
        await manager.drain()
        assert model.failures == 1 and model.hanging == 0
        assert times[1] - times[0] >= 30 + 0.5, times
        assert manager.get_summaries_in_range()
    assert any("no answer within 30 s" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


@pytest.mark.timeout(30)  # without the request timeout this hangs: fail sooner than the default
async def test_a_hosts_tick_on_a_hanging_model_raises_a_model_error(store_path, autojump_clock):
    """A host's own ``tick()`` on a model that never answers raises ``ModelError`` naming the
    timeout, after ``request_timeout`` on the mock clock, and stores no answer."""
    async with open_runtime(store_path, model_policy=ModelPolicy(request_timeout=12)) as rt:
        model = FailingModel(hang=True)
        manager = await rt.open_manager("agents/s", strategy=AskOnTick(), view_reader="ann", model=model)
        await manager.add_message("user", [text("hello")])
        start = trio.current_time()
        with pytest.raises(ModelError, match="no answer within 12 s"):
            await manager.tick()
        assert trio.current_time() - start >= 12
        assert model.hanging == 0, "the hanging request was cancelled"
        assert rt.store.get_state("main", "agents/s/ask-on-tick/answer") is None


async def test_back_off_has_jitter_so_namespaces_failing_together_do_not_retry_in_lockstep(store_path, autojump_clock):
    """Two namespaces whose models fail together (their first four requests each) retry at
    different times: every wait is the doubling step scaled by a factor in [0.5, 1], drawn for
    each, so the two never retry in lockstep."""
    times = {"a": [], "b": []}
    models = {name: FailingModel(fails=timed(lambda n: n <= 4, times[name])) for name in times}
    async with open_runtime(store_path, model_policy=ModelPolicy(drain_failures=1000)) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        await write_conversation(room)
        managers = [
            await rt.open_manager(f"agents/{name}", strategy=memory(), view_reader=name, model=model) for name, model in models.items()
        ]
        for manager in managers:
            await manager.drain()
    for name, model in models.items():
        assert model.failures == 4
        waits = gaps(times[name])[:4]
        assert all(0.5 * step - 1e-6 <= wait <= step + 1e-6 for wait, step in zip(waits, [1, 2, 4, 8], strict=True)), waits
    retries_a, retries_b = (gaps(times[name])[:4] for name in times)
    assert all(abs(a - b) > 1e-9 for a, b in zip(retries_a, retries_b, strict=True)), (retries_a, retries_b)


PENDING = re.compile(r"model failing since (\d\d):(\d\d):(\d\d) \((.*)\), next try in (\d+) s")


async def test_pending_work_says_since_when_the_model_fails_why_and_when_it_tries_next(store_path, autojump_clock):
    """While the model fails, ``pending_work()`` says what waits, then ``model failing since
    HH:MM:SS (<the last error>), next try in N s``, N within the back-off step now in force. Once
    the model recovers and the work is done, it says nothing."""
    state = {"failing": True}
    model = FailingModel(RuntimeError("boom"), fails=lambda n: state["failing"])
    async with open_runtime(store_path, model_policy=ModelPolicy(drain_failures=3)) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        await write_conversation(room)
        manager = await rt.open_manager("agents/s", strategy=memory(), view_reader="ann", model=model)
        with pytest.raises(CompressionError):
            await manager.drain()
        pending = manager.pending_work()
        assert pending is not None and "compress" in pending
        found = PENDING.search(pending)
        assert found, pending
        hours, minutes, seconds = (int(found.group(i)) for i in (1, 2, 3))
        assert hours < 24 and minutes < 60 and seconds < 60
        assert "RuntimeError: boom" in found.group(4)
        assert 0.5 * 4 - 1 <= int(found.group(5)) <= 4, "the third wait: 4 s scaled by [0.5, 1]"

        state["failing"] = False
        await manager.drain()
        assert manager.pending_work() is None


@pytest.mark.parametrize("limit", [5, 2])
async def test_drain_raises_compression_error_after_drain_failures_in_a_row_while_the_background_retries(store_path, limit, autojump_clock):
    """``drain()`` raises ``CompressionError`` naming the last error once the model failed
    ``ModelPolicy.drain_failures`` times in a row (5 by default) during the call. The background
    drain keeps retrying (more requests come, on the mock clock), and once the model recovers it
    completes: ``drain()`` then returns and the memories are written."""
    state = {"failing": True}
    model = FailingModel(RuntimeError("boom"), fails=lambda n: state["failing"])
    policy = ModelPolicy() if limit == 5 else ModelPolicy(drain_failures=limit)
    async with open_runtime(store_path, model_policy=policy) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        await write_conversation(room)
        manager = await rt.open_manager("agents/s", strategy=memory(), view_reader="ann", model=model)
        with pytest.raises(CompressionError) as failed:
            await manager.drain()
        assert model.failures == limit
        assert "RuntimeError: boom" in str(failed.value) and f"{limit} times in a row" in str(failed.value)
        assert "'agents/s'" in str(failed.value)

        await trio.sleep(600)
        assert model.failures > limit, "the background drain keeps retrying"
        assert manager.get_summaries_in_range() == ()

        state["failing"] = False
        await manager.drain()
        assert manager.is_ready() and manager.get_summaries_in_range()


@pytest.mark.timeout(30)  # without the request timeout this hangs: fail sooner than the default
async def test_drain_on_a_hanging_model_raises_naming_the_timeout(store_path, autojump_clock):
    """Before the fix ``drain()`` never returned while the model hung. Now each request fails
    after the timeout, and ``drain()`` raises ``CompressionError`` naming it after the
    configured number of failures in a row."""
    model = FailingModel(hang=True)
    async with open_runtime(store_path, model_policy=ModelPolicy(request_timeout=20, drain_failures=2)) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        await write_conversation(room)
        manager = await rt.open_manager("agents/s", strategy=memory(), view_reader="ann", model=model)
        with pytest.raises(CompressionError, match="no answer within 20 s"):
            await manager.drain()
        assert model.failures == 2


@pytest.mark.timeout(30)  # without the namespace's count this waits for ever: fail sooner than the default
async def test_drain_waiting_on_another_managers_request_raises_once_the_namespace_model_fails_in_a_row(store_path, autojump_clock):
    """Two managers of one namespace, with one model that never answers: the first's drain has
    a request out, the second's finds nothing to do while it is. ``drain()`` on the second
    neither waits for ever nor spins: it waits for each request to come back, and raises
    ``CompressionError`` once the namespace's requests failed ``drain_failures`` times in a row,
    whichever manager sent them. Once the model answers, it returns."""
    state = {"failing": True}
    model = FailingModel(hang=True, fails=lambda n: state["failing"])
    async with open_runtime(store_path, model_policy=ModelPolicy(request_timeout=20, drain_failures=3)) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        await write_conversation(room)
        first = await rt.open_manager("agents/s", strategy=memory(), view_reader="ann", model=model)
        second = await rt.open_manager("agents/s", strategy=memory(), view_reader="ann", model=model)
        with pytest.raises(CompressionError, match="times in a row"):
            await second.drain()
        assert 3 <= model.failures, model.failures

        state["failing"] = False
        await second.drain()
        await first.drain()
        assert first.is_ready() and second.is_ready() and second.get_summaries_in_range()


# -- 5. Issue 19, item 6: a stray Cancelled -------------------------------------------------------


async def test_a_stray_cancelled_from_a_model_fails_its_unit_and_the_background_drain_retries(store_path, autojump_clock, caplog):
    """A model raising a stray ``trio.Cancelled`` on its first four requests: the background
    drain does not die. Each failure is logged at WARNING naming the namespace and
    ``Cancelled``, ``pending_work()`` says the model is failing, the drain retries with back-off
    (on the mock clock), and once the model answers, the memories are written. Before the fix the
    drain's task ended at the first request: one request, no retry, no failure shown."""
    caplog.set_level(logging.WARNING)
    model = FailingModel(stray_cancelled, fails=4)
    async with open_test_runtime(store_path) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        manager = await rt.open_manager("agents/ann", strategy=memory(), view_reader="ann", model=model)
        await write_conversation(room)
        await model.wait_for_requests(2)
        pending = manager.pending_work()
        assert pending is not None and "model failing since" in pending and "Cancelled" in pending, pending
        await manager.drain()
        assert model.failures == 4 and len(model.requests) > 4, "retried after each stray Cancelled"
        assert manager.get_summaries_in_range(), "the drain recovered with the model"
        logged = [m for m in warnings_about(caplog, "agents/ann") if "Cancelled" in m]
        assert len(logged) >= 4, logged
        after = True
    assert after


async def test_a_stray_cancelled_while_the_host_awaits_drain_raises_and_the_host_goes_on(store_path, autojump_clock):
    """A host awaits ``drain()`` while its model raises a stray ``trio.Cancelled`` on every
    request: ``drain()`` raises ``CompressionError`` naming ``Cancelled`` after
    ``drain_failures`` failures in a row, and the host's later lines run (before the fix its
    ``async with open_runtime()`` block was cut short with no exception)."""
    model = FailingModel(stray_cancelled)
    lines: list[str] = []
    async with open_runtime(store_path, model_policy=ModelPolicy(drain_failures=3)) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        manager = await rt.open_manager("agents/ann", strategy=memory(), view_reader="ann", model=model)
        await write_conversation(room)
        with pytest.raises(CompressionError, match="Cancelled"):
            await manager.drain()
        lines.append("after drain")
        await room.add_message("user", [text("The host goes on writing.")])
        lines.append("after the write")
    lines.append("after the block")
    assert lines == ["after drain", "after the write", "after the block"]
    assert model.failures >= 3


async def test_a_hosts_own_tick_gets_a_model_error_for_a_stray_cancelled(store_path):
    """A host's own ``tick()`` whose model raises a stray ``trio.Cancelled`` gets ``ModelError``
    (an ``AsidesError``) with the ``Cancelled`` as its cause; nothing is stored, and the host's
    task is not cancelled (it writes on)."""
    async with open_test_runtime(store_path) as rt:
        manager = await rt.open_manager("agents/s", strategy=AskOnTick(), view_reader="ann", model=FailingModel(stray_cancelled))
        await manager.add_message("user", [text("hello")])
        with pytest.raises(ModelError, match="Cancelled") as failed:
            await manager.tick()
        assert isinstance(failed.value.__cause__, trio.Cancelled)
        assert rt.store.get_state("main", "agents/s/ask-on-tick/answer") is None
        await manager.add_message("user", [text("still writing")])
        assert len(rt.store.messages("main")) == 2


async def test_a_cancellation_the_host_delivers_still_propagates_from_its_tick(store_path, autojump_clock):
    """The host's own cancel scope cancels its ``tick()`` while the request hangs: that is a
    real cancellation, not the model's failure: the scope catches it, no ``ModelError`` is
    raised, the hanging request is cancelled and nothing is stored. The host cancels once the
    request hangs (not after a time: on PostgreSQL the unit's lease take is real I/O, which the
    autojumping clock would otherwise jump past)."""
    model = FailingModel(hang=True)
    async with open_test_runtime(store_path) as rt:
        manager = await rt.open_manager("agents/s", strategy=AskOnTick(), view_reader="ann", model=model)
        await manager.add_message("user", [text("hello")])
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(manager.tick)
                with trio.fail_after(60):
                    while model.hanging == 0:
                        await trio.sleep(0.01)
                scope.cancel()
        assert scope.cancelled_caught
        assert model.hanging == 0 and len(model.requests) == 1
        assert rt.store.get_state("main", "agents/s/ask-on-tick/answer") is None


async def test_a_cancellation_inside_a_shielded_host_scope_from_a_model_is_still_the_models(store_path):
    """A host cancels an outer scope and shields its ``tick()``: the outer cancellation is not
    visible inside the shield, so a ``Cancelled`` the model raises there is stray, and the host
    gets ``ModelError``."""
    async with open_test_runtime(store_path) as rt:
        manager = await rt.open_manager("agents/s", strategy=AskOnTick(), view_reader="ann", model=FailingModel(stray_cancelled))
        await manager.add_message("user", [text("hello")])
        raised: list[BaseException] = []
        with trio.CancelScope() as outer:
            outer.cancel()
            with trio.CancelScope(shield=True):
                try:
                    await manager.tick()
                except BaseException as exc:  # noqa: BLE001 - what the host got is what the test judges
                    raised.append(exc)
        assert len(raised) == 1 and isinstance(raised[0], ModelError), raised
        assert not outer.cancelled_caught, "the ModelError was caught, nothing reached the outer scope"


class StrayOnFirstTick:
    """A host's strategy with background work: not ready until a ``tick`` succeeds; its first
    ``tick`` raises a stray ``trio.Cancelled`` from its own code (no model involved)."""

    name = "stray-on-first-tick"
    marks_compression_reads = True

    def __init__(self) -> None:
        self.ticks = 0
        self.done = False

    async def initialize(self, ctx: StrategyContext) -> None:
        return None

    async def on_new_message(self, message: Any, ctx: StrategyContext) -> None:
        return None

    async def select(self, ctx: StrategyContext, budget: int, options: SelectOptions) -> Selection:
        return await PassthroughStrategy().select(ctx, budget, options)

    async def tick(self, ctx: StrategyContext) -> bool:
        self.ticks += 1
        await trio.lowlevel.checkpoint()
        if self.ticks == 1:
            raise stray_cancelled(1)
        self.done = True
        return True

    def is_ready(self) -> bool:
        return self.done


async def test_a_stray_cancelled_from_a_strategys_own_unit_fails_that_unit_and_is_retried(store_path, autojump_clock, caplog):
    """Not only the model: a unit of background work that raises a stray ``trio.Cancelled``
    (here the strategy's own ``tick``) fails that unit, logged at WARNING, and the drain retries
    it after a back-off; ``drain()`` returns once the retry succeeds."""
    caplog.set_level(logging.WARNING)
    strategy = StrayOnFirstTick()
    async with open_test_runtime(store_path) as rt:
        manager = await rt.open_manager("agents/s", strategy=strategy, view_reader="ann", model=ExtractiveModel())
        await manager.drain()
        assert strategy.ticks == 2 and manager.is_ready()
    assert any("Cancelled" in m for m in warnings_about(caplog, "agents/s")), caplog.records


# -- 6. Issue 21, item 1: one rule for a rejected answer -------------------------------------------


REJECTIONS = {
    "stop": (Completion("stop", "A perfectly good memory of the lines."), "stop_reason 'stop' is not 'end_turn'"),
    "max_tokens": (Completion("max_tokens", "A memory cut off"), "stop_reason 'max_tokens' is not 'end_turn'"),
    "empty": (Completion("end_turn", ""), "the answer is empty"),
    "blank": (Completion("end_turn", " \n\t "), "the answer is empty"),
    "unclosed-thinking": (Completion("end_turn", "<thinking>never closed, so nothing is left"), "unclosed"),
    "too-long": (Completion("end_turn", "word " * 200_000), "over the limit"),
    "not-a-completion": ("a memory, as a bare string", "not a Completion"),
}


@pytest.mark.parametrize("kind", [AutobiographicalStrategy, KnowledgeStrategy], ids=["autobiographical", "knowledge"])
@pytest.mark.parametrize("case", sorted(REJECTIONS))
async def test_every_rejection_is_logged_counted_retried_at_once_and_reported(store_path, case, kind, autojump_clock, caplog):
    """One rule for every rejection, for both compressing strategies. The model's every answer is
    rejected; then:

    * each stretch is asked exactly ``l1_attempt_limit`` times, then has failed: it renders
      raw and is never asked again;
    * every rejection is logged at WARNING naming the namespace, the unit (``compressing
      messages ...``) and the reason; the last one of a unit says it failed;
    * each retry, and the next unit after a failed one, comes after the fixed rejection pause
      (none by default): no wait grows, since a rejection is no outage;
    * ``drain()`` raises ``CompressionError`` naming the reason; a second ``drain()`` returns;
    * ``pending_work()`` says how many stretches could not be compressed, and why.

    Before the fix a ``stop`` answer failed every stretch in silence (``drain()`` returned,
    ``pending_work()`` was ``None``, nothing was logged), and an empty one was retried forever."""
    caplog.set_level(logging.WARNING)
    answer, reason = REJECTIONS[case]
    model = Replies(answer)
    async with open_runtime(store_path, model_policy=ModelPolicy(drain_failures=1000)) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        await write_conversation(room)
        manager = await rt.open_manager("agents/s", strategy=memory(kind, l1_attempt_limit=2), view_reader="ann", model=model)
        with pytest.raises(CompressionError) as failed:
            await manager.drain()
        assert reason in str(failed.value) and "could not be compressed" in str(failed.value), str(failed.value)
        await manager.drain()  # nothing is pending any more

        asked: dict[str, int] = {}
        for request in model.requests:
            asked[repr(request.messages)] = asked.get(repr(request.messages), 0) + 1
        stretches = len(asked)
        assert stretches >= 2 and set(asked.values()) == {2}, "each stretch asked its attempt limit, then failed"
        assert manager.is_ready() and manager.get_summaries_in_range() == ()
        compiled = await manager.compile(max_tokens=100_000)
        assert {entry.kind for entry in compiled.provenance.entries} == {"raw"} and len(compiled.messages) == LINES

        drain_log = "\n".join(m for m in warnings_about(caplog, "agents/s") if "a unit failed" in m)
        waits = [float(w) for w in re.findall(r"(?:the next unit in|retrying in) ([\d.]+) s", drain_log)]
        assert len(waits) == len(model.requests) and set(waits) == {0.0}, drain_log
        logged = [m for m in warnings_about(caplog, "agents/s") if reason in m]
        assert len(logged) == len(model.requests), warnings_about(caplog, "agents/s")
        assert all(re.search(r"compressing messages? [\d–]+", m) for m in logged), logged
        assert sum("has failed" in m for m in logged) == stretches, logged

        pending = manager.pending_work()
        assert pending == f"{stretches} stretches could not be compressed: the model's answers were rejected ({reason})" or (
            pending is not None and pending.startswith(f"{stretches} stretches could not be compressed") and reason in pending
        ), pending
        requests = len(model.requests)
        await trio.sleep(3600)
        assert len(model.requests) == requests, "a failed stretch is never asked again"


async def test_pending_work_names_the_expected_stop_reason_exactly(store_path, autojump_clock):
    """The words of the issue: a model answering ``Completion("stop", ...)``, three stretches.
    ``pending_work()`` is exactly ``3 stretches could not be compressed: the model's answers
    were rejected (stop_reason 'stop' is not 'end_turn')``, and says so after a reopen too."""
    model = Replies(Completion("stop", "A fine memory."))
    async with open_runtime(store_path, model_policy=ModelPolicy(drain_failures=1000)) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        await write_conversation(room, 16)
        manager = await rt.open_manager("agents/s", strategy=memory(l1_attempt_limit=1), view_reader="ann", model=model)
        with pytest.raises(CompressionError, match=re.escape("stop_reason 'stop' is not 'end_turn'")):
            await manager.drain()
        expected = "3 stretches could not be compressed: the model's answers were rejected (stop_reason 'stop' is not 'end_turn')"
        assert len(model.requests) == 3
        assert manager.pending_work() == expected
    async with open_runtime(store_path) as again:
        manager = await again.open_manager("agents/s", strategy=memory(l1_attempt_limit=1), view_reader="ann", model=ExtractiveModel())
        await manager.drain()  # nothing failed during this call: it returns
        assert manager.pending_work() == expected
        assert manager.get_summaries_in_range() == ()


async def test_a_rejected_merge_is_logged_counted_and_reported(store_path, autojump_clock, caplog):
    """Merges follow the same rule: level-1 memories are written, every merge answer says
    ``max_tokens``; the merge is asked ``merge_attempt_limit`` times, at once (no back-off), each logged
    naming the unit and the reason, then has failed: ``drain()`` raises naming it and
    ``pending_work()`` reports it."""
    caplog.set_level(logging.WARNING)
    times: list[float] = []

    class MergesCutOff:
        async def complete(self, request: CompletionRequest) -> Completion:
            instruction = completion_text(Completion("end_turn", request.messages[-1].content))
            if "Combine it into one level-" in instruction:
                times.append(trio.current_time())
                await trio.lowlevel.checkpoint()
                return Completion("max_tokens", "A merge cut off")
            return await ExtractiveModel().complete(request)

    async with open_runtime(store_path, model_policy=ModelPolicy(drain_failures=1000)) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        await write_conversation(room)
        strategy = memory(merge_threshold=2, merge_attempt_limit=3)
        manager = await rt.open_manager("agents/s", strategy=strategy, view_reader="ann", model=MergesCutOff())
        with pytest.raises(CompressionError, match="stop_reason 'max_tokens' is not 'end_turn'"):
            await manager.drain()
        await manager.drain()
        assert manager.get_summaries_in_range(), "level-1 memories were written"
        assert len(times) % 3 == 0 and times, times
        drain_log = "\n".join(m for m in warnings_about(caplog, "agents/s") if "a unit failed" in m)
        assert set(re.findall(r"(?:the next unit in|retrying in) ([\d.]+) s", drain_log)) == {"0.0"}, drain_log
        logged = [m for m in warnings_about(caplog, "agents/s") if "stop_reason 'max_tokens' is not 'end_turn'" in m]
        assert len(logged) == len(times) and all("merging 2 memories of messages" in m for m in logged), logged
        pending = manager.pending_work()
        assert pending is not None and "could not be merged" in pending and "stop_reason 'max_tokens'" in pending, pending


@pytest.mark.parametrize("case", ["stop", "unclosed-thinking", "empty"])
async def test_a_hosts_own_strategy_gets_the_same_rule_from_the_model_gate(store_path, case):
    """A host's own strategy asks the model through the same gate: a ``stop`` answer, an
    unclosed thinking block or an empty text raises ``AnswerRejectedError`` naming the reason
    from ``ctx.model.complete``, so a host's ``tick()`` raises it; nothing is stored."""
    from asides.actors import AnswerRejectedError

    answer, reason = REJECTIONS[case]
    async with open_test_runtime(store_path) as rt:
        manager = await rt.open_manager("agents/s", strategy=AskOnTick(), view_reader="ann", model=Replies(answer))
        await manager.add_message("user", [text("hello")])
        with pytest.raises(AnswerRejectedError, match=re.escape(reason)):
            await manager.tick()
        assert rt.store.get_state("main", "agents/s/ask-on-tick/answer") is None


def test_the_readmes_model_section_shows_a_custom_model_answering_end_turn():
    """The README's "Plugging in a real model" shows a custom model returning
    ``Completion("end_turn", ...)`` and names the one finished stop reason."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    start = readme.index("\n## Plugging in a real model\n")
    section = readme[start : readme.index("\n## ", start + 1)]
    code = "\n".join(re.findall(r"^```python\n(.*?)^```", section, flags=re.S | re.M))
    assert "async def complete(self, request: CompletionRequest) -> Completion:" in code
    assert 'return Completion("end_turn", ' in code
    assert "stop_reason 'stop' is not 'end_turn'" in section


@pytest.mark.parametrize("kind", [AutobiographicalStrategy, KnowledgeStrategy], ids=["autobiographical", "knowledge"])
async def test_a_model_that_rejects_everything_fails_every_unit_in_bounded_real_time(store_path, kind):
    """The seed's rule on real time (no mock clock): a rejection is counted against its unit, not
    backed off across units. 24 lines, ``l1_attempt_limit=2``, a model whose every answer is
    rejected: ``drain()`` raises ``CompressionError`` well within a bound a host would wait (before
    the fix the waits grew to 31.6 s ... 112.6 s between units), every stretch was asked exactly
    twice, and nothing is asked again afterwards."""
    model = Replies(Completion("end_turn", ""))
    async with open_runtime(store_path, model_policy=ModelPolicy(drain_failures=1000)) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        await write_conversation(room, 24)
        manager = await rt.open_manager("agents/s", strategy=memory(kind, l1_attempt_limit=2), view_reader="ann", model=model)
        with trio.fail_after(60), pytest.raises(CompressionError, match="the answer is empty"):
            await manager.drain()
        asked: dict[str, int] = {}
        for request in model.requests:
            asked[repr(request.messages)] = asked.get(repr(request.messages), 0) + 1
        assert len(asked) >= 4 and set(asked.values()) == {2}, asked
        assert manager.is_ready() and manager.pending_work() is not None
        requests = len(model.requests)
        with trio.fail_after(60):
            await manager.drain()  # nothing failed during this call: it returns at once
        assert len(model.requests) == requests


async def test_an_outage_still_backs_off_and_a_rejection_pause_is_checked(store_path, autojump_clock, caplog):
    """Back-off stays the rule for an outage (the model raised): its waits grow. And
    ``ModelPolicy.rejection_pause`` refuses what is no number of seconds."""
    for bad in (-1, float("inf"), float("nan"), "1", True):
        with pytest.raises(ValueError, match="rejection_pause"):
            ModelPolicy(rejection_pause=bad)  # type: ignore[arg-type]
    caplog.set_level(logging.WARNING)
    model = FailingModel(RuntimeError("overloaded"))
    async with open_runtime(store_path, model_policy=ModelPolicy(drain_failures=4)) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        await write_conversation(room)
        manager = await rt.open_manager("agents/s", strategy=memory(), view_reader="ann", model=model)
        with pytest.raises(CompressionError, match="failed 4 times in a row"):
            await manager.drain()
    drain_log = "\n".join(m for m in warnings_about(caplog, "agents/s") if "a unit failed" in m)
    waits = [float(w) for w in re.findall(r"retrying in ([\d.]+) s", drain_log)]
    assert len(waits) >= 3 and waits[2] > waits[0], drain_log
