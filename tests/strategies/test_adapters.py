"""The provider adapters (strategies/adapters.py), with no network.

Each SDK client is built with ``http_client=<the SDK's httpx AsyncClient>(transport=
MockTransport(handler))`` and a dummy key: the handler records every request and answers with
recorded-looking JSON. Back-off waits run under Trio's autojumping ``MockClock`` (the
``autojump_clock`` fixture), so no test sleeps for real; the elapsed mock time checks the
schedule. A test needing an SDK that is not installed is skipped.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from collections.abc import Callable
from typing import Any

import pytest
import trio

from asides.store._blocks import RedactedThinkingBlock, TextBlock, ThinkingBlock, ToolUseBlock
from asides.strategies._base import CompiledMessage
from asides.strategies._models import Completion, CompletionRequest, Model, Usage, completion_text


def _httpx() -> Any:
    """The HTTP package the SDKs are built on (``httpx2`` in newer SDKs, else ``httpx``)."""
    for name in ("httpx2", "httpx"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    pytest.skip("no httpx package")


@pytest.fixture
def anthropic_sdk() -> Any:
    return pytest.importorskip("anthropic")


@pytest.fixture
def openai_sdk() -> Any:
    return pytest.importorskip("openai")


class FakeAPI:
    """A MockTransport handler: answers with queued ``(status, body, headers)`` replies (the last
    one repeats) and records each request's JSON body and headers."""

    def __init__(self, *replies: tuple[int, dict[str, Any], dict[str, str]] | tuple[int, dict[str, Any]]) -> None:
        self.replies = list(replies)
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []

    def __call__(self, request: Any) -> Any:
        httpx = _httpx()
        self.bodies.append(json.loads(request.content))
        self.paths.append(request.url.path)
        self.headers.append(dict(request.headers))
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        status, body = reply[0], reply[1]
        headers = reply[2] if len(reply) > 2 else {}
        return httpx.Response(status, json=body, headers=headers)

    @property
    def calls(self) -> int:
        return len(self.bodies)


def anthropic_client(sdk: Any, api: FakeAPI, **kwargs: Any) -> Any:
    httpx = _httpx()
    return sdk.AsyncAnthropic(api_key="test-key", http_client=httpx.AsyncClient(transport=httpx.MockTransport(api)), **kwargs)


def openai_client(sdk: Any, api: FakeAPI, **kwargs: Any) -> Any:
    httpx = _httpx()
    return sdk.AsyncOpenAI(api_key="test-key", http_client=httpx.AsyncClient(transport=httpx.MockTransport(api)), **kwargs)


def msg(participant: str, *texts: str) -> CompiledMessage:
    return CompiledMessage(participant, tuple(TextBlock(t) for t in texts))


# A compression-shaped request: prior recollections as assistant turns, the chunk and the
# instruction as consecutive user messages (which the provider forms merge).
REQUEST = CompletionRequest(
    messages=(
        msg("user", "Earlier we talked about the garden."),
        msg("assistant", "[Memory point] We planted tomatoes."),
        msg("assistant", "And basil."),
        msg("user", "Alice: the frost came early this year."),
        msg("user", "Summarise the stretch above. Aim for about 200 tokens."),
    ),
    system="You are writing your own memories.",
    max_tokens=1234,
)


# -- recorded-looking responses ------------------------------------------------------------------


def anthropic_message(
    content: list[dict[str, Any]] | None = None, stop_reason: str | None = "end_turn", model: str = "claude-sonnet-5-5"
) -> dict[str, Any]:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content if content is not None else [{"type": "text", "text": "- We planted tomatoes and basil."}],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 2095,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 503,
            "service_tier": "standard",
        },
    }


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}


RATE_LIMITED = anthropic_error(
    "rate_limit_error", "This request would exceed the rate limit for your organization of 50 requests per minute."
)
OVERLOADED = anthropic_error("overloaded_error", "Overloaded")
BAD_REQUEST = anthropic_error("invalid_request_error", 'messages: roles must alternate between "user" and "assistant"')


