"""``asides.testing``'s models and ``open_test_runtime``: ScriptedModel answers from its queue
or its function and names the request that found it dry; GatedModel holds each request until
released; FailingModel fails on its schedule, or hangs until cancelled; RecordingModel passes
through. Under Trio by default; the last test runs them under asyncio."""

from __future__ import annotations

import os

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
    ExtractiveModel,
    PassthroughStrategy,
    completion_text,
    text,
)
from asides.testing import (
    AnswerTypeError,
    FailingModel,
    GatedModel,
    HarnessError,
    NothingHeldError,
    RecordingModel,
    ScriptedModel,
    ScriptExhaustedError,
    open_test_runtime,
)


def request(words: str, system: str | None = None) -> CompletionRequest:
    return CompletionRequest([CompiledMessage("user", [text(words)])], system=system)


def memory() -> AutobiographicalStrategy:
    """Every four messages close a chunk; none is held back."""
    return AutobiographicalStrategy(target_chunk_tokens=1, head_window_tokens=0, recent_window_tokens=0, holdback_chunks=0)


async def write(manager, count: int) -> None:
    for number in range(count):
        await manager.add_message("user", [text(f"line {number}")])


# -- ScriptedModel ------------------------------------------------------------------------------


async def test_scripted_model_answers_in_order_and_records_every_request():
    stop = Completion("max_tokens", [text("cut")])
    model = ScriptedModel("first", stop, ValueError("third fails"), respond=lambda r: f"echo {len(r.messages)}")
    assert completion_text(await model.complete(request("a"))) == "first"
    assert (await model.complete(request("b"))) is stop
    with pytest.raises(ValueError, match="third fails"):
        await model.complete(request("c"))
    answered = await model.complete(request("d"))
    assert (answered.stop_reason, completion_text(answered)) == ("end_turn", "echo 1")
    assert answered.usage.output_tokens > 0
    assert [completion_text(Completion("end_turn", r.messages[0].content)) for r in model.requests] == ["a", "b", "c", "d"]
    assert model.remaining == 0 and model.ran_dry is None
    model.check()


async def test_scripted_model_takes_an_async_respond_and_more_answers_later():
    extractive = ExtractiveModel()
    model = ScriptedModel(respond=extractive.complete)
    assert "the hall is free" in completion_text(await model.complete(request("Ann: the hall is free.")))
    model.add("queued")
    assert model.remaining == 1
    assert completion_text(await model.complete(request("x"))) == "queued", "the queue comes before respond"


async def test_scripted_model_that_runs_dry_names_the_request():
    model = ScriptedModel("only one", name="ann-memories")
    await model.complete(request("first"))
    with pytest.raises(ScriptExhaustedError) as dry:
        await model.complete(request("please summarise the budget talk", system="You write memories."))
    message = str(dry.value)
    assert "'ann-memories' ran dry: request #2" in message
    assert "please summarise the budget talk" in message and "You write memories." in message
    assert dry.value.number == 2 and dry.value.request is model.requests[1]
    with pytest.raises(ScriptExhaustedError):
        await model.complete(request("third"))
    with pytest.raises(ScriptExhaustedError) as again:
        model.check()
    assert again.value is dry.value, "check() raises the first request that found the queue empty"


def test_scripted_model_refuses_what_is_not_an_answer():
    with pytest.raises(HarnessError, match="answer 2"):
        ScriptedModel("fine", 42)  # type: ignore[arg-type]
    with pytest.raises(AnswerTypeError, match="answer 2"):
        ScriptedModel("fine", 42)  # type: ignore[arg-type]
    with pytest.raises(HarnessError, match="respond"):
        ScriptedModel(respond="not callable")  # type: ignore[arg-type]


@pytest.mark.parametrize("answers", [["a", "b"], ("a", "b"), iter(["a"])], ids=["list", "tuple", "iterator"])
def test_scripted_model_takes_answers_one_by_one(answers):
    """Issue 21.4: a lone iterable of answers is refused with ``AnswerTypeError`` (an
    ``ArgumentTypeError`` and a ``HarnessError``) saying to give them one by one; the same
    answers given one by one, or spread with ``*``, are queued in order."""
    with pytest.raises(ArgumentTypeError, match=r"one by one") as refused:
        ScriptedModel(answers)  # type: ignore[arg-type]
    assert isinstance(refused.value, AnswerTypeError) and isinstance(refused.value, HarnessError)
    assert refused.value.path == "ScriptedModel 'scripted', answer 1"
    with pytest.raises(AnswerTypeError, match="add, answer 1"):
        ScriptedModel().add(["a"])  # type: ignore[arg-type]
    assert ScriptedModel(*["a", "b"]).remaining == 2
    assert ScriptedModel("I booked the room.").remaining == 1


