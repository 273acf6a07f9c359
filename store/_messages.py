"""The stored message, and the checks a message write passes before anything is queued."""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import attrs

from ._blocks import ContentBlock
from ._errors import ArgumentTypeError, InvalidArgumentError, MalformedContentError
from ._names import check_metadata, check_participant

__all__ = ["Message", "freeze_metadata", "check_timestamp", "check_message_item", "check_message_items"]


_NO_METADATA: Mapping[str, Any] = MappingProxyType({})


def freeze_metadata(value: Mapping[str, Any] | None, *, path: str = "metadata") -> Mapping[str, Any]:
    """A read-only private copy of JSON metadata.

    Refuses, naming the place, anything that is not a JSON object; a key that is not a name
    (:class:`InvalidNameError` at ``metadata.<key>``, at any depth); a string that is not valid
    Unicode; and nesting deeper than the documented limit.
    """
    if value is None or value is _NO_METADATA or (isinstance(value, Mapping) and not value):
        return _NO_METADATA
    if isinstance(value, MappingProxyType):
        value = dict(value)
    check_metadata(value, path)
    try:
        copied = json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise MalformedContentError(path, f"metadata must be JSON: {exc}") from None
    return MappingProxyType(copied)


def check_timestamp(value: object, path: str = "timestamp") -> float | None:
    """``None`` (now), or a timestamp in seconds since the epoch: a finite real number."""
    if value is None:
        return None
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise ArgumentTypeError(path, f"a timestamp is a number of seconds since the epoch, not {type(value).__name__}")
    try:
        stamp = float(value)
    except OverflowError:
        stamp = math.inf
    if not math.isfinite(stamp):
        raise InvalidArgumentError(path, f"a timestamp must be a finite number of seconds since the epoch, got {value!r}")
    return stamp


def check_message_items(items: object, timestamp: object = None, *, first_index: int = 0) -> list[Mapping[str, Any]]:
    """Refuse, before anything changes, a batch of messages to append that could not be stored:
    each item is ``(participant, content, metadata)`` or ``(participant, content, metadata,
    timestamp)``; the participant is a name, the metadata a JSON object of names and valid
    Unicode, the timestamps finite numbers. Content is the caller's to check (the block types
    refuse what cannot be stored). Errors name the field: ``participant``, ``metadata.<key>``,
    ``timestamp``; an item of the wrong shape is named ``items[N]``, counting from
    ``first_index``. Returns each item's metadata as its read-only private copy
    (:func:`freeze_metadata`), in order, for the caller to store as it is."""
    if timestamp is not None:
        check_timestamp(timestamp)
    if type(items) is not list and type(items) is not tuple and (isinstance(items, (str, bytes)) or not isinstance(items, Sequence)):
        raise ArgumentTypeError("items", f"must be a list of (participant, content, metadata) tuples, not {type(items).__name__}")
    frozen: list[Mapping[str, Any]] = []
    for index, item in enumerate(items):
        if (type(item) is not tuple and not isinstance(item, (tuple, list))) or len(item) not in (3, 4):
            raise InvalidArgumentError(f"items[{first_index + index}]", "an item is (participant, content, metadata[, timestamp])")
        frozen.append(check_message_item(item[0], item[2]))
        if len(item) == 4:
            check_timestamp(item[3])
    return frozen


def check_message_item(participant: object, metadata: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The checks of one message to append (see :func:`check_message_items`): the participant a
    name, the metadata a JSON object; returns the metadata's read-only private copy."""
    check_participant(participant)
    return freeze_metadata(metadata)


#: Where metadata holds a copy of the message's content: the entry, and the fields in it (the OpenAI
#: Agents session's saved item, ``openai_agents.item``; the original parts LangChain and Pydantic AI
#: keep of an agent's own private message, ``langchain.parts`` and ``pydantic_ai.parts``; the
#: Google ADK events' contents and parts, ``adk.contents`` and ``adk.parts``). The copy stands for
#: the content as first written only: an edit drops those fields, in memory and on every reopen, so
#: no read serves a copy of content that was edited away. The entry's other fields (who added the
#: item, the framework's ids, an ADK event's other fields) stay.
CONTENT_COPIES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"openai_agents": ("item",), "langchain": ("parts",), "pydantic_ai": ("parts",), "adk": ("contents", "parts")}
)


def edited_version(message: Message, content: tuple[ContentBlock, ...]) -> Message:
    """``message`` with its content replaced by an edit: id, sequence and timestamp kept, and the
    metadata fields that copied the old content (:data:`CONTENT_COPIES`) left out."""
    metadata = message.metadata
    stale = [
        key
        for key, fields in CONTENT_COPIES.items()
        if isinstance(metadata.get(key), Mapping) and any(field in metadata[key] for field in fields)
    ]
    if stale:
        kept = dict(metadata)
        for key in stale:
            kept[key] = MappingProxyType({k: v for k, v in metadata[key].items() if k not in CONTENT_COPIES[key]})
        metadata = MappingProxyType(kept)
    return attrs.evolve(message, content=content, metadata=metadata)


@attrs.frozen(slots=True)
class Message:
    """One message of a branch's log, as stored.

    ``id`` is unique in the store and never reused; ``sequence`` is the value of the branch
    sequence its append took (an edit keeps both). ``content`` is a tuple of blocks, audience
    fields included; ``metadata`` is a read-only mapping; ``timestamp`` is seconds since the epoch.
    """

    id: str
    sequence: int
    participant: str
    content: tuple[ContentBlock, ...]
    metadata: Mapping[str, Any] = attrs.field(factory=lambda: MappingProxyType({}), hash=False)
    timestamp: float = 0.0
