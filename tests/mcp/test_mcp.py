"""``asides mcp``, driven by the MCP SDK's own client: over stdio (the command as a subprocess)
and over streamable HTTP (in-process, and the command with ``--http``). The tool list with its
schemas and annotations; each tool's answers; another reader's private line never in ``recall``
or ``search``; ``remember`` seen by its reader and no other (through a manager of another reader,
and through another reader's server); bad arguments answered as tool errors, the server still
answering after them; the token and the Host header on HTTP; the command's refusals.

No test sleeps: a server is waited for by its readiness (an event in-process, its URL line on
stderr for a subprocess), each within a generous bound for a busy 2-core machine."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

pytest.importorskip("mcp")
pytest.importorskip("hypercorn")

import httpx2  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

import asides  # noqa: E402
from asides import PassthroughStrategy, open_runtime, text  # noqa: E402
from asides._cli._main import main  # noqa: E402
from asides._mcp import reader_manager, serve_http  # noqa: E402

TOKEN = "mcp-test-token-0123"
#: Seconds a server may take to start or a call to answer on a busy 2-core machine.
PATIENCE = 90


async def build(path: str) -> None:
    """A log in ``room`` read by ann and bob: public lines, one line for ann alone, one for bob
    alone."""
    async with open_runtime(path) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        await room.add_message("user", [text("The plan: ship the harbour report on Friday.")])
        await room.add_message("cleo", [text("Public note: the harbour crane is booked."), text("BOB-SECRET crane code 4471", ["bob"])])
        await room.add_message("user", [text("ANN-SECRET the budget is 30k", ["ann"])])


def child_env() -> dict[str, str]:
    """What a server subprocess needs beyond the SDK's safe defaults: the import path of the
    asides under test."""
    return {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}


def over_stdio(path: str, namespace: str, reader: str) -> Client:
    """An MCP client of ``asides mcp`` started as a subprocess on stdio."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "asides", "mcp", path, "--namespace", namespace, "--reader", reader],
        env=child_env(),
    )
    return Client(params, read_timeout_seconds=PATIENCE)


def over_http(url: str, token: str | None = TOKEN) -> Client:
    """An MCP client of the server at ``url``, sending ``token`` as a bearer token."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    return Client(streamable_http_client(url, http_client=create_mcp_http_client(headers=headers)), read_timeout_seconds=PATIENCE)


@asynccontextmanager
async def serving(path: str, namespace: str, reader: str) -> AsyncIterator[str]:
    """A server for ``reader`` on streamable HTTP, in this process, for the block; its URL. It
    stops (and closes its runtime) when the block ends."""
    urls: list[str] = []
    ready = trio.Event()

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    async def serve() -> None:
        async with reader_manager(path, namespace, reader) as manager:
            await serve_http(manager, host="127.0.0.1", port=0, token=TOKEN, on_ready=on_ready)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve)
        with trio.fail_after(PATIENCE):
            await ready.wait()
        yield urls[0]
        nursery.cancel_scope.cancel()


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    """The structured answer of a call that must succeed."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, (tool, arguments, result.content)
    return result.structured_content