async def test_scripted_model_writes_the_memories_of_a_runtime():
    model = ScriptedModel("MEMORY ONE", "MEMORY TWO")
    async with open_test_runtime() as runtime:
        ann = await runtime.open_manager("agents/ann", strategy=memory(), view_reader="ann", model=model)
        await write(ann, 8)
        await ann.drain()
        assert [s.text for s in ann.get_summaries_in_range()] == ["MEMORY ONE", "MEMORY TWO"]
        assert len(model.requests) == 2
        assert "line 0" in str(model.requests[0].messages), "the request carried ann's view"
    model.check()


async def test_a_drain_that_finds_the_script_dry_is_reported_by_check(autojump_clock):
    model = ScriptedModel("MEMORY ONE")
    async with open_test_runtime() as runtime:
        ann = await runtime.open_manager("agents/ann", strategy=memory(), view_reader="ann", model=model)
        await write(ann, 8)
        await model.wait_for_requests(2)
    with pytest.raises(ScriptExhaustedError, match="request #2"):
        model.check()


# -- GatedModel ---------------------------------------------------------------------------------


async def test_gated_model_holds_each_request_until_released():
    gate = GatedModel(ScriptedModel("from the model"))
    answers: list[str] = []

    async def ask(words: str) -> None:
        answers.append(completion_text(await gate.complete(request(words))))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, "one")
        first = await gate.wait_for_request()
        nursery.start_soon(ask, "two")
        await gate.wait_for_request(2)
        assert gate.held == (first, gate.requests[1]) and answers == []
        assert gate.release() is first
        await trio.testing.wait_all_tasks_blocked()
        assert answers == ["from the model"]
        assert gate.release("given by the test").messages[0].content[0].text == "two"
    assert answers == ["from the model", "given by the test"]
    with pytest.raises(NothingHeldError):
        gate.release()


async def test_gated_model_release_all_open_and_hold():
    gate = GatedModel()
    async with trio.open_nursery() as nursery:
        for words in ("Ann: one.", "Ann: two."):
            nursery.start_soon(gate.complete, request(words))
        await gate.wait_for_request(2)
        assert gate.release_all() == 2
    gate.open()
    assert gate.is_open
    answered = await gate.complete(request("Ann: not held."))
    assert "not held" in completion_text(answered), "the default model answers from the request's own lines"
    gate.hold()
    with trio.move_on_after(1):
        await gate.complete(request("held again"))
    assert gate.abandoned == [gate.requests[-1]] and gate.held == ()


async def test_gated_model_a_cancelled_caller_abandons_its_request_unless_shielded():
    gate = GatedModel()
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(gate.complete, request("abandoned"))
            await gate.wait_for_request()
            scope.cancel()
    assert [r.messages[0].content[0].text for r in gate.abandoned] == ["abandoned"] and gate.held == ()

    shielded = GatedModel(ScriptedModel("late"), shield=True)
    outcome: list[str] = []

    async def ask() -> None:
        with trio.CancelScope() as inner:
            nursery.start_soon(cancel_after_hold, inner)
            outcome.append(completion_text(await shielded.complete(request("shielded"))))
            await trio.sleep(0)
            outcome.append("not cancelled")

    async def cancel_after_hold(scope: trio.CancelScope) -> None:
        await shielded.wait_for_request()
        scope.cancel()
        await trio.testing.wait_all_tasks_blocked()
        assert shielded.held, "still held after its caller was cancelled"
        shielded.release()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask)
    assert outcome[:1] == ["late"], "the answer came back, into a caller that was cancelled"
    assert shielded.abandoned == []


async def test_gated_model_holds_a_runtime_drain(asides_store_path):
    gate = GatedModel(ScriptedModel("MEMORY"))
    async with open_test_runtime(asides_store_path) as runtime:
        ann = await runtime.open_manager("agents/ann", strategy=memory(), view_reader="ann", model=gate)
        await write(ann, 4)
        held = await gate.wait_for_request()
        assert "line 3" in str(held.messages)
        assert ann.get_summaries_in_range() == ()
        gate.open()
        await ann.drain()
        assert [s.text for s in ann.get_summaries_in_range()] == ["MEMORY"]


# -- FailingModel -------------------------------------------------------------------------------


