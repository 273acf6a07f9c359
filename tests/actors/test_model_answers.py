"""The model boundary, issues 19 and 21: a stray ``Cancelled`` from a model is the model's
failure, and a rejected answer follows one rule and is never silent.

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

Time runs on Trio's ``MockClock`` (``autojump_clock``): back-off takes no real time.

Sections:
  1. Helpers
  2. Issue 19, item 6: a stray Cancelled
  3. Issue 21, item 1: one rule for a rejected answer
"""

from __future__ import annotations

import logging
import re
from typing import Any

import anyio
import pytest
import trio
import trio.testing

from asides import (
    AutobiographicalStrategy,
    Completion,
    CompletionRequest,
    CompressionError,
    ExtractiveModel,
    KnowledgeStrategy,
    ModelPolicy,
    PassthroughStrategy,
    completion_text,
    open_runtime,
    text,
)
from asides.actors import ModelError
from asides.lowlevel import Selection, SelectOptions, StrategyContext
from asides.testing import FailingModel, open_test_runtime
from tests.actors.test_model_boundary import AskOnTick

# -- 1. Helpers ---------------------------------------------------------------------------------

LINES = 12


def memory(kind: type[AutobiographicalStrategy] = AutobiographicalStrategy, **overrides: Any) -> AutobiographicalStrategy:
    """Small windows, so that a short conversation is cut into several stretches to compress."""
    options: dict[str, Any] = {"target_chunk_tokens": 20, "head_window_tokens": 20, "recent_window_tokens": 40, "holdback_chunks": 0}
    options.update(overrides)
    return kind(**options)


async def write_conversation(room: Any, count: int = LINES) -> None:
    for number in range(count):
        await room.add_message("user", [text(f"Line {number} of a conversation long enough to compress.")])


def stray_cancelled(number: int) -> BaseException:
    """A ``trio.Cancelled`` that no cancel scope delivered (as a model that kept one from an
    earlier, cancelled call and raised it again would)."""
    return trio.Cancelled._create()  # type: ignore[attr-defined]


class Replies:
    """A model answering every request with the same object, recording when each came."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.requests: list[CompletionRequest] = []
        self.times: list[float] = []

    async def complete(self, request: CompletionRequest) -> Any:
        self.requests.append(request)
        self.times.append(anyio.current_time())
        await anyio.lowlevel.checkpoint()
        return self.answer


def warnings_about(caplog: pytest.LogCaptureFixture, namespace: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and repr(namespace) in r.getMessage()]


# -- 2. Issue 19, item 6: a stray Cancelled -------------------------------------------------------


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


# -- 3. Issue 21, item 1: one rule for a rejected answer -------------------------------------------


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
