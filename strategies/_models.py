"""Models: what a compressing strategy asks for summaries.

A model is anything with ``async complete(request) -> Completion``. Only a completion with
``stop_reason == "end_turn"`` and non-empty text becomes a summary: :func:`accepted_text` is that
rule, the one place it lives (the model gate and every compressing strategy apply it).
"""

from __future__ import annotations

import re
from collections import deque
from typing import Protocol, runtime_checkable

import attrs

from ..store._blocks import ContentBlock
from ..store._message_ids import MessageIds, as_message_ids
from ._compiled_message import CompiledMessage

__all__ = [
    "CompletionRequest",
    "Completion",
    "Usage",
    "Model",
    "completion_text",
    "accepted_text",
    "FINISHED",
    "ExtractiveModel",
]


def _messages(value: object) -> tuple[CompiledMessage, ...]:
    return tuple(value)  # type: ignore[arg-type]


@attrs.frozen(slots=True)
class CompletionRequest:
    """A request: ``messages`` (participants ``user``/``assistant``), an optional ``system``
    text, the answer's ``max_tokens``, and an optional model name. ``source_ids`` (not sent,
    not compared) names the view messages the request shows, directly or through a summary:
    the runtime records them as disclosed to the model provider (``Runtime.disclosures``); a
    :class:`~asides.MessageIds`, made from any iterable of ids, so a request that shows memories
    of a long history names what they cover by runs, not id by id."""

    messages: tuple[CompiledMessage, ...] = attrs.field(converter=_messages)
    system: str | None = None
    max_tokens: int = 4000
    model: str | None = None
    source_ids: MessageIds = attrs.field(factory=MessageIds, converter=as_message_ids, eq=False, repr=False)