def openai_completion(
    content: str | None = "- We planted tomatoes and basil.",
    finish_reason: str = "stop",
    *,
    refusal: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal, "annotations": []}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion",
        "created": 1741570283,
        "model": "gpt-5.5-2026-04-23",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": 1117,
            "completion_tokens": 46,
            "total_tokens": 1163,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": None,
    }


def openai_error(message: str, kind: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


OPENAI_RATE_LIMITED = openai_error(
    "Rate limit reached for gpt-5.5 on requests per min (RPM): Limit 500, Used 500, Requested 1.",
    "requests",
    "rate_limit_exceeded",
)


# -- construction --------------------------------------------------------------------------------


def test_adapters_need_no_sdk_to_import_strategies() -> None:
    """The strategies layer, adapters included, imports where neither SDK can be imported."""
    import subprocess

    script = (
        "import sys; sys.modules['anthropic'] = sys.modules['openai'] = None\n"
        "import asides.strategies as s, asides.strategies._adapters as a\n"
        "assert s.AnthropicModel is a.AnthropicModel and s.OpenAIModel is a.OpenAIModel\n"
        "assert sys.modules['anthropic'] is None and sys.modules['openai'] is None\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("name", "module", "extra"), [("AnthropicModel", "anthropic", "anthropic"), ("OpenAIModel", "openai", "openai")])
def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch, name: str, module: str, extra: str) -> None:
    from asides.strategies import _adapters as adapters

    monkeypatch.setitem(sys.modules, module, None)  # makes ``import <module>`` fail
    with pytest.raises(ImportError, match=rf"pip install 'asides\[{extra}\]'"):
        getattr(adapters, name)()


def test_bad_retry_arguments_are_refused(anthropic_sdk: Any) -> None:
    from asides.strategies._adapters import AnthropicModel

    with pytest.raises(ValueError):
        AnthropicModel(max_retries=-1)
    with pytest.raises(ValueError):
        AnthropicModel(first_backoff=10, max_backoff=1)
    with pytest.raises(ValueError):
        AnthropicModel(model="")


async def test_default_clients_are_built_lazily_without_sdk_retries(anthropic_sdk: Any, openai_sdk: Any) -> None:
    from asides.strategies._adapters import DEFAULT_ANTHROPIC_MODEL, DEFAULT_OPENAI_MODEL, AnthropicModel, OpenAIModel

    anthropic_model = AnthropicModel(api_key="test-key")
    openai_model = OpenAIModel(api_key="test-key", base_url="http://localhost:9/v1")
    assert anthropic_model.model == DEFAULT_ANTHROPIC_MODEL and openai_model.model == DEFAULT_OPENAI_MODEL
    assert anthropic_model._client is None and openai_model._client is None  # nothing built yet
    client = anthropic_model._get_client()
    assert isinstance(client, anthropic_sdk.AsyncAnthropic) and client.max_retries == 0 and client.api_key == "test-key"
    client = openai_model._get_client()
    assert isinstance(client, openai_sdk.AsyncOpenAI) and client.max_retries == 0
    assert str(client.base_url).startswith("http://localhost:9/v1")
    await anthropic_model.aclose()
    await openai_model.aclose()
    assert isinstance(anthropic_model, Model) and isinstance(openai_model, Model)


# -- Anthropic: request shape and response parsing -----------------------------------------------


async def test_anthropic_request_shape(anthropic_sdk: Any) -> None:
    from asides.strategies._adapters import AnthropicModel

    api = FakeAPI((200, anthropic_message()))
    model = AnthropicModel(model="claude-haiku-5-5", client=anthropic_client(anthropic_sdk, api))
    await model.complete(REQUEST)
    assert api.paths == ["/v1/messages"]
    body = api.bodies[0]
    assert body["model"] == "claude-haiku-5-5"
    assert body["max_tokens"] == 1234
    assert body["system"] == "You are writing your own memories."
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Earlier we talked about the garden."}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "[Memory point] We planted tomatoes."},
                {"type": "text", "text": "And basil."},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Alice: the frost came early this year."},
                {"type": "text", "text": "Summarise the stretch above. Aim for about 200 tokens."},
            ],
        },
    ]
    roles = [m["role"] for m in body["messages"]]
    assert all(a != b for a, b in zip(roles, roles[1:], strict=False))
    headers = api.headers[0]
    assert headers.get("x-api-key") == "test-key" or headers.get("authorization") == "Bearer test-key"
    assert "stream" not in body or body["stream"] is False


