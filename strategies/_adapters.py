"""Model adapters over the provider SDKs: :class:`AnthropicModel` (Messages API) and
:class:`OpenAIModel` (Chat Completions).

Both implement the :class:`~strategies.models.Model` protocol, ``async complete(request) ->
Completion``. The SDKs are optional extras and are imported only when an adapter is built, so
``import strategies`` never needs them (``pip install 'asides[anthropic]'`` /
``'asides[openai]'``).

Request: ``request.messages`` are shaped by :func:`~strategies.provider_forms.to_anthropic` /
:func:`~strategies.provider_forms.to_openai` with the participant ``assistant`` as the assistant (so
consecutive same-role messages are merged and roles alternate); ``request.system`` is Anthropic's
``system`` or OpenAI's leading system message; ``request.max_tokens`` is ``max_tokens``
(OpenAI: ``max_completion_tokens``); ``request.model``, when set, overrides the adapter's model.

Response: Anthropic ``text``/``thinking``/``redacted_thinking``/``tool_use`` blocks become the
store's blocks and its ``stop_reason`` is passed through (``end_turn``, ``max_tokens``,
``refusal``, ``pause_turn``, ...; only ``end_turn`` makes a summary). OpenAI's message text
becomes one text block and ``finish_reason`` is mapped: ``stop``→``end_turn``,
``length``→``max_tokens``, ``content_filter``→``refusal``, ``tool_calls``/``function_call``→
``tool_use`` (others are passed through). Usage is input/output (prompt/completion) tokens.

Retries: only overload and rate limits are retried — HTTP 429, 529 or an ``overloaded_error``
body, and other 5xx — up to ``max_retries`` times, waiting ``first_backoff`` seconds doubling up
to ``max_backoff`` (a ``retry-after`` / ``retry-after-ms`` header, when present, is honoured
instead, capped at ``max_backoff``). An OpenAI 429 whose code is ``insufficient_quota`` is not
transient and is not retried. The waits use :func:`anyio.sleep`, so they run under Trio or
asyncio (and a Trio ``MockClock`` skips them in tests). Every other error (400, 401, connection
errors, ...) propagates at once, and after the last retry the last error propagates: a drain
then leaves its chunk pending and tries again later. The SDK's own retries are turned off
(``max_retries=0`` on the client, a copy of a client you pass), so these are the only ones.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

from ..store._blocks import ContentBlock, RedactedThinkingBlock, TextBlock, ThinkingBlock, ToolUseBlock
from ..store._errors import InvalidArgumentError
from ._models import Completion, CompletionRequest, Usage

__all__ = ["AnthropicModel", "OpenAIModel", "DEFAULT_ANTHROPIC_MODEL", "DEFAULT_OPENAI_MODEL"]

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-5-5"
DEFAULT_OPENAI_MODEL = "gpt-5.5"

ASSISTANT = "assistant"

T = TypeVar("T")


def _import_sdk(module: str, extra: str, adapter: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(
            f"{adapter} needs the {module!r} package, which is not installed; "
            f"install it with: pip install 'asides[{extra}]'"
        ) from error


def _retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000)
        except (TypeError, ValueError):
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        pass
    parsed = email.utils.parsedate_tz(value)
    if parsed is None:
        return None
    return max(0.0, float(email.utils.mktime_tz(parsed) - time.time()))


def _error_type(body: object) -> str | None:
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("type"), str):
            return str(error["type"])
        if isinstance(body.get("type"), str) and body.get("type") != "error":
            return str(body["type"])
    return None


class _RetryingModel:
    """Shared constructor checks, client handling and the retry loop."""

    _status_error: type[BaseException]

    def __init__(self, *, model: str, max_retries: int, first_backoff: float, max_backoff: float) -> None:
        if not isinstance(model, str) or not model:
            raise InvalidArgumentError("model", "must be a non-empty string naming the provider's model")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidArgumentError("max_retries", f"must be an int >= 0, not {max_retries!r}")
        if first_backoff < 0 or max_backoff < 0:
            raise InvalidArgumentError("first_backoff", "first_backoff and max_backoff must be >= 0")
        if max_backoff < first_backoff:
            raise InvalidArgumentError("max_backoff", f"must be >= first_backoff ({first_backoff}), got {max_backoff}")
        self.model = model
        self.max_retries = max_retries
        self.first_backoff = float(first_backoff)
        self.max_backoff = float(max_backoff)
        self._client: Any = None
        self._owns_client = False

    # -- retries ------------------------------------------------------------------------------

    def _retry_delay(self, error: BaseException, retry: int) -> float | None:
        """The wait before retry number ``retry`` (0-based) after ``error``, or ``None`` when
        the error is not one to retry."""
        if not isinstance(error, self._status_error):
            return None
        status = getattr(error, "status_code", None)
        body = getattr(error, "body", None)
        overloaded = status == 529 or _error_type(body) == "overloaded_error"
        if not (status == 429 or overloaded or (isinstance(status, int) and 500 <= status <= 599)):
            return None
        if not self._transient(error):
            return None
        response = getattr(error, "response", None)
        hinted = _retry_after(getattr(response, "headers", None))
        if hinted is not None:
            return min(hinted, self.max_backoff)
        return min(self.first_backoff * float(2**retry), self.max_backoff)

    def _transient(self, error: BaseException) -> bool:
        return True

    async def _with_retries(self, call: Callable[[], Awaitable[T]]) -> T:
        retry = 0
        while True:
            try:
                return await call()
            except Exception as error:
                if retry >= self.max_retries:
                    raise
                delay = self._retry_delay(error, retry)
                if delay is None:
                    raise
            await anyio.sleep(delay)
            retry += 1

    # -- the client ---------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the client this adapter built for itself (a client you passed stays open)."""
        client, self._client = self._client, None
        if client is not None and self._owns_client:
            await client.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, max_retries={self.max_retries})"