async def refused(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    """The text of a call that must be answered as a tool error."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, (tool, arguments, result)
    return " ".join(block.text for block in result.content if block.type == "text")


async def check_tool_list(client: Client) -> None:
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(listed) == {"search", "recall", "remember", "memories"}
    for tool in listed.values():
        assert tool.description and tool.output_schema and tool.output_schema["type"] == "object", tool.name
        assert tool.annotations is not None and tool.annotations.open_world_hint is False, tool.name
        assert tool.input_schema["type"] == "object"
        assert "reader" not in tool.input_schema.get("properties", {}), "no tool may choose its reader"
    for name in ("search", "recall", "memories"):
        hints = listed[name].annotations
        assert hints is not None and (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (True, False, True)
    hints = listed["remember"].annotations
    assert hints is not None and (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (False, False, False)

    search = listed["search"].input_schema
    assert search["required"] == ["query"]
    assert search["properties"]["query"]["type"] == "string" and search["properties"]["query"]["minLength"] == 1
    assert search["properties"]["limit"] == search["properties"]["limit"] | {"type": "integer", "default": 10, "minimum": 1}
    assert set(listed["search"].output_schema["properties"]) == {"query", "hits"}
    recall = listed["recall"].input_schema
    assert recall["required"] == ["max_tokens"] and recall["properties"]["max_tokens"]["type"] == "integer"
    assert recall["properties"]["max_tokens"]["exclusiveMinimum"] == 0
    assert {"text", "messages", "token_estimate"} <= set(listed["recall"].output_schema["properties"])
    remember = listed["remember"].input_schema
    assert remember["required"] == ["text"] and remember["properties"]["private"] == remember["properties"]["private"] | {
        "type": "boolean",
        "default": True,
    }
    assert {"id", "sequence", "audience"} <= set(listed["remember"].output_schema["properties"])
    memories = listed["memories"].input_schema
    assert "required" not in memories or memories["required"] == []
    limit = memories["properties"]["limit"]
    assert limit == limit | {"type": "integer", "default": 50, "minimum": 1, "maximum": 1000}
    assert set(listed["memories"].output_schema["properties"]) == {"memories", "count"}


async def check_bad_arguments(client: Client) -> None:
    """Each malformed call is a tool error naming what is wrong; the server answers on."""
    assert "max_tokens" in await refused(client, "recall", {"max_tokens": 0})
    assert "max_tokens" in await refused(client, "recall", {"max_tokens": -5})
    assert "max_tokens" in await refused(client, "recall", {"max_tokens": "100"})
    assert "max_tokens" in await refused(client, "recall", {"max_tokens": 1.5})
    assert "max_tokens" in await refused(client, "recall", {})
    assert "text" in await refused(client, "remember", {"text": ""})
    assert "blank" in await refused(client, "remember", {"text": "   "})
    assert "text" in await refused(client, "remember", {"text": 42})
    assert "private" in await refused(client, "remember", {"text": "x", "private": "false"})
    assert "query" in await refused(client, "search", {"query": ""})
    assert "blank" in await refused(client, "search", {"query": "  "})
    assert "query" in await refused(client, "search", {"query": "?!"})  # the library's refusal: no word
    assert "limit" in await refused(client, "search", {"query": "plan", "limit": -1})
    assert "limit" in await refused(client, "search", {"query": "plan", "limit": 0})
    assert "limit" in await refused(client, "search", {"query": "plan", "limit": "ten"})
    assert "query" in await refused(client, "search", {"query": ["plan"]})
    assert "limit" in await refused(client, "memories", {"limit": 0})
    assert "limit" in await refused(client, "memories", {"limit": 1001})
    # still answering
    assert (await call(client, "memories", {}))["memories"] == []


async def test_stdio_answers_for_its_reader_alone(tmp_path):
    path = str(tmp_path / "log.db")
    await build(path)
    with trio.fail_after(3 * PATIENCE):
        async with over_stdio(path, "agents/ann", "ann") as client:
            await check_tool_list(client)

            context = await call(client, "recall", {"max_tokens": 10_000})
            assert context["reader"] == "ann" and context["namespace"] == "agents/ann"
            assert "ship the harbour report" in context["text"] and "ANN-SECRET" in context["text"]
            assert "BOB-SECRET" not in context["text"]
            assert context["messages"] == 3 and context["token_estimate"] > 0
            answer = await client.call_tool("recall", {"max_tokens": 10_000})
            assert answer.content[0].type == "text" and answer.content[0].text == context["text"]

            private = await call(client, "remember", {"text": "ANN-NOTE keep the crane booking"})
            assert private["participant"] == "ann" and private["audience"] == ["ann"] and private["id"]
            public = await call(client, "remember", {"text": "ANN-PUBLIC the report is drafted", "private": False})
            assert public["audience"] is None and public["sequence"] > private["sequence"]
            again = await call(client, "recall", {"max_tokens": 10_000})
            assert "ANN-NOTE keep the crane booking" in again["text"] and "ANN-PUBLIC" in again["text"]
            assert again["messages"] == 5

            assert await call(client, "memories", {}) == {"memories": [], "count": 0}  # passthrough keeps none
            await check_bad_arguments(client)

    # Ann's lines, read back through managers of the store: bob sees the public one alone.
    async with open_runtime(path) as rt:
        bob = await rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob")
        seen = " ".join(b.text for m in (await bob.compile(max_tokens=10_000, reserve_for_response=0)).messages for b in m.content)
        assert "ANN-PUBLIC" in seen and "BOB-SECRET" in seen
        assert "ANN-NOTE" not in seen and "ANN-SECRET" not in seen
        stored = {m.id: m for m in bob.get_all_messages()}
        assert stored[private["id"]].participant == "ann"
        assert [b.audience for b in stored[private["id"]].content] == [("ann",)]
        assert bob.view_message(private["id"]) is None or not bob.view_message(private["id"]).content


async def test_http_needs_the_token_and_a_host_that_names_it(tmp_path):
    path = str(tmp_path / "log.db")
    await build(path)
    async with serving(path, "agents/ann", "ann") as url:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        kinds = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        async with httpx2.AsyncClient(timeout=PATIENCE) as raw:
            for headers in ({}, {"Authorization": "Bearer wrong-token-000"}, {"Authorization": TOKEN}, {"Authorization": f"Basic {TOKEN}"}):
                answer = await raw.post(url, json=body, headers=kinds | headers)
                assert answer.status_code == 401, headers
                assert answer.headers["www-authenticate"] == "Bearer"
                assert "ANN" not in answer.text and "search" not in answer.text
            port = url.split(":")[2].split("/")[0]
            answer = await raw.post(url, json=body, headers=kinds | {"Authorization": f"Bearer {TOKEN}", "Host": f"evil.example:{port}"})
            assert answer.status_code == 421
            answer = await raw.get(url.replace("/mcp", "/other"), headers={"Authorization": f"Bearer {TOKEN}"})
            assert answer.status_code == 404
        with trio.fail_after(PATIENCE):
            async with over_http(url) as client:
                await check_tool_list(client)
                context = await call(client, "recall", {"max_tokens": 10_000})
                assert "ANN-SECRET" in context["text"] and "BOB-SECRET" not in context["text"]
                await check_bad_arguments(client)
                assert "ANN-SECRET" in (await call(client, "recall", {"max_tokens": 10_000}))["text"]


async def test_remember_reaches_its_reader_and_no_other_server(store_path):
    """Ann's server writes; bob's server (on the same store: a file in turn, PostgreSQL too)
    never shows ann's private lines, in recall or search, and shows her public one."""
    await build(store_path)
    with trio.fail_after(3 * PATIENCE):
        async with serving(store_path, "agents/ann", "ann") as url, over_http(url) as ann:
            private = await call(ann, "remember", {"text": "ANN-NOTE the crane moves at noon"})
            await call(ann, "remember", {"text": "ANN-PUBLIC the crane moves", "private": False})
            assert "ANN-NOTE the crane moves at noon" in (await call(ann, "recall", {"max_tokens": 10_000}))["text"]
            found = await call(ann, "search", {"query": "crane noon"})
            assert private["id"] in {hit["id"] for hit in found["hits"]}
        async with serving(store_path, "agents/bob", "bob") as url, over_http(url) as bob:
            seen = (await call(bob, "recall", {"max_tokens": 10_000}))["text"]
            assert "ANN-PUBLIC the crane moves" in seen and "BOB-SECRET" in seen
            assert "ANN-NOTE" not in seen and "ANN-SECRET" not in seen
            for query in ("crane noon", "ANN-NOTE", "budget", "ANN-SECRET"):
                found = await call(bob, "search", {"query": query})
                assert all("ANN-NOTE" not in hit["text"] and "ANN-SECRET" not in hit["text"] for hit in found["hits"]), query
                assert private["id"] not in {hit["id"] for hit in found["hits"]}
            assert "ANN-PUBLIC the crane moves" in " ".join(h["text"] for h in (await call(bob, "search", {"query": "crane"}))["hits"])


async def test_search_finds_what_its_reader_may_see(tmp_path):
    path = str(tmp_path / "log.db")
    await build(path)
    async with serving(path, "agents/ann", "ann") as url, over_http(url) as client:
        with trio.fail_after(PATIENCE):
            found = await call(client, "search", {"query": "harbour"})
            assert found["query"] == "harbour" and found["hits"]
            hit = found["hits"][0]
            assert set(hit) == {"kind", "id", "text", "score", "sequence", "participant", "timestamp"}
            assert hit["kind"] in ("message", "memory") and "harbour" in hit["text"].lower()
            assert [h["score"] for h in found["hits"]] == sorted((h["score"] for h in found["hits"]), reverse=True)
            assert len((await call(client, "search", {"query": "harbour", "limit": 1}))["hits"]) == 1
            ann_only = await call(client, "search", {"query": "budget"})
            assert any("ANN-SECRET" in h["text"] for h in ann_only["hits"])
            for query in ("crane code", "4471", "BOB-SECRET"):
                found = await call(client, "search", {"query": query})
                assert all("BOB-SECRET" not in h["text"] and "4471" not in h["text"] for h in found["hits"]), query


async def test_the_command_serves_http_and_stops_on_ctrl_c(tmp_path):
    """``asides mcp --http``: the URL on stderr (stdout stays empty), the token, exit 130 on
    Ctrl-C."""
    path = str(tmp_path / "log.db")
    await build(path)
    command = [sys.executable, "-m", "asides", "mcp", path, "-n", "agents/ann", "-r", "ann", "--http", "--port", "0", "--token", TOKEN]
    process = await trio.lowlevel.open_process(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a shell's background job ignores it
    )
    assert process.stderr is not None and process.stdout is not None
    said = b""
    try:
        with trio.fail_after(PATIENCE):
            while b"Ctrl-C stops.\n" not in said:  # the last of the lines it prints once it listens
                chunk = await process.stderr.receive_some()
                assert chunk, f"the server ended before it listened: {said.decode()}"
                said += chunk
        url = next(line for line in said.decode().splitlines() if line.endswith("/mcp"))
        assert url.startswith("http://127.0.0.1:")
        assert f"Authorization: Bearer {TOKEN}" in said.decode()
        with trio.fail_after(PATIENCE):
            async with over_http(url) as client:
                assert "ANN-SECRET" in (await call(client, "recall", {"max_tokens": 10_000}))["text"]
            with pytest.raises(Exception) as failed:  # noqa: B017, PT011  (a 401 fails the client's first request)
                async with over_http(url, token=None) as client:
                    await client.list_tools()
            assert "ANN" not in repr(failed.value)
        process.send_signal(signal.SIGINT)
        with trio.fail_after(PATIENCE):
            assert await process.wait() == 130
        assert await process.stdout.receive_some() == b""
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def test_the_command_refuses_bad_usage(tmp_path, capsys):
    path = str(tmp_path / "log.db")
    trio.run(build, path)
    for argv, says in (
        (["--http", "--host", "0.0.0.0"], "loopback"),
        (["--http", "--host", "192.168.1.10"], "loopback"),
        (["--http", "--token", "short"], "--token"),
        (["--token", TOKEN], "--http"),
        (["--port", "9000"], "--http"),
    ):
        assert main(["mcp", path, "-n", "agents/ann", "-r", "ann", *argv]) == 2, argv
        assert says in capsys.readouterr().err, argv
    assert main(["mcp", path, "-n", "agents/ann", "-r", ""]) == 2
    assert "--reader" in capsys.readouterr().err


def test_the_command_refuses_a_namespace_another_reader_claims(tmp_path, capsys):
    path = str(tmp_path / "log.db")

    async def claim() -> None:
        async with open_runtime(path) as rt:
            await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")

    trio.run(claim)
    assert main(["mcp", path, "-n", "agents/ann", "-r", "bob"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("asides: ") and "'ann'" in err and len(err.strip().splitlines()) == 1


class RefusingManager:
    """A manager whose every read and write is refused by the library."""

    namespace = "agents/ann"
    view_reader = "ann"

    async def compile(self, **_options: Any) -> Any:
        raise asides.InvalidArgumentError("max_tokens", "is refused here, as the library would")

    async def add_message(self, *_args: Any, **_options: Any) -> Any:
        raise asides.StoreFailedError("the store failed: disk full")

    async def search(self, *_args: Any, **_options: Any) -> Any:
        raise asides.InvalidArgumentError("query", "is refused here")

    def get_summaries_in_range(self) -> Any:
        raise asides.ManagerClosedError("get_summaries_in_range", "agents/ann")


async def test_a_library_error_is_a_tool_error_with_its_message():
    from asides._mcp._tools import make_server

    async with Client(make_server(RefusingManager())) as client:  # type: ignore[arg-type]
        with trio.fail_after(PATIENCE):
            assert "is refused here, as the library would" in await refused(client, "recall", {"max_tokens": 100})
            assert "disk full" in await refused(client, "remember", {"text": "x"})
            assert "is refused here" in await refused(client, "search", {"query": "x"})
            assert "closed" in await refused(client, "memories", {})
            assert "closed" in await refused(client, "memories", {})  # and it answers on


def test_the_openai_agents_snippet_of_docs_mcp_md_runs(tmp_path, monkeypatch):
    """docs/mcp.md's OpenAI Agents snippet, as it stands (the server it starts is given this
    test's import path): the agent remembers through the server, for ann alone."""
    import asyncio
    import re
    from pathlib import Path

    pytest.importorskip("agents")
    page = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text(encoding="utf-8")
    snippet = next(code for code in re.findall(r"```python\n(.*?)```", page, re.S) if "MCPServerStdio" in code)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    exec(compile(snippet, "docs/mcp.md", "exec"), namespace)  # noqa: S102
    namespace["memory"].params.env = child_env() or None
    assert asyncio.run(asyncio.wait_for(namespace["run_ann"](), 3 * PATIENCE)) == "Noted."

    async def read_back() -> None:
        async with open_runtime(str(tmp_path / "room.db")) as rt:
            bob = await rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob")
            [line] = bob.get_all_messages()
            assert line.participant == "ann" and [(b.text, b.audience) for b in line.content] == [("The crane moves at noon.", ("ann",))]
            assert not (await bob.compile(max_tokens=1000, reserve_for_response=0)).messages

    trio.run(read_back)


async def test_stdio_stops_when_its_client_closes_stdin_and_writes_nothing_else_to_stdout(tmp_path):
    path = str(tmp_path / "log.db")
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "asides", "mcp", path, "-n", "agents/ann", "-r", "ann"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    try:
        said = b""
        with trio.fail_after(PATIENCE):
            while b"on stdio\n" not in said:
                chunk = await process.stderr.receive_some()
                assert chunk, f"the server ended before it served: {said.decode()}"
                said += chunk
        await process.stdin.aclose()
        with trio.fail_after(PATIENCE):
            assert await process.wait() == 0
        assert await process.stdout.receive_some() == b""
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    async with open_runtime(path) as rt:  # the server let the file go
        with pytest.raises(asides.ReaderClaimError):
            await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="bob")


async def test_memories_answers_the_newest_up_to_its_limit_and_how_many_there_are(store_path):
    """A namespace whose strategy wrote memories: ``memories`` answers at most ``limit`` of them
    (50 by default), newest first, with ``count``, how many it keeps; so its answer follows the
    limit, not the history the namespace compressed."""
    from asides import AutobiographicalStrategy, ExtractiveModel

    async with open_runtime(store_path, model=ExtractiveModel(keep_requests=0)) as rt:
        ann = await rt.open_manager(
            "agents/ann",
            strategy=AutobiographicalStrategy(target_chunk_tokens=40, head_window_tokens=20, recent_window_tokens=60),
            view_reader="ann",
        )
        for i in range(60):
            await ann.add_message(("user", "assistant")[i % 2], [text(f"Line {i} about the harbour plan, with a second clause.")])
        await ann.drain()
        kept = ann.get_summaries_in_range()
    newest = sorted(kept, key=lambda s: (s.last_sequence, s.first_sequence), reverse=True)
    assert len(kept) > 3
    with trio.fail_after(3 * PATIENCE):
        async with serving(store_path, "agents/ann", "ann") as url, over_http(url) as client:
            few = await call(client, "memories", {"limit": 3})
            assert few["count"] == len(kept) and [m["id"] for m in few["memories"]] == [s.id for s in newest[:3]]
            answer = await client.call_tool("memories", {"limit": 3})
            assert answer.content[0].text.startswith(f"The newest 3 of {len(kept)} memories:")
            every = await call(client, "memories", {})
            assert every["count"] == len(kept) and len(every["memories"]) == min(50, len(kept))