async def test_anthropic_request_model_overrides_and_no_system(anthropic_sdk: Any) -> None:
    from asides.strategies._adapters import AnthropicModel

    api = FakeAPI((200, anthropic_message()))
    model = AnthropicModel(client=anthropic_client(anthropic_sdk, api))
    await model.complete(CompletionRequest(messages=(msg("user", "hi"),), model="claude-opus-5-5"))
    body = api.bodies[0]
    assert body["model"] == "claude-opus-5-5"
    assert "system" not in body
    assert body["max_tokens"] == CompletionRequest(messages=()).max_tokens


async def test_anthropic_empty_request_is_refused_without_a_call(anthropic_sdk: Any) -> None:
    from asides.strategies._adapters import AnthropicModel

    api = FakeAPI((200, anthropic_message()))
    model = AnthropicModel(client=anthropic_client(anthropic_sdk, api))
    with pytest.raises(ValueError):
        await model.complete(CompletionRequest(messages=(msg("user", ""),)))
    assert api.calls == 0


async def test_anthropic_response_parsing(anthropic_sdk: Any) -> None:
    from asides.strategies._adapters import AnthropicModel

    content = [
        {
            "type": "thinking",
            "thinking": "The stretch is about the garden.",
            "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
        },
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
        {"type": "text", "text": "- We planted tomatoes and basil."},
        {"type": "text", "text": "- The frost came early."},
    ]
    api = FakeAPI((200, anthropic_message(content)))
    model = AnthropicModel(client=anthropic_client(anthropic_sdk, api))
    completion = await model.complete(REQUEST)
    assert completion == Completion(
        "end_turn",
        (
            ThinkingBlock("The stretch is about the garden.", "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"),
            RedactedThinkingBlock("EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"),
            TextBlock("- We planted tomatoes and basil."),
            TextBlock("- The frost came early."),
        ),
        Usage(input_tokens=2095, output_tokens=503),
    )
    assert completion_text(completion) == "- We planted tomatoes and basil.\n- The frost came early."


async def test_anthropic_tool_use_block_is_kept(anthropic_sdk: Any) -> None:
    from asides.strategies._adapters import AnthropicModel

    content = [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather", "input": {"location": "Paris"}},
    ]
    api = FakeAPI((200, anthropic_message(content, "tool_use")))
    completion = await AnthropicModel(client=anthropic_client(anthropic_sdk, api)).complete(REQUEST)
    assert completion.stop_reason == "tool_use"
    assert completion.content[1] == ToolUseBlock("toolu_01A09q90qw90lq917835lq9", "get_weather", {"location": "Paris"})


@pytest.mark.parametrize("stop_reason", ["end_turn", "max_tokens", "refusal", "stop_sequence", "pause_turn"])
async def test_anthropic_stop_reason_is_passed_through(anthropic_sdk: Any, stop_reason: str) -> None:
    from asides.strategies._adapters import AnthropicModel

    content = [] if stop_reason == "refusal" else [{"type": "text", "text": "partial"}]
    api = FakeAPI((200, anthropic_message(content, stop_reason)))
    completion = await AnthropicModel(client=anthropic_client(anthropic_sdk, api)).complete(REQUEST)
    assert completion.stop_reason == stop_reason
    assert completion.usage == Usage(2095, 503)


# -- Anthropic: retries --------------------------------------------------------------------------


