"""The Google ADK integration: ``AsidesSessionService`` holds to what every ADK session service
owes its callers (the conformance ADK's own services are tested for), the plugin gives each agent
its own view, and the memory service answers for the agent that asks. Every test runs on both
backends (``store_path``), offline, with ``ScriptedAdkModel``."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

pytest.importorskip("google.adk")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.apps import App  # noqa: E402
from google.adk.errors._stale_session_error import StaleSessionError  # noqa: E402
from google.adk.errors.already_exists_error import AlreadyExistsError  # noqa: E402
from google.adk.errors.session_not_found_error import SessionNotFoundError  # noqa: E402
from google.adk.events.event import Event  # noqa: E402
from google.adk.events.event_actions import EventActions  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions.base_session_service import GetSessionConfig  # noqa: E402
from google.genai import types  # noqa: E402

from asides import ArgumentTypeError, AsidesError, open_runtime  # noqa: E402
from asides.integrations import ReservedReaderError  # noqa: E402
from asides.integrations.adk import AsidesMemoryService, AsidesSessionService, ScriptedAdkModel, UnknownAgentError  # noqa: E402

APP, USER = "trip", "u1"


def said(author: str, text: str, **fields: Any) -> Event:
    content = types.Content(role="user" if author == "user" else "model", parts=[types.Part(text=text)])
    return Event(author=author, invocation_id="inv", content=content, **fields)


def texts(session: Any) -> list[str]:
    return [p.text for e in session.events if e.content for p in e.content.parts if p.text]


# -- the session service --------------------------------------------------------------------------


def test_create_refuses_a_duplicate_id_and_keeps_state_scopes(store_path):
    async def main() -> None:
        service = AsidesSessionService(store_path)
        try:
            state = {"app:a": 1, "user:b": 2, "c": 3, "temp:d": 4}
            s = await service.create_session(app_name=APP, user_id=USER, session_id="s1", state=state)
            assert s.state == {"app:a": 1, "user:b": 2, "c": 3} and s.events == []
            with pytest.raises(AlreadyExistsError):
                await service.create_session(app_name=APP, user_id=USER, session_id="s1")
            other = await service.create_session(app_name=APP, user_id=USER, session_id="s2")
            assert other.state == {"app:a": 1, "user:b": 2}  # app: and user: are shared, session state is not
            elsewhere = await service.create_session(app_name=APP, user_id="u2")
            assert elsewhere.state == {"app:a": 1} and elsewhere.id
            # state deltas of an event: temp: lives in the session object only
            event = said("user", "hi", actions=EventActions(state_delta={"app:a": 10, "user:b": 20, "c": 30, "temp:t": 1}))
            await service.append_event(s, event)
            assert s.state["temp:t"] == 1 and s.state["c"] == 30
            again = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
            assert again.state == {"app:a": 10, "user:b": 20, "c": 30}
            assert (await service.get_session(app_name=APP, user_id=USER, session_id="s2")).state == {"app:a": 10, "user:b": 20}
            assert (await service.get_session(app_name=APP, user_id="u2", session_id=elsewhere.id)).state == {"app:a": 10}
            assert await service.get_user_state(app_name=APP, user_id=USER) == {"b": 20}
            assert "temp:t" not in repr(again.events[0].actions)
        finally:
            await service.close()

    asyncio.run(main())


def test_a_stale_session_object_is_refused_and_nothing_is_written(store_path):
    async def main() -> None:
        service = AsidesSessionService(store_path)
        try:
            await service.create_session(app_name=APP, user_id=USER, session_id="s")
            one = await service.get_session(app_name=APP, user_id=USER, session_id="s")
            two = await service.get_session(app_name=APP, user_id=USER, session_id="s")
            await service.append_event(one, said("user", "first"))
            await service.append_event(one, said("user", "second"))  # its own object is never stale
            with pytest.raises(StaleSessionError):
                await service.append_event(two, said("user", "late"))
            assert two.events == []
            assert texts(await service.get_session(app_name=APP, user_id=USER, session_id="s")) == ["first", "second"]
            with pytest.raises(SessionNotFoundError):
                gone = one.model_copy(update={"id": "nope"})
                await service.append_event(gone, said("user", "x"))
        finally:
            await service.close()

    asyncio.run(main())


def test_the_events_adk_seals_an_aborted_run_with_are_not_written_nor_the_call_they_answer(store_path):
    """A call waits in the service for its answer; ADK seals an aborted run with a made-up error
    answering it (``error_code`` ``INVOCATION_ABORTED``) and, when nothing waits, a bare mark:
    neither is written, and the call is dropped, as when no answer comes at all. A real answer
    after is written with its call."""

    def call(call_id: str) -> Event:
        part = types.Part(function_call=types.FunctionCall(id=call_id, name="lookup", args={"city": "Oslo"}))
        return Event(author="ann", invocation_id="inv", content=types.Content(role="model", parts=[part]))

    def answer(call_id: str, result: dict[str, Any], **fields: Any) -> Event:
        part = types.Part(function_response=types.FunctionResponse(id=call_id, name="lookup", response=result))
        return Event(author="ann", invocation_id="inv", content=types.Content(role="user", parts=[part]), **fields)

    def calls(session: Any) -> list[str]:
        return [p.function_call.id for e in session.events if e.content for p in e.content.parts if p.function_call]

    async def main() -> None:
        service = AsidesSessionService(store_path)
        try:
            session = await service.create_session(app_name=APP, user_id=USER, session_id="s")
            await service.append_event(session, said("user", "Ann, the weather in Oslo?"))
            await service.append_event(session, call("c1"))
            aborted = {"error": "Invocation was aborted by client."}
            await service.append_event(session, answer("c1", aborted, error_code="INVOCATION_ABORTED"))
            await service.append_event(session, Event(author="ann", invocation_id="inv", error_code="INVOCATION_ABORTED"))
            stored = await service.get_session(app_name=APP, user_id=USER, session_id="s")
            assert texts(stored) == ["Ann, the weather in Oslo?"] and calls(stored) == []
            assert [e.error_code for e in stored.events] == [None]
            session = stored
            await service.append_event(session, call("c2"))
            await service.append_event(session, answer("c2", {"sky": "grey"}))
            assert calls(await service.get_session(app_name=APP, user_id=USER, session_id="s")) == ["c2"]
        finally:
            await service.close()

    asyncio.run(main())


def test_get_session_config_reads_the_tail(store_path):
    async def main() -> None:
        service = AsidesSessionService(store_path)
        try:
            s = await service.create_session(app_name=APP, user_id=USER, session_id="s")
            base = time.time()
            for n in range(150):
                await service.append_event(s, said("user" if n % 2 else "ann", f"line {n}", timestamp=base + n))
            no_content = Event(author="ann", invocation_id="inv", actions=EventActions(state_delta={"k": 1}), timestamp=base + 150)
            await service.append_event(s, no_content)

            async def get(**config: Any) -> Any:
                return await service.get_session(app_name=APP, user_id=USER, session_id="s", config=GetSessionConfig(**config))

            got = await get(num_recent_events=3)
            assert [e.timestamp for e in got.events] == [base + 148, base + 149, base + 150]
            assert texts(got) == ["line 148", "line 149"]
            assert (await get(num_recent_events=0)).events == []
            after = await get(after_timestamp=base + 140)
            assert texts(after) == [f"line {n}" for n in range(140, 150)]
            whole = await service.get_session(app_name=APP, user_id=USER, session_id="s")
            assert len(whole.events) == 151 and [e.id for e in whole.events] == [e.id for e in s.events]
            assert whole.events[-1].actions.state_delta == {"k": 1} and whole.state["k"] == 1
        finally:
            await service.close()

    asyncio.run(main())


def test_list_and_delete(store_path):
    async def main() -> None:
        service = AsidesSessionService(store_path)
        try:
            a = await service.create_session(app_name=APP, user_id=USER, session_id="a", state={"x": 1})
            await service.create_session(app_name=APP, user_id=USER, session_id="b")
            await service.create_session(app_name=APP, user_id="u2", session_id="c")
            await service.create_session(app_name="other", user_id=USER, session_id="d")
            await service.append_event(a, said("user", "ERASE-ME"))
            mine = await service.list_sessions(app_name=APP, user_id=USER)
            assert sorted(s.id for s in mine.sessions) == ["a", "b"] and all(s.events == [] for s in mine.sessions)
            assert [s.id for s in mine.sessions][-1] == "a"  # the most recently updated last
            assert sorted(s.id for s in (await service.list_sessions(app_name=APP)).sessions) == ["a", "b", "c"]
            await service.delete_session(app_name=APP, user_id=USER, session_id="a")
            await service.delete_session(app_name=APP, user_id=USER, session_id="never")  # nothing to do
            assert await service.get_session(app_name=APP, user_id=USER, session_id="a") is None
            assert [s.id for s in (await service.list_sessions(app_name=APP, user_id=USER)).sessions] == ["b"]
            rt = service.runtime
            assert not any("ERASE-ME" in repr(m.content) for b in rt.list_branches() for m in rt.store.messages(b.name))
            fresh = await service.create_session(app_name=APP, user_id=USER, session_id="a")  # the id is free again
            assert fresh.state == {} and (await service.get_session(app_name=APP, user_id=USER, session_id="a")).events == []
        finally:
            await service.close()

    asyncio.run(main())


def test_everything_is_durable_across_service_objects(store_path):
    async def main() -> None:
        first = AsidesSessionService(store_path)
        s = await first.create_session(app_name=APP, user_id=USER, session_id="s", state={"user:name": "Ann"})
        event = said("user", "remember me", actions=EventActions(state_delta={"c": 1}))
        await first.append_event(s, event)
        await first.close()
        second = AsidesSessionService(store_path)
        try:
            got = await second.get_session(app_name=APP, user_id=USER, session_id="s")
            assert got.events[0].id == event.id and got.events[0].invocation_id == "inv" and texts(got) == ["remember me"]
            assert got.state == {"user:name": "Ann", "c": 1}
            await second.append_event(got, said("ann", "hello"))  # what it read is current
        finally:
            await second.close()

    asyncio.run(main())


def test_bad_arguments_are_refused_and_write_nothing(store_path):
    async def main() -> None:
        with pytest.raises(ArgumentTypeError):
            AsidesSessionService(42)  # type: ignore[arg-type]
        with pytest.raises(ArgumentTypeError):
            AsidesSessionService(store_path, private_tool_calls="yes")  # type: ignore[arg-type]
        service = AsidesSessionService(store_path)
        try:
            with pytest.raises(AsidesError):
                await service.create_session(app_name="", user_id=USER)
            s = await service.create_session(app_name=APP, user_id=USER, session_id="s")
            with pytest.raises(AsidesError):
                await service.append_event(s, said("user", "x", custom_metadata={"audience": "ann"}))
            assert (await service.get_session(app_name=APP, user_id=USER, session_id="s")).events == [] and s.events == []
        finally:
            await service.close()

    asyncio.run(main())


# -- the plugin -----------------------------------------------------------------------------------


def lookup(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny, TOOL-SECRET"


def request_texts(model: ScriptedAdkModel, n: int = -1) -> str:
    out = []
    for content in model.requests[n].contents:
        for part in content.parts or []:
            if part.text:
                out.append(f"{content.role}: {part.text}")
            elif part.function_call:
                out.append(f"{content.role}: call {part.function_call.name}")
            elif part.function_response:
                out.append(f"{content.role}: result {part.function_response.response}")
    return "\n".join(out)


async def run(runner: Runner, text: str, session_id: str = "room") -> None:
    message = types.Content(role="user", parts=[types.Part(text=text)])
    async for _ in runner.run_async(user_id=USER, session_id=session_id, new_message=message):
        pass


def test_each_sub_agent_gets_its_own_view(store_path):
    """A root agent hands over to two sub-agents in turn: each model gets its own turns as its
    own, the other's answers named, never the other's private tool output, never a private line
    meant for the other."""

    async def main() -> None:
        async with open_runtime(store_path) as rt:
            service = AsidesSessionService(rt)
            def agent_model(name: str, *answers: Any) -> ScriptedAdkModel:
                """Answers in turn; hands a line meant for the other agent over to it."""
                script = iter(answers)

                def answer(request: Any) -> Any:
                    last = [p.text for c in request.contents if c.role == "user" for p in c.parts or [] if p.text][-1]
                    other = "bob" if name == "ann" else "ann"
                    if last.startswith(other.capitalize()):
                        return ScriptedAdkModel.call("transfer_to_agent", {"agent_name": other})
                    return next(script)

                return ScriptedAdkModel(answer=answer)

            ann_model = agent_model("ann", ScriptedAdkModel.call("lookup", {"city": "Oslo"}), "Ann: it is sunny.", "Ann: nothing else.")
            bob_model = agent_model("bob", "Bob: I booked the hall.")
            ann = LlmAgent(name="ann", model=ann_model, instruction="SYSTEM-ann", tools=[lookup])
            bob = LlmAgent(name="bob", model=bob_model, instruction="SYSTEM-bob")

            def route(request: Any) -> Any:
                return ScriptedAdkModel.call("transfer_to_agent", {"agent_name": "ann"})

            root = LlmAgent(name="host", model=ScriptedAdkModel(answer=route), instruction="Route.", sub_agents=[ann, bob])
            app = App(name=APP, root_agent=root, plugins=[service.plugin()])
            runner = Runner(app=app, session_service=service, auto_create_session=True)
            await run(runner, "Ann, the weather?")
            s = await service.get_session(app_name=APP, user_id=USER, session_id="room")
            await service.append_event(s, said("host", "Only ann: the key is under the mat.", custom_metadata={"audience": ["ann"]}))
            await run(runner, "Bob, book it.")
            await run(runner, "Ann, anything else?")
            seen_by_bob = request_texts(bob_model, -1)
            assert "Bob, book it." in seen_by_bob and "user: ann: Ann: it is sunny." in seen_by_bob
            assert "TOOL-SECRET" not in seen_by_bob and "lookup" not in seen_by_bob and "under the mat" not in seen_by_bob
            assert "SYSTEM-" not in seen_by_bob
            seen_by_ann = request_texts(ann_model, -1)
            assert "model: call lookup" in seen_by_ann and "TOOL-SECRET" in seen_by_ann
            assert "model: Ann: it is sunny." in seen_by_ann and "user: bob: Bob: I booked the hall." in seen_by_ann
            assert "under the mat" in seen_by_ann
            logged = repr([(m.participant, m.content, dict(m.metadata)) for b in rt.list_branches() for m in rt.store.messages(b.name)])
            assert "SYSTEM-" not in logged

    asyncio.run(main())


def test_an_agent_named_like_a_shared_role_is_refused_before_its_run(store_path):
    async def main() -> None:
        async with open_runtime(store_path) as rt:
            service = AsidesSessionService(rt)
            agent = LlmAgent(name="assistant", model=ScriptedAdkModel("hi"))
            app = App(name=APP, root_agent=agent, plugins=[service.plugin()])
            runner = Runner(app=app, session_service=service, auto_create_session=True)
            with pytest.raises(RuntimeError) as refused:  # ADK wraps what a plugin raises
                await run(runner, "hello")
            assert isinstance(refused.value.__cause__, ReservedReaderError)
            with pytest.raises(ReservedReaderError):  # checked early, when the agent tree is built
                service.plugin().check_agents(LlmAgent(name="root", model=ScriptedAdkModel("hi"), sub_agents=[agent]))

    asyncio.run(main())


# -- the memory service ---------------------------------------------------------------------------


def test_memory_search_is_scoped_to_the_asking_agent(store_path):
    async def main() -> None:
        async with open_runtime(store_path) as rt:
            service = AsidesSessionService(rt)
            memory = AsidesMemoryService(service)
            old = await service.create_session(app_name=APP, user_id=USER, session_id="old")
            await service.append_event(old, said("user", "The badger key is under the mat.", custom_metadata={"audience": ["ann"]}))
            await service.append_event(old, said("carol", "A badger was seen near the river."))
            found: dict[str, list[str]] = {}

            async def recall(query: str, tool_context: Any) -> str:
                """Search the memory."""
                response = await tool_context.search_memory(query)
                found[tool_context.agent_name] = [m.content.parts[0].text for m in response.memories]
                return "done"

            for name in ("ann", "bob"):
                model = ScriptedAdkModel(ScriptedAdkModel.call("recall", {"query": "badger"}), "ok")
                agent = LlmAgent(name=name, model=model, tools=[recall])
                runner = Runner(
                    app=App(name=APP, root_agent=agent, plugins=[service.plugin()]),
                    session_service=service,
                    memory_service=memory,
                    auto_create_session=True,
                )
                await run(runner, "recall", session_id=f"new-{name}")
            assert "The badger key is under the mat." in found["ann"] and "A badger was seen near the river." in found["ann"]
            assert found["bob"] == ["A badger was seen near the river."]
            with pytest.raises(UnknownAgentError):
                await memory.search_memory(app_name=APP, user_id=USER, query="badger")
            assert await memory.add_session_to_memory(old) is None

    asyncio.run(main())
