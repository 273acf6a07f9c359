"""Models: what a compressing strategy asks for summaries.

A model is anything with ``async complete(request) -> Completion``. Only a completion with
``stop_reason == "end_turn"`` and non-empty text becomes a summary.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs

from store.blocks import ContentBlock

from .base import CompiledMessage

__all__ = ["CompletionRequest", "Completion", "Usage", "Model", "completion_text"]


def _messages(value: object) -> tuple[CompiledMessage, ...]:
    return tuple(value)  # type: ignore[arg-type]


@attrs.frozen(slots=True)
class CompletionRequest:
    """A request: ``messages`` (participants ``user``/``assistant``), an optional ``system``
    text, the answer's ``max_tokens``, and an optional model name."""

    messages: tuple[CompiledMessage, ...] = attrs.field(converter=_messages)
    system: str | None = None
    max_tokens: int = 4000
    model: str | None = None


@attrs.frozen(slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


def _content(value: object) -> str | tuple[ContentBlock, ...]:
    return value if isinstance(value, str) else tuple(value)  # type: ignore[arg-type]


@attrs.frozen(slots=True)
class Completion:
    """A model's answer. ``stop_reason`` is ``"end_turn"`` for a finished answer."""

    stop_reason: str
    content: str | tuple[ContentBlock, ...] = attrs.field(converter=_content)
    usage: Usage = attrs.field(factory=Usage)


@runtime_checkable
class Model(Protocol):
    async def complete(self, request: CompletionRequest) -> Completion: ...


def completion_text(completion: Completion) -> str:
    """The answer's text: its text blocks joined by newlines (a str content as is), stripped,
    with a leading ``<thinking>...</thinking>`` removed (STRATEGIES 4.8)."""
    from store.blocks import TextBlock

    if isinstance(completion.content, str):
        text = completion.content
    else:
        text = "\n".join(b.text for b in completion.content if isinstance(b, TextBlock))
    text = text.strip()
    if text.startswith("<thinking>"):
        end = text.find("</thinking>")
        text = "" if end < 0 else text[end + len("</thinking>") :].strip()
    return text