async def test_anthropic_retries_429_honouring_retry_after(anthropic_sdk: Any, autojump_clock: trio.testing.MockClock) -> None:
    from asides.strategies._adapters import AnthropicModel

    api = FakeAPI((429, RATE_LIMITED, {"retry-after": "7"}), (200, anthropic_message()))
    model = AnthropicModel(client=anthropic_client(anthropic_sdk, api), first_backoff=1.0)
    start = trio.current_time()
    completion = await model.complete(REQUEST)
    assert trio.current_time() - start == pytest.approx(7.0)
    assert api.calls == 2 and api.bodies[0] == api.bodies[1]
    assert completion_text(completion) == "- We planted tomatoes and basil."


async def test_anthropic_retry_after_is_capped(anthropic_sdk: Any, autojump_clock: trio.testing.MockClock) -> None:
    from asides.strategies._adapters import AnthropicModel

    api = FakeAPI((429, RATE_LIMITED, {"retry-after": "3600"}), (200, anthropic_message()))
    model = AnthropicModel(client=anthropic_client(anthropic_sdk, api), max_backoff=30.0)
    start = trio.current_time()
    await model.complete(REQUEST)
    assert trio.current_time() - start == pytest.approx(30.0)


async def test_anthropic_retry_after_ms(anthropic_sdk: Any, autojump_clock: trio.testing.MockClock) -> None:
    from asides.strategies._adapters import AnthropicModel

    api = FakeAPI((429, RATE_LIMITED, {"retry-after-ms": "2500", "retry-after": "3"}), (200, anthropic_message()))
    model = AnthropicModel(client=anthropic_client(anthropic_sdk, api))
    start = trio.current_time()
    await model.complete(REQUEST)
    assert trio.current_time() - start == pytest.approx(2.5)


async def test_anthropic_retries_overloaded_with_doubling_backoff(anthropic_sdk: Any, autojump_clock: trio.testing.MockClock) -> None:
    from asides.strategies._adapters import AnthropicModel

    api = FakeAPI(*[(529, OVERLOADED)] * 4, (200, anthropic_message()))
    model = AnthropicModel(client=anthropic_client(anthropic_sdk, api), max_retries=4, first_backoff=1.0, max_backoff=3.0)
    start = trio.current_time()
    completion = await model.complete(REQUEST)
    assert trio.current_time() - start == pytest.approx(1 + 2 + 3 + 3)
    assert api.calls == 5 and completion.stop_reason == "end_turn"


async def test_anthropic_overloaded_body_under_another_status_is_retried(
    anthropic_sdk: Any, autojump_clock: trio.testing.MockClock
) -> None:
    from asides.strategies._adapters import AnthropicModel

    api = FakeAPI((503, OVERLOADED), (500, anthropic_error("api_error", "Internal server error")), (200, anthropic_message()))
    model = AnthropicModel(client=anthropic_client(anthropic_sdk, api))
    start = trio.current_time()
    await model.complete(REQUEST)
    assert api.calls == 3
    assert trio.current_time() - start == pytest.approx(1 + 2)


async def test_anthropic_gives_up_after_max_retries(anthropic_sdk: Any, autojump_clock: trio.testing.MockClock) -> None:
    from asides.strategies._adapters import AnthropicModel

    api = FakeAPI((529, OVERLOADED))
    model = AnthropicModel(client=anthropic_client(anthropic_sdk, api), max_retries=2, first_backoff=5.0)
    start = trio.current_time()
    with pytest.raises(anthropic_sdk.APIStatusError) as raised:
        await model.complete(REQUEST)
    assert raised.value.status_code == 529
    assert api.calls == 3
    assert trio.current_time() - start == pytest.approx(5 + 10)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, BAD_REQUEST),
        (401, anthropic_error("authentication_error", "invalid x-api-key")),
        (404, anthropic_error("not_found_error", "model: claude-nonexistent")),
    ],
)
async def test_anthropic_client_errors_are_not_retried(
    anthropic_sdk: Any, autojump_clock: trio.testing.MockClock, status: int, body: dict[str, Any]
) -> None:
    from asides.strategies._adapters import AnthropicModel

    api = FakeAPI((status, body), (200, anthropic_message()))
    model = AnthropicModel(client=anthropic_client(anthropic_sdk, api))
    start = trio.current_time()
    with pytest.raises(anthropic_sdk.APIStatusError) as raised:
        await model.complete(REQUEST)
    assert raised.value.status_code == status
    assert api.calls == 1 and trio.current_time() == start


