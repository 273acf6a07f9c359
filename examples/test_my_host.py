"""Testing your host: a two-agent host and three tests of it, written with ``asides.testing``.

This is the example the README's "Testing your host" section shows; the project's CI runs it
(``examples`` is among the pytest ``testpaths``). It needs the plugin's fixtures: this project
sets ``asides_fixtures = true`` in its pytest configuration; elsewhere, run
``pytest -p asides.testing.pytest_plugin`` or set the same option. The tests run under Trio
(pytest-trio); for asyncio, mark them ``anyio`` instead (see docs/testing.md).

1. Two agents share one log; lines meant for one of them stay with that one: the leak check
   searches everything each agent was given (compiles, memories, model requests) for the
   other's markers.
2. An interleaving forced with ``GatedModel``: a compression answer arrives after another reader
   claimed the namespace, and is thrown away.
3. A model that fails twice, under a ``MockClock``: compression retries with back-off, which
   takes no real time, and recovers.
"""

from __future__ import annotations

import pytest
import trio

from asides import (
    AutobiographicalStrategy,
    CompiledMessage,
    CompletionRequest,
    ContextManager,
    ExtractiveModel,
    Model,
    PassthroughStrategy,
    ReaderClaimError,
    Runtime,
    completion_text,
    text,
)
from asides.testing import FailingModel, GatedModel, LeakCheck, ScriptedModel

pytestmark = pytest.mark.trio


# -- the host under test ------------------------------------------------------------------------


def memory() -> AutobiographicalStrategy:
    """Small windows, so that a short conversation is compressed into memories."""
    return AutobiographicalStrategy(target_chunk_tokens=20, head_window_tokens=20, recent_window_tokens=40, holdback_chunks=0)


class Room:
    """A host: the user's lines go into one shared log (written once, by the host's own manager);
    each agent compiles its own view of it, answers with its own model, and compresses its
    history in the background with another."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.agents: dict[str, ContextManager] = {}
        self.answerers: dict[str, Model] = {}

    async def open(self) -> None:
        self.log = await self.runtime.open_manager("room", strategy=PassthroughStrategy())

    async def join(self, name: str, *, answers: Model, memories: Model) -> None:
        self.agents[name] = await self.runtime.open_manager(
            f"agents/{name}", strategy=memory(), view_reader=name, model=memories
        )
        self.answerers[name] = answers

    async def say(self, words: str, *, only: list[str] | None = None) -> None:
        """The user's line; with ``only``, meant for those agents only."""
        await self.log.add_message("user", [text(words, only)])

    async def turn(self, name: str) -> str:
        """``name`` answers from its compile; the answer goes into the shared log."""
        compiled = await self.agents[name].compile(max_tokens=2_000, reserve_for_response=200)
        request = CompletionRequest([*compiled.messages, CompiledMessage("user", [text(f"(Your turn, {name}.)")])])
        answer = completion_text(await self.answerers[name].complete(request))
        await self.agents[name].add_message(name, [text(answer)])
        return answer


# -- 1. a complete test of a two-agent host -----------------------------------------------------


async def test_each_agent_keeps_its_own_secrets(asides_runtime: Runtime) -> None:
    room = Room(asides_runtime)
    await room.open()
    answers = {
        "ann": ScriptedModel("The hall is free on the 12th.", "I will ask for Rita."),
        "bob": ScriptedModel("Sixty people fit the budget.", "Understood, I will stay under it."),
    }
    for name, model in answers.items():
        await room.join(name, answers=model, memories=ExtractiveModel())
    check = LeakCheck({"ann": ["ANN-ONLY"], "bob": ["BOB-ONLY"]})

    await room.say("Ann, is the hall free in May? We need it for two days of talks.")
    assert await room.turn("ann") == "The hall is free on the 12th."
    await room.say("Bob, can we afford sixty people, with lunch and coffee twice a day?")
    assert await room.turn("bob") == "Sixty people fit the budget."
    await room.say("ANN-ONLY: the hotel gives us a discount if you ask for Rita.", only=["ann"])
    assert await room.turn("ann") == "I will ask for Rita."
    await room.say("BOB-ONLY: the hard ceiling for the whole event is 48,000 euros.", only=["bob"])
    assert await room.turn("bob") == "Understood, I will stay under it."

    for agent in room.agents.values():
        await agent.drain()  # let the background compression finish
        assert agent.get_summaries_in_range(), "the conversation was long enough to compress"
    for name, model in answers.items():
        for number, request in enumerate(model.requests, start=1):
            check.record(name, request, where=f"answer request #{number}")
    await check.scan(room.log, *room.agents.values())  # previews, memories, provenance, model requests
    check.assert_no_leaks()


# -- 2. an interleaving forced with GatedModel --------------------------------------------------


async def test_an_answer_that_arrives_after_a_claim_is_thrown_away(asides_runtime: Runtime) -> None:
    # A manager with no reader compresses agents/shared; its model holds each request, and finishes
    # a request even when the runtime gives up on it (shield=True), as a provider call may.
    gate = GatedModel(shield=True)
    log = await asides_runtime.open_manager("room", strategy=PassthroughStrategy())
    scribe = await asides_runtime.open_manager("agents/shared", strategy=memory(), model=gate)
    for number in range(12):
        await log.add_message("user", [text(f"Line {number} of a conversation long enough to compress.")])

    await gate.wait_for_request()  # the scribe's first request is out...
    await asides_runtime.open_manager("agents/shared", strategy=memory(), view_reader="bob")  # ...bob claims
    gate.release("A MEMORY WRITTEN FROM THE UNCLAIMED VIEW")  # ...and only then does the answer arrive

    with pytest.raises(ReaderClaimError):
        await scribe.compile()  # the scribe is stale: the namespace is bob's now
    await scribe.aclose()  # waits until its drain has stopped, so the late answer has been dealt with
    assert len(gate.requests) == 1, "the stale manager asked nothing more"
    stored = asides_runtime.store.state_items("main", "agents/shared/")
    assert not any("UNCLAIMED VIEW" in str(value) for value in stored.values()), "the late answer was thrown away"


# -- 3. a failing model, on simulated time ------------------------------------------------------


async def test_compression_recovers_after_an_outage(asides_runtime: Runtime, autojump_clock: trio.testing.MockClock) -> None:
    flaky = FailingModel(fails=2)  # the first two requests fail, later ones are answered
    log = await asides_runtime.open_manager("room", strategy=PassthroughStrategy())
    ann = await asides_runtime.open_manager("agents/ann", strategy=memory(), view_reader="ann", model=flaky)
    for number in range(12):
        await log.add_message("user", [text(f"Line {number} of a conversation long enough to compress.")])

    await ann.drain()  # retries with back-off (1 s, then 2 s) on the mock clock: no real waiting

    assert flaky.failures == 2 and len(flaky.requests) > 2
    assert ann.get_summaries_in_range(), "compression caught up once the model answered"
    assert trio.current_time() >= 1.0, "simulated seconds of back-off passed"
