"""Provider-shaped messages in: the inverse of the request forms.

:func:`from_anthropic` reads Anthropic Messages API messages and :func:`from_openai` OpenAI Chat
Completions messages (request or response shapes, as plain dicts or as the SDKs' own objects),
and return :class:`ProviderMessage` s ready for ``add_message``::

    for message in from_anthropic([{"role": "assistant", "content": reply.content}], assistant="ann"):
        await manager.add_message(message.participant, message.content)

Roles: an ``assistant`` message is by the ``assistant`` participant given, a ``user`` message by
``user`` (an OpenAI message's ``name``, when present, names its participant instead), an OpenAI
``system`` or ``developer`` message by a participant of that name. Content:

* text (an OpenAI ``refusal`` too) -> a text block;
* an image -> an image block: Anthropic ``source`` (``base64`` with its media type, or ``url``),
  OpenAI ``image_url`` (a ``data:`` URL with its media type, or a URL). A URL carries no media type
  in either form; it is guessed from the URL's ending, ``image/*`` when nothing can be told;
* Anthropic ``tool_use`` / ``tool_result`` -> tool call / tool result blocks; OpenAI ``tool_calls``
  -> tool call blocks after the message's text (``arguments`` must be a JSON object), and each
  ``role: tool`` message -> a tool result (``[tool error] `` before its text marks an error, as
  :func:`~asides.strategies._provider_forms.to_openai` writes one). The results of a run of tool
  messages go, in order, at the front of the user message right after them, or make a user
  message of their own;
* thinking with its signature, and redacted thinking -> the same blocks.

Anything else (documents, audio, files, server tools, the legacy ``function`` role) is refused
with :class:`MalformedContentError` naming the place, as is a message left with no block, and an
``audience`` key on a message, block or part (no provider form has one: dropped, the text would
reach every reader); nothing is returned then. The functions are pure: no I/O, inputs never mutated, nothing shared with them.

For a compile whose messages the request forms carry as they are, ``from_X(to_X(messages))``
gives the same participants and content back; for any compile, ``to_X(from_X(to_X(messages)))``
equals ``to_X(messages)``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs

from ..store._arguments import check_sequence
from ..store._blocks import (
    ContentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ..store._blocks.codec import anthropic_image_fields, image_from_url
from ..store._errors import MalformedContentError
from ..store._names import check_participant

__all__ = ["ProviderMessage", "from_anthropic", "from_openai"]

TOOL_ERROR_PREFIX = "[tool error] "


@attrs.frozen(slots=True)
class ProviderMessage:
    """One asides message made from provider-shaped input: ``(participant, content)``."""

    participant: str
    content: tuple[ContentBlock, ...]

    def __iter__(self) -> Iterator[Any]:
        """Unpacks as ``participant, content``."""
        return iter((self.participant, self.content))


def _plain(value: Any) -> Any:
    """A private JSON-like copy of ``value``; an SDK object (pydantic) is dumped first."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, Mapping):
        value = dump(mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return copy.deepcopy(value)


def _str(obj: Mapping[str, Any], key: str, path: str, *, allow_empty: bool = True) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise MalformedContentError(f"{path}.{key}", f"must be a string, not {type(value).__name__}")
    if not allow_empty and not value:
        raise MalformedContentError(f"{path}.{key}", "must not be empty")
    return value


#: What a provider's messages never carry: an audience. One given on a message, block or part
#: is refused, not dropped (dropped, the text would reach every reader).
_NO_AUDIENCE_IN = ("a message", "a content block", "a content part", "a block")


def _object(value: Any, path: str, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedContentError(path, f"{what} must be a JSON object, not {type(value).__name__}")
    if "audience" in value and what in _NO_AUDIENCE_IN:
        raise MalformedContentError(
            f"{path}.audience",
            "provider messages carry no audience, and it would be dropped here; add a private block with "
            "text(..., audience=[...]) or block_from_json instead",
        )
    return value


def _refuse(path: str, kind: object, known: str) -> MalformedContentError:
    return MalformedContentError(path, f"a {kind!r} block has no asides form; {known} do")


def _participant(message: Mapping[str, Any], default: str, path: str) -> str:
    name = message.get("name")
    if name is None:
        return default
    if not isinstance(name, str) or not name:
        raise MalformedContentError(f"{path}.name", "must be a non-empty string naming the participant")
    return name


def _one(participant: str, blocks: list[ContentBlock], path: str) -> ProviderMessage:
    if not blocks:
        raise MalformedContentError(f"{path}.content", "the message holds no block asides could add")
    return ProviderMessage(participant, tuple(blocks))


# -- Anthropic --------------------------------------------------------------------------------

_ANTHROPIC_KNOWN = "text, image, tool_use, tool_result, thinking and redacted_thinking blocks"


def _anthropic_image(block: dict[str, Any], path: str) -> ImageBlock:
    fields = anthropic_image_fields(block, path)
    return ImageBlock(fields["media_type"], fields.get("data"), fields.get("url"))


def _anthropic_nested(items: Any, path: str) -> str | tuple[ContentBlock, ...]:
    if isinstance(items, str):
        return items
    if not isinstance(items, list):
        raise MalformedContentError(path, "a tool result's content must be a string or a list of blocks")
    out: list[ContentBlock] = []
    for index, raw in enumerate(items):
        ipath = f"{path}[{index}]"
        inner = _object(raw, ipath, "a block")
        kind = inner.get("type")
        if kind == "text":
            out.append(TextBlock(_str(inner, "text", ipath)))
        elif kind == "image":
            out.append(_anthropic_image(inner, ipath))
        else:
            raise _refuse(ipath, kind, "text and image blocks")
    return tuple(out)


def _anthropic_block(raw: Any, path: str) -> ContentBlock:
    block = _object(raw, path, "a content block")
    kind = block.get("type")
    if kind == "text":
        return TextBlock(_str(block, "text", path))
    if kind == "image":
        return _anthropic_image(block, path)
    if kind == "tool_use":
        tool_input = _object(block.get("input", {}), f"{path}.input", "a tool call's input")
        return ToolUseBlock(_str(block, "id", path, allow_empty=False), _str(block, "name", path, allow_empty=False), tool_input)
    if kind == "tool_result":
        is_error = block.get("is_error", False)
        if not isinstance(is_error, bool):
            raise MalformedContentError(f"{path}.is_error", "must be true or false")
        content = _anthropic_nested(block.get("content", ""), f"{path}.content")
        return ToolResultBlock(_str(block, "tool_use_id", path, allow_empty=False), content, is_error)
    if kind == "thinking":
        signature = block.get("signature")
        if signature is not None and not isinstance(signature, str):
            raise MalformedContentError(f"{path}.signature", "must be a string")
        return ThinkingBlock(_str(block, "thinking", path), signature)
    if kind == "redacted_thinking":
        return RedactedThinkingBlock(_str(block, "data", path))
    raise _refuse(path, kind, _ANTHROPIC_KNOWN)


def _check_arguments(messages: object, assistant: object, user: object) -> None:
    """``messages`` a list (``ArgumentTypeError``), ``assistant`` and ``user`` participants'
    names (``InvalidNameError``), before anything is read."""
    check_sequence(messages, "messages", "a list of messages")
    check_participant(assistant, "assistant")
    check_participant(user, "user")


def from_anthropic(messages: Sequence[Any], *, assistant: str = "assistant", user: str = "user") -> tuple[ProviderMessage, ...]:
    """Anthropic Messages API messages as asides messages, one for each (see the module docstring).

    Refuses, naming the place, a role other than ``user`` and ``assistant``, a block type with no
    asides form, and a message with no block."""
    _check_arguments(messages, assistant, user)
    out: list[ProviderMessage] = []
    for index, raw in enumerate(_plain(list(messages))):
        path = f"messages[{index}]"
        message = _object(raw, path, "a message")
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise MalformedContentError(f"{path}.role", f"an Anthropic message's role is 'user' or 'assistant', not {role!r}")
        content = message.get("content")
        if isinstance(content, str):
            blocks: list[ContentBlock] = [TextBlock(content)]
        elif isinstance(content, list):
            blocks = [_anthropic_block(b, f"{path}.content[{n}]") for n, b in enumerate(content)]
        else:
            raise MalformedContentError(f"{path}.content", "must be a string or a list of blocks")
        out.append(_one(assistant if role == "assistant" else user, blocks, path))
    return tuple(out)


# -- OpenAI -----------------------------------------------------------------------------------


def _openai_parts(content: Any, path: str, *, images: bool) -> list[ContentBlock]:
    if content is None:
        return []
    if isinstance(content, str):
        return [TextBlock(content)]
    if not isinstance(content, list):
        raise MalformedContentError(path, "must be a string or a list of content parts")
    out: list[ContentBlock] = []
    for index, raw in enumerate(content):
        ppath = f"{path}[{index}]"
        part = _object(raw, ppath, "a content part")
        kind = part.get("type")
        if kind == "text":
            out.append(TextBlock(_str(part, "text", ppath)))
        elif kind == "refusal":
            out.append(TextBlock(_str(part, "refusal", ppath)))
        elif kind == "image_url" and images:
            image_url = _object(part.get("image_url"), f"{ppath}.image_url", "image_url")
            out.append(image_from_url(_str(image_url, "url", f"{ppath}.image_url", allow_empty=False)))
        else:
            known = "text and image_url parts" if images else "text and refusal parts"
            raise MalformedContentError(ppath, f"a {kind!r} part has no asides form here; {known} do")
    return out


def _tool_calls(calls: Any, path: str) -> list[ContentBlock]:
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise MalformedContentError(path, "must be a list of tool calls")
    out: list[ContentBlock] = []
    for index, raw in enumerate(calls):
        cpath = f"{path}[{index}]"
        call = _object(raw, cpath, "a tool call")
        if call.get("type", "function") != "function":
            raise MalformedContentError(f"{cpath}.type", f"a {call.get('type')!r} tool call has no asides form; function calls do")
        function = _object(call.get("function"), f"{cpath}.function", "a tool call's function")
        arguments = _str(function, "arguments", f"{cpath}.function")
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except ValueError as exc:
            raise MalformedContentError(f"{cpath}.function.arguments", f"must be JSON: {exc}") from None
        tool_input = _object(parsed, f"{cpath}.function.arguments", "a tool call's arguments")
        name = _str(function, "name", f"{cpath}.function", allow_empty=False)
        out.append(ToolUseBlock(_str(call, "id", cpath, allow_empty=False), name, tool_input))
    return out


def _tool_result(message: dict[str, Any], path: str) -> ToolResultBlock:
    parts = _openai_parts(message.get("content", ""), f"{path}.content", images=False)
    body = "".join(b.text for b in parts if isinstance(b, TextBlock))
    is_error = body.startswith(TOOL_ERROR_PREFIX)
    if is_error:
        body = body[len(TOOL_ERROR_PREFIX) :]
    return ToolResultBlock(_str(message, "tool_call_id", path, allow_empty=False), body, is_error)


def from_openai(messages: Sequence[Any], *, assistant: str = "assistant", user: str = "user") -> tuple[ProviderMessage, ...]:
    """OpenAI Chat Completions messages as asides messages (see the module docstring).

    One asides message per OpenAI message, except ``tool`` messages: a run of them becomes the
    front of the user message right after it (or a user message of its own). Refuses, naming the
    place, the ``function`` role or any other unknown one, a part or tool call with no asides
    form, and a message with no block."""
    _check_arguments(messages, assistant, user)
    out: list[ProviderMessage] = []
    results: list[ContentBlock] = []
    for index, raw in enumerate(_plain(list(messages))):
        path = f"messages[{index}]"
        message = _object(raw, path, "a message")
        role = message.get("role")
        if role == "tool":
            results.append(_tool_result(message, path))
            continue
        if role == "user":
            blocks = results + _openai_parts(message.get("content"), f"{path}.content", images=True)
            results = []
            out.append(_one(_participant(message, user, path), blocks, path))
            continue
        if results:
            out.append(ProviderMessage(user, tuple(results)))
            results = []
        if role == "assistant":
            blocks = _openai_parts(message.get("content"), f"{path}.content", images=False)
            refusal = message.get("refusal")
            if isinstance(refusal, str) and refusal:
                blocks.append(TextBlock(refusal))
            blocks.extend(_tool_calls(message.get("tool_calls"), f"{path}.tool_calls"))
            out.append(_one(_participant(message, assistant, path), blocks, path))
        elif role in ("system", "developer"):
            blocks = _openai_parts(message.get("content"), f"{path}.content", images=False)
            out.append(_one(role, blocks, path))
        else:
            raise MalformedContentError(
                f"{path}.role", f"an OpenAI message's role is 'system', 'developer', 'user', 'assistant' or 'tool', not {role!r}"
            )
    if results:
        out.append(ProviderMessage(user, tuple(results)))
    return tuple(out)