async def test_anthropic_sdk_retries_are_turned_off_on_a_given_client(anthropic_sdk: Any, autojump_clock: trio.testing.MockClock) -> None:
    from asides.strategies._adapters import AnthropicModel

    api = FakeAPI((429, RATE_LIMITED))
    client = anthropic_client(anthropic_sdk, api, max_retries=5)
    model = AnthropicModel(client=client, max_retries=0)
    with pytest.raises(anthropic_sdk.RateLimitError):
        await model.complete(REQUEST)
    assert api.calls == 1
    assert client.max_retries == 5  # the caller's client itself is left as it was


# -- OpenAI: request shape and response parsing --------------------------------------------------


async def test_openai_request_shape(openai_sdk: Any) -> None:
    from asides.strategies._adapters import OpenAIModel

    api = FakeAPI((200, openai_completion()))
    model = OpenAIModel(model="gpt-5.4-mini", client=openai_client(openai_sdk, api))
    await model.complete(REQUEST)
    assert api.paths == ["/v1/chat/completions"]
    body = api.bodies[0]
    assert body["model"] == "gpt-5.4-mini"
    assert body["max_completion_tokens"] == 1234 and "max_tokens" not in body
    assert body["messages"] == [
        {"role": "system", "content": "You are writing your own memories."},
        {"role": "user", "content": "Earlier we talked about the garden."},
        {"role": "assistant", "content": "[Memory point] We planted tomatoes.\n\nAnd basil."},
        {
            "role": "user",
            "content": "Alice: the frost came early this year.\n\nSummarise the stretch above. Aim for about 200 tokens.",
        },
    ]
    assert api.headers[0]["authorization"] == "Bearer test-key"


async def test_openai_request_model_overrides_and_no_system(openai_sdk: Any) -> None:
    from asides.strategies._adapters import OpenAIModel

    api = FakeAPI((200, openai_completion()))
    model = OpenAIModel(client=openai_client(openai_sdk, api))
    await model.complete(CompletionRequest(messages=(msg("user", "hi"),), model="gpt-5.4-nano", max_tokens=50))
    body = api.bodies[0]
    assert body["model"] == "gpt-5.4-nano" and body["max_completion_tokens"] == 50
    assert body["messages"] == [{"role": "user", "content": "hi"}]


async def test_openai_response_parsing(openai_sdk: Any) -> None:
    from asides.strategies._adapters import OpenAIModel

    api = FakeAPI((200, openai_completion("- We planted tomatoes and basil.\n- The frost came early.")))
    completion = await OpenAIModel(client=openai_client(openai_sdk, api)).complete(REQUEST)
    assert completion == Completion(
        "end_turn",
        (TextBlock("- We planted tomatoes and basil.\n- The frost came early."),),
        Usage(input_tokens=1117, output_tokens=46),
    )


TOOL_CALLS = [{"id": "call_abc123", "type": "function", "function": {"name": "get_weather", "arguments": '{"location":"Paris"}'}}]


@pytest.mark.parametrize(
    ("finish_reason", "content", "extra", "expected"),
    [
        ("stop", "done", {}, "end_turn"),
        ("length", "cut off mid", {}, "max_tokens"),
        ("content_filter", None, {}, "refusal"),
        ("tool_calls", None, {"tool_calls": TOOL_CALLS}, "tool_use"),
        ("stop", None, {"refusal": "I'm sorry, I can't help with that."}, "refusal"),
    ],
)
async def test_openai_stop_reason_mapping(
    openai_sdk: Any, finish_reason: str, content: str | None, extra: dict[str, Any], expected: str
) -> None:
    from asides.strategies._adapters import OpenAIModel

    api = FakeAPI((200, openai_completion(content, finish_reason, **extra)))
    completion = await OpenAIModel(client=openai_client(openai_sdk, api)).complete(REQUEST)
    assert completion.stop_reason == expected
    assert completion.content == ((TextBlock(content),) if content else ())