@attrs.frozen(slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


def _content(value: object) -> str | tuple[ContentBlock, ...]:
    return value if isinstance(value, str) else tuple(value)  # type: ignore[arg-type]


@attrs.frozen(slots=True)
class Completion:
    """A model's answer. ``stop_reason`` is ``"end_turn"`` for a finished answer: the one stop
    reason whose answer may be stored (an adapter maps its provider's word to it, for example
    OpenAI's ``"stop"``); any other is a rejection (:func:`accepted_text`)."""

    stop_reason: str
    content: str | tuple[ContentBlock, ...] = attrs.field(converter=_content)
    usage: Usage = attrs.field(factory=Usage)


@runtime_checkable
class Model(Protocol):
    async def complete(self, request: CompletionRequest) -> Completion: ...


def completion_text(completion: Completion) -> str:
    """The answer's text: its text blocks joined by newlines (a str content as is), stripped,
    with a leading ``<thinking>...</thinking>`` removed (with no closing tag, nothing is left)."""
    from ..store._blocks import TextBlock

    if isinstance(completion.content, str):
        text = completion.content
    else:
        text = "\n".join(b.text for b in completion.content if isinstance(b, TextBlock))
    text = text.strip()
    if text.startswith("<thinking>"):
        end = text.find("</thinking>")
        text = "" if end < 0 else text[end + len("</thinking>") :].strip()
    return text


#: The one stop reason of a finished answer.
FINISHED = "end_turn"


def accepted_text(completion: object, *, max_tokens: int | None = None, limit_factor: float | None = None) -> str:
    """The text an answer gives a summary (:func:`completion_text`), or ``AnswerRejectedError``
    naming why it may not be stored. The one rule for every answer, checked in this order:

    - not a :class:`Completion` (``the model returned str, not a Completion``);
    - a stop reason other than ``end_turn`` (``stop_reason 'stop' is not 'end_turn'``);
    - a block whose ``text`` is not a ``str``; text holding a lone surrogate;
    - with ``max_tokens`` and ``limit_factor``: more than ``limit_factor * max_tokens``
      estimated tokens (``the answer is about N tokens, over the limit of L ...``);
    - a ``<thinking>`` opening that is never closed (nothing is left after it);
    - no text left (``the answer is empty``: no text, blank, or only thinking).
    """
    from ..store._blocks import TextBlock
    from ._errors import AnswerRejectedError
    from ._tokens import estimate_text

    def reject(reason: str) -> AnswerRejectedError:
        return AnswerRejectedError(reason, reason=reason)

    if not isinstance(completion, Completion):
        raise reject(f"the model returned {type(completion).__name__}, not a Completion")
    if completion.stop_reason != FINISHED:
        raise reject(f"stop_reason {completion.stop_reason!r} is not {FINISHED!r}")
    content = completion.content
    texts = [content] if isinstance(content, str) else [getattr(b, "text", "") for b in content]
    if not all(isinstance(t, str) for t in texts):
        raise reject("the answer's text is not a str")
    whole = "\n".join(texts)
    try:
        whole.encode("utf-8")
    except UnicodeEncodeError:
        raise reject("the answer is not valid Unicode (it holds a lone surrogate)") from None
    if max_tokens is not None and limit_factor is not None:
        limit = int(limit_factor * max(1, max_tokens))
        size = estimate_text(whole)
        if size > limit:
            raise reject(f"the answer is about {size} tokens, over the limit of {limit} ({limit_factor:g} times the request's max_tokens)")
    text = completion_text(completion)
    if not text:
        shown = "\n".join(b.text for b in content if isinstance(b, TextBlock)) if not isinstance(content, str) else content
        if shown.strip().startswith("<thinking>") and "</thinking>" not in shown:
            raise reject("the answer's <thinking> is unclosed, so no text is left")
        raise reject("the answer is empty")
    return text


# -- the offline model ---------------------------------------------------------------------------

_MARKER = "[Memory point]"
_AIM = re.compile(r"about (\d+) tokens")
_BULLET = re.compile(r"^\s*(?:[-*•]\s+)+")  # a memory's own bullets, so a merge does not bullet them twice


def _text_of(message: CompiledMessage) -> str:
    from ..store._blocks import TextBlock

    return "\n".join(b.text for b in message.content if isinstance(b, TextBlock))


def _first_sentence(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    for stop in (". ", "! ", "? ", "\n"):
        cut = text.find(stop)
        if 0 < cut < limit:
            return text[: cut + 1].strip()
    return text[:limit].rstrip() + ("…" if len(text) > limit else "")


class ExtractiveModel:
    """An offline, deterministic model: it answers a compression request with lines taken from
    the request's own text, so the demo and tests run with no network.

    It finds the stretch to summarise between the last ``[Memory point]`` marker and the final
    (instruction) message; with no marker it reads every message but the system text. Each
    message of that stretch contributes its first sentence, as ``- <speaker>: <sentence>`` (a
    line that already starts with a bullet, such as an earlier memory's, keeps one bullet),
    until the length the instruction asks for (``about N tokens``, three characters a token) is
    reached. It never invents text, so nothing reaches a summary that was not in the
    request.
    """

    def __init__(self, *, name: str = "extractive", keep_requests: int = 1000) -> None:
        self.name = name
        #: The newest ``keep_requests`` requests it answered (bounded, for a long-running host).
        self.requests: deque[CompletionRequest] = deque(maxlen=keep_requests)

    async def complete(self, request: CompletionRequest) -> Completion:
        from ..store._blocks import TextBlock
        from ._tokens import estimate_text

        self.requests.append(request)
        messages = list(request.messages)
        instruction = _text_of(messages[-1]) if messages else ""
        start = 0
        for index, message in enumerate(messages[:-1]):
            if _text_of(message).startswith(_MARKER):
                start = index + 1
        stretch = messages[start:-1] if len(messages) > 1 else messages
        aims = _AIM.findall(instruction)
        target_tokens = int(aims[-1]) if aims else 600
        allowance = max(60, 3 * target_tokens)
        lines: list[str] = []
        used = 0
        for message in stretch:
            text = _text_of(message)
            if not text.strip():
                continue
            if text.startswith("[Recall "):
                continue
            for paragraph in [p for p in text.split("\n\n") if p.strip()][: 1 if message.participant == "assistant" else 3]:
                line = f"- {_first_sentence(_BULLET.sub('', paragraph))}"
                if used + len(line) > allowance and lines:
                    break
                lines.append(line)
                used += len(line) + 1
            if used >= allowance:
                break
        answer = "\n".join(lines) if lines else "Nothing of note happened in this stretch."
        usage = Usage(
            input_tokens=sum(estimate_text(_text_of(m)) for m in messages) + estimate_text(request.system or ""),
            output_tokens=estimate_text(answer),
        )
        return Completion("end_turn", (TextBlock(answer),), usage)