class AnthropicModel(_RetryingModel):
    """A :class:`~strategies.models.Model` over the Anthropic Messages API.

    ``client`` is an ``anthropic.AsyncAnthropic`` (its own retries are turned off on a copy);
    without one, a client is built on first use from ``api_key`` or the environment
    (``ANTHROPIC_API_KEY``) with ``max_retries=0``. Requests are non-streaming, so very large
    ``max_tokens`` values may be refused by the SDK.
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_ANTHROPIC_MODEL,
        client: Any = None,
        api_key: str | None = None,
        max_retries: int = 4,
        first_backoff: float = 1.0,
        max_backoff: float = 60.0,
    ) -> None:
        super().__init__(model=model, max_retries=max_retries, first_backoff=first_backoff, max_backoff=max_backoff)
        self._sdk = _import_sdk("anthropic", "anthropic", "AnthropicModel")
        self._status_error = self._sdk.APIStatusError
        self._api_key = api_key
        if client is not None:
            self._client = client.with_options(max_retries=0)

    def _get_client(self) -> Any:
        if self._client is None:
            self._client = self._sdk.AsyncAnthropic(api_key=self._api_key, max_retries=0)
            self._owns_client = True
        return self._client

    def request_params(self, request: CompletionRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``request``."""
        from ._provider_forms import to_anthropic

        messages = to_anthropic(request.messages, ASSISTANT)
        if not messages:
            raise ValueError("a completion request needs at least one message with content")
        params: dict[str, Any] = {
            "model": request.model or self.model,
            "max_tokens": request.max_tokens,
            "messages": messages,
        }
        if request.system:
            params["system"] = request.system
        return params

    async def complete(self, request: CompletionRequest) -> Completion:
        params = self.request_params(request)
        client = self._get_client()
        message = await self._with_retries(lambda: client.messages.create(**params))
        return self._completion(message)

    @staticmethod
    def _completion(message: Any) -> Completion:
        content: list[ContentBlock] = []
        for block in message.content or ():
            kind = getattr(block, "type", None)
            if kind == "text":
                content.append(TextBlock(block.text))
            elif kind == "thinking":
                content.append(ThinkingBlock(block.thinking, getattr(block, "signature", None) or None))
            elif kind == "redacted_thinking":
                content.append(RedactedThinkingBlock(block.data))
            elif kind == "tool_use" and block.id and block.name:
                content.append(ToolUseBlock(block.id, block.name, dict(block.input or {})))
            # other block kinds (server tools, citations, ...) are not kept
        usage = getattr(message, "usage", None)
        return Completion(
            message.stop_reason or "unknown",
            tuple(content),
            Usage(
                input_tokens=int(getattr(usage, "input_tokens", 0) or 0),
                output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
            ),
        )


_OPENAI_STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "content_filter": "refusal",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
}


class OpenAIModel(_RetryingModel):
    """A :class:`~strategies.models.Model` over OpenAI Chat Completions (also any compatible
    server through ``base_url``).

    ``client`` is an ``openai.AsyncOpenAI`` (its own retries are turned off on a copy); without
    one, a client is built on first use from ``api_key`` / ``base_url`` or the environment
    (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``) with ``max_retries=0``.
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_OPENAI_MODEL,
        client: Any = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 4,
        first_backoff: float = 1.0,
        max_backoff: float = 60.0,
    ) -> None:
        super().__init__(model=model, max_retries=max_retries, first_backoff=first_backoff, max_backoff=max_backoff)
        self._sdk = _import_sdk("openai", "openai", "OpenAIModel")
        self._status_error = self._sdk.APIStatusError
        self._api_key = api_key
        self._base_url = base_url
        if client is not None:
            self._client = client.with_options(max_retries=0)

    def _get_client(self) -> Any:
        if self._client is None:
            self._client = self._sdk.AsyncOpenAI(api_key=self._api_key, base_url=self._base_url, max_retries=0)
            self._owns_client = True
        return self._client

    def _transient(self, error: BaseException) -> bool:
        # An exhausted quota is reported as a 429 but does not pass with time.
        return getattr(error, "code", None) != "insufficient_quota"

    def request_params(self, request: CompletionRequest) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for ``request``."""
        from ._provider_forms import to_openai

        system = (TextBlock(request.system),) if request.system else ()
        messages = to_openai(request.messages, ASSISTANT, system)
        if not any(m["role"] != "system" for m in messages):
            raise ValueError("a completion request needs at least one message with content")
        return {
            "model": request.model or self.model,
            "max_completion_tokens": request.max_tokens,
            "messages": messages,
        }

    async def complete(self, request: CompletionRequest) -> Completion:
        params = self.request_params(request)
        client = self._get_client()
        response = await self._with_retries(lambda: client.chat.completions.create(**params))
        return self._completion(response)

    @staticmethod
    def _completion(response: Any) -> Completion:
        choices = getattr(response, "choices", None) or ()
        if not choices:
            raise ValueError("the chat completion has no choices")
        choice = choices[0]
        message = choice.message
        text = message.content if message is not None else None
        finish = choice.finish_reason
        stop_reason = _OPENAI_STOP_REASONS.get(finish, finish) if finish else "unknown"
        if message is not None and getattr(message, "refusal", None) and not text:
            stop_reason = "refusal"
        usage = getattr(response, "usage", None)
        return Completion(
            stop_reason,
            (TextBlock(text),) if text else (),
            Usage(
                input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            ),
        )