async def test_openai_missing_usage_is_zero(openai_sdk: Any) -> None:
    from asides.strategies._adapters import OpenAIModel

    body = openai_completion()
    del body["usage"]
    api = FakeAPI((200, body))
    completion = await OpenAIModel(client=openai_client(openai_sdk, api)).complete(REQUEST)
    assert completion.usage == Usage(0, 0)


# -- OpenAI: retries -----------------------------------------------------------------------------


async def test_openai_retries_429_then_succeeds(openai_sdk: Any, autojump_clock: trio.testing.MockClock) -> None:
    from asides.strategies._adapters import OpenAIModel

    api = FakeAPI(
        (429, OPENAI_RATE_LIMITED, {"retry-after": "4"}),
        (429, OPENAI_RATE_LIMITED),
        (200, openai_completion()),
    )
    model = OpenAIModel(client=openai_client(openai_sdk, api), first_backoff=1.0)
    start = trio.current_time()
    completion = await model.complete(REQUEST)
    # the first wait follows retry-after (4 s); the second, with no header, is the second back-off step (2 s)
    assert trio.current_time() - start == pytest.approx(4 + 2)
    assert api.calls == 3 and completion.stop_reason == "end_turn"


async def test_openai_retries_server_errors_and_gives_up(openai_sdk: Any, autojump_clock: trio.testing.MockClock) -> None:
    from asides.strategies._adapters import OpenAIModel

    api = FakeAPI((503, openai_error("The server is overloaded or not ready yet.", "server_error", None)))
    model = OpenAIModel(client=openai_client(openai_sdk, api), max_retries=3, first_backoff=2.0, max_backoff=60.0)
    start = trio.current_time()
    with pytest.raises(openai_sdk.InternalServerError):
        await model.complete(REQUEST)
    assert api.calls == 4
    assert trio.current_time() - start == pytest.approx(2 + 4 + 8)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, openai_error("Invalid 'messages[1].content': string too long.", "invalid_request_error", "string_above_max_length")),
        (401, openai_error("Incorrect API key provided: test-key.", "invalid_request_error", "invalid_api_key")),
        (429, openai_error("You exceeded your current quota.", "insufficient_quota", "insufficient_quota")),
    ],
)
async def test_openai_errors_not_retried(
    openai_sdk: Any, autojump_clock: trio.testing.MockClock, status: int, body: dict[str, Any]
) -> None:
    from asides.strategies._adapters import OpenAIModel

    api = FakeAPI((status, body), (200, openai_completion()))
    model = OpenAIModel(client=openai_client(openai_sdk, api))
    start = trio.current_time()
    with pytest.raises(openai_sdk.APIStatusError) as raised:
        await model.complete(REQUEST)
    assert raised.value.status_code == status
    assert api.calls == 1 and trio.current_time() == start


# -- asyncio -------------------------------------------------------------------------------------


def _run_asyncio(make: Callable[[], Any]) -> Completion:
    async def main() -> Completion:
        return await make()

    return asyncio.run(main())


def test_anthropic_under_asyncio(anthropic_sdk: Any) -> None:
    from asides.strategies._adapters import AnthropicModel

    api = FakeAPI((529, OVERLOADED), (200, anthropic_message()))
    model = AnthropicModel(client=anthropic_client(anthropic_sdk, api), first_backoff=0.001)
    completion = _run_asyncio(lambda: model.complete(REQUEST))
    assert api.calls == 2 and completion_text(completion) == "- We planted tomatoes and basil."


def test_openai_under_asyncio(openai_sdk: Any) -> None:
    from asides.strategies._adapters import OpenAIModel

    api = FakeAPI((429, OPENAI_RATE_LIMITED), (200, openai_completion()))
    model = OpenAIModel(client=openai_client(openai_sdk, api), first_backoff=0.001)
    completion = _run_asyncio(lambda: model.complete(REQUEST))
    assert api.calls == 2 and completion.stop_reason == "end_turn"