async def test_failing_model_schedules():
    always = FailingModel()
    for _ in range(3):
        with pytest.raises(ConnectionError, match="simulated outage"):
            await always.complete(request("x"))
    assert always.failures == 3

    first_two = FailingModel(RuntimeError, fails=2, then=ScriptedModel(respond=lambda r: "back"))
    outcomes = []
    for _ in range(4):
        try:
            outcomes.append(completion_text(await first_two.complete(request("x"))))
        except RuntimeError as error:
            outcomes.append(str(error))
    assert outcomes == ["FailingModel 'failing': call #1 fails", "FailingModel 'failing': call #2 fails", "back", "back"]

    every_other = FailingModel(fails=[True, False])
    odd = FailingModel(lambda n: TimeoutError(f"call {n}"), fails=lambda n: n % 2 == 1)
    assert [every_other.will_fail(n) for n in range(1, 6)] == [True, False, True, False, True]
    assert [odd.will_fail(n) for n in range(1, 4)] == [True, False, True]
    with pytest.raises(TimeoutError, match="call 1"):
        await odd.complete(request("x"))
    instance = OSError("the same one")
    with pytest.raises(OSError) as raised:
        await FailingModel(instance).complete(request("x"))
    assert raised.value is instance


@pytest.mark.parametrize("fails", [-1, True, [], [1, 0], "xx"])
def test_failing_model_refuses_a_bad_schedule(fails):
    with pytest.raises(HarnessError, match="fails"):
        FailingModel(fails=fails)


async def test_failing_model_that_hangs_meets_a_timeout_at_once_on_a_mock_clock(autojump_clock):
    hanging = FailingModel(hang=True, fails=1)
    with trio.move_on_after(600) as scope:
        await hanging.complete(request("never answered"))
    assert scope.cancelled_caught and trio.current_time() == 600
    assert (hanging.failures, hanging.hanging) == (1, 0)
    assert "second" in completion_text(await hanging.complete(request("Ann: the second is answered.")))


async def test_failing_model_under_a_runtime_recovers_on_simulated_time(autojump_clock):
    flaky = FailingModel(fails=3)
    async with open_test_runtime() as runtime:
        ann = await runtime.open_manager("agents/ann", strategy=memory(), view_reader="ann", model=flaky)
        await write(ann, 4)
        await ann.drain()
        assert len(ann.get_summaries_in_range()) == 1
    assert flaky.failures == 3 and len(flaky.requests) == 4
    assert trio.current_time() >= 3.5, "the back-off after three failures, simulated"


# -- RecordingModel and open_test_runtime -------------------------------------------------------


async def test_recording_model_records_and_passes_through():
    inner = ScriptedModel("answer")
    recording = RecordingModel(inner)
    assert completion_text(await recording.complete(request("hello"))) == "answer"
    assert recording.requests == inner.requests and len(recording.requests) == 1
    with pytest.raises(HarnessError):
        RecordingModel(object())  # type: ignore[arg-type]


async def test_open_test_runtime_uses_a_temporary_store_or_the_path_given(asides_store_path):
    async with open_test_runtime() as runtime:
        host = await runtime.open_manager("host", strategy=PassthroughStrategy())
        await host.add_message("user", [text("kept?")])
        assert runtime.list_branches()[0].head == 1
    async with open_test_runtime(asides_store_path) as runtime:
        host = await runtime.open_manager("host", strategy=PassthroughStrategy())
        await host.add_message("user", [text("kept")])
    assert os.path.exists(asides_store_path)
    async with open_test_runtime(asides_store_path) as runtime:
        host = await runtime.open_manager("host", strategy=PassthroughStrategy())
        assert [m.content[0].text for m in host.get_all_messages()] == ["kept"]
    with pytest.raises(HarnessError):
        async with open_test_runtime(42):  # type: ignore[arg-type]
            pass


def test_the_models_and_open_test_runtime_work_under_asyncio(store_path):
    seen: list[object] = []

    async def main() -> None:
        gate = GatedModel(ScriptedModel("MEMORY"))
        async with open_test_runtime(store_path) as runtime:
            ann = await runtime.open_manager("agents/ann", strategy=memory(), view_reader="ann", model=gate)
            await write(ann, 4)
            await gate.wait_for_request()
            gate.release()
            await ann.drain()
            seen.append([s.text for s in ann.get_summaries_in_range()])
        failing = FailingModel(hang=True)
        with anyio.move_on_after(0.01):
            await failing.complete(request("x"))
        seen.append(failing.failures)

    anyio.run(main, backend="asyncio")
    assert seen == [["MEMORY"], 1]
