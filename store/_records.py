"""The store's records as text and back: encoding what a write stores, with every check made
before anything changes, and decoding what was stored, fail-closed (pure logic, no I/O)."""

from __future__ import annotations

import json
import json.encoder
import logging
import re
import time
import typing
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from ._blocks import ContentBlock, TextBlock, UnreadableBlock, content_to_json, decode_stored_content
from ._errors import ArgumentTypeError, MalformedContentError
from ._messages import Message, freeze_metadata
from ._seers import Seers, named_readers, read_seers, seers_of, seers_value
from ._stored_json import DuplicatedKeys, holds_duplicate, read_stored_json

__all__ = [
    "EncodedMessage",
    "audience_groups",
    "audience_summary",
    "StoredEdit",
    "blocks_to_store",
    "body_may_hold_audience",
    "decode_edit",
    "decode_message",
    "encodable",
    "encode_message",
    "json_text",
    "report_problems",
    "unsafe_content",
]

log = logging.getLogger("asides.store")

_STORABLE_BLOCKS: Final = (*typing.get_args(ContentBlock), UnreadableBlock)


#: The one encoder of stored JSON (``json.dumps`` with these options makes an encoder per call).
_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
#: The JSON string form ``_ENCODER`` gives a ``str`` (``ensure_ascii=False``), on its own.
_JSON_STRING: Final = json.encoder.encode_basestring


def encodable(body: str, path: str) -> str:
    """Refuse text SQLite could not store (a lone surrogate), before anything changes."""
    if body.isascii():
        return body
    try:
        body.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise MalformedContentError(path, f"text must be valid Unicode (found {exc.object[exc.start : exc.end]!r})") from None
    return body


def json_text(value: Any, path: str) -> str:
    """The stored JSON text of ``value``: refused, naming ``path``, if it is not JSON (NaN
    included), nests too deep to encode, or holds text SQLite could not store."""
    try:
        body = _ENCODER.encode(value)
    except (TypeError, ValueError) as exc:
        raise MalformedContentError(path, f"must be JSON: {exc}") from None
    except RecursionError:
        raise MalformedContentError(path, "nests too deep to be stored") from None
    return encodable(body, path)


def blocks_to_store(content: object) -> tuple[ContentBlock, ...]:
    """A message's content as the model keeps it: a tuple of blocks (a private copy of the
    caller's sequence). Refuses anything else, naming ``content[i]``."""
    if type(content) is not tuple and (isinstance(content, (str, bytes)) or not isinstance(content, Sequence)):
        raise ArgumentTypeError("content", f"must be a sequence of content blocks, not {type(content).__name__}")
    blocks = content if type(content) is tuple else tuple(content)  # a tuple is already a private copy
    for index, block in enumerate(blocks):
        if not isinstance(block, _STORABLE_BLOCKS):
            raise ArgumentTypeError(
                f"content[{index}]", f"must be a content block, not {type(block).__name__} (coerce_content turns wire forms into blocks)"
            )
    return blocks


#: A message record ready to apply: participant, blocks, metadata, timestamp and body.
EncodedMessage = tuple[str, tuple[ContentBlock, ...], Mapping[str, Any], float, str]


def encode_message(
    participant: str,
    content: Sequence[ContentBlock],
    metadata: Mapping[str, Any] | None,
    timestamp: float | None,
    *,
    metadata_frozen: bool = False,
) -> EncodedMessage:
    """A message record ready to apply: its blocks, metadata, timestamp and body (refused here,
    before anything changes, if any of them cannot be stored). ``metadata_frozen``: ``metadata``
    is already the private copy ``check_message_items`` returned for it, kept as it is."""
    text = _plain_text_json(content) if type(content) is tuple else None  # a tuple of text blocks is stored as it is
    blocks: tuple[ContentBlock, ...] = content if text is not None else blocks_to_store(content)  # type: ignore[assignment]
    frozen = metadata if metadata_frozen and metadata is not None else freeze_metadata(metadata)
    stamp = time.time() if timestamp is None else float(timestamp)
    if text is None:
        record = {"participant": participant, "content": content_to_json(blocks), "metadata": dict(frozen), "timestamp": stamp}
        seers = seers_of(blocks)
        if seers is not None:  # who sees something of it, for an open to place it by (store/_seers.py)
            record["seers"] = seers_value(seers)
        return participant, blocks, frozen, stamp, json_text(record, "content")
    # The same text ``json_text`` gives that record (key order and separators included), without
    # building its wire form first: ``tests/store/test_append_path.py`` holds the two to be equal.
    body = (
        '{"participant": '
        + _JSON_STRING(participant)
        + ', "content": '
        + text
        + ', "metadata": '
        + (_ENCODER.encode(dict(frozen)) if frozen else "{}")
        + ', "timestamp": '
        + float.__repr__(stamp)
        + "}"
    )
    return participant, blocks, frozen, stamp, encodable(body, "content")


def _plain_text_json(blocks: Sequence[ContentBlock]) -> str | None:
    """The stored JSON of content made only of text blocks for every reader (what most messages
    hold), as ``json_text(content_to_json(blocks))`` gives it; ``None`` for any other content."""
    parts = []
    for block in blocks:
        if type(block) is not TextBlock or block.audience is not None:
            return None
        parts.append('{"type": "text", "text": ' + _JSON_STRING(block.text) + "}")
    return "[" + ", ".join(parts) + "]"


def body_may_hold_audience(body: str) -> bool:
    """Whether a stored message or edit body may name a reader anywhere in its content: an
    ``audience`` on a block or on anything nested in one, at any depth. Fail-closed: content that
    is not a list of JSON objects, or a body that is not JSON, counts as naming one. Only a tool
    call's ``input`` and the message's metadata are data, never audiences.

    So does an object that gives a key twice (``store._stored_json``), which is read
    fail-closed.

    Only bodies that could hold the key are parsed: ones that hold the text ``"audience"``, or a
    ``\\u`` escape (which could spell it)."""
    if '"audience"' not in body and ("\\" not in body or "\\u" not in body):
        return False
    try:
        value = read_stored_json(body)
    except ValueError:
        return True
    if type(value) is DuplicatedKeys:
        return True
    items = value.get("content") if isinstance(value, dict) else value
    if not isinstance(items, list):
        return True
    if any(not isinstance(item, dict) for item in items):
        return True
    # Walk every JSON object and list below the blocks, without recursion (foreign data may be
    # nested deeper than the interpreter's stack).
    pending: list[Any] = list(items)
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            pending.extend(node)
        elif isinstance(node, dict):
            if node.get("audience") is not None or type(node) is DuplicatedKeys:
                return True
            for key, child in node.items():
                if key == "input" and node.get("type") == "tool_use":
                    continue  # a tool call's input is data
                if isinstance(child, (dict, list)):
                    pending.append(child)
    return False


def unsafe_content(content: Sequence[ContentBlock]) -> bool:
    """Content no view may pass on as it is: empty, or holding an unreadable block."""
    if not content:
        return True
    for block in content:  # a loop, not any() over a generator: this runs for every message written
        if isinstance(block, UnreadableBlock):
            return True
    return False


def report_problems(record_id: int, problems: Sequence[str]) -> None:
    for problem in problems:
        log.warning("record %s holds malformed data, read fail-closed: %s", record_id, problem)


def decode_message(record_id: int, seq: int, text: str) -> Message:
    """A stored message body (JSON text), decoded fail-closed: a body that is not a JSON object,
    or that gives one of its own keys twice, has one unreadable block for content; metadata that
    gives a key twice is dropped (reported)."""
    try:
        body = _message_object(text)
    except ValueError as exc:
        report_problems(record_id, [f"message body: {exc}"])
        body = {"participant": "", "content": text}
    problems: list[str] = []
    participant = body.get("participant")
    if not isinstance(participant, str):
        problems.append("participant: not a string")
        participant = str(participant)
    content, content_problems = decode_stored_content(body.get("content"))
    problems.extend(content_problems)
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        problems.append("metadata: not a JSON object")
        metadata = None
    elif metadata is not None and holds_duplicate(metadata):
        problems.append("metadata: an object gives a key twice")
        metadata = None
    timestamp = body.get("timestamp", 0.0)
    if not isinstance(timestamp, (int, float)):
        problems.append("timestamp: not a number")
        timestamp = 0.0
    report_problems(record_id, problems)
    # metadata read from disk is already a private JSON object: wrap it, no round trip
    return Message(str(record_id), seq, participant, content, MappingProxyType(metadata or {}), float(timestamp))


class StoredEdit:
    """An edit's content not decoded yet."""

    __slots__ = ("record_id", "body")

    def __init__(self, record_id: int, body: str) -> None:
        self.record_id = record_id
        self.body = body


_EDIT_AT = re.compile(r'"at": ?(-?[0-9][0-9.eE+-]*)\}\s*$')


def edit_time(body: object) -> float | None:
    """When an edit record was written (its body's last key, ``"at"``), or ``None`` when it
    does not say. A key inside the content cannot match: its quotes are escaped there, and the
    content is not the body's last key when ``"at"`` is."""
    if not isinstance(body, str):
        return None
    found = _EDIT_AT.search(body[-40:])
    if found is None:
        return None
    try:
        return float(found.group(1))
    except ValueError:
        return None


def body_names(text: str) -> frozenset[str] | None:
    """The readers the audiences of a stored message body (JSON text) name, decoded as
    :func:`decode_message` decodes it but reporting nothing (it reports when the message is
    read); ``None`` when the body is not a message record."""
    try:
        body = _message_object(text)
    except ValueError:
        return None
    content, _problems = decode_stored_content(body.get("content"))
    return named_readers(content)


def _message_object(text: str) -> dict[str, Any]:
    """A stored message body's JSON object; ``ValueError``, saying why, when it is not one (not
    JSON, not an object, or an object that gives one of its keys twice)."""
    body = read_stored_json(text)
    if not isinstance(body, dict):
        raise ValueError("a message record must be a JSON object")
    if type(body) is DuplicatedKeys:
        raise ValueError("a message record gives a key twice")
    return body


def decode_edit(record_id: int, body: str) -> tuple[ContentBlock, ...]:
    """A stored edit body (JSON text), decoded fail-closed as :func:`decode_message` decodes
    a message's content."""
    try:
        value = read_stored_json(body)
        if type(value) is DuplicatedKeys:
            raise ValueError("an edit record gives a key twice")
        items = value.get("content") if isinstance(value, dict) else value
    except ValueError as exc:
        report_problems(record_id, [f"edit body: {exc}"])
        items = body
    content, problems = decode_stored_content(items)
    report_problems(record_id, problems)
    return content


def audience_summary(summary: str | None, body: object, read: dict[str, Seers | None]) -> tuple[bool, Seers | None]:
    """A row of a message whose body may name a reader (by the substring test): whether it may
    still, and who sees something of it. With the summary its body records (its JSON text, read
    once through ``read``), that summary, ``None`` when it cannot be read (the message is then
    decoded to be placed). With none, ``None``, and whether the body may name a reader at all
    (``body_may_hold_audience``: a key named ``audience`` in a tool call's input is data; a
    body not given counts as naming one)."""
    if summary is not None:
        if summary not in read:
            read[summary] = read_seers(summary)
        return True, read[summary]
    return type(body) is not str or body_may_hold_audience(body), None


def audience_groups(
    counted: Sequence[Sequence[Any]], undecided: Sequence[Sequence[Any]], bits: int
) -> list[tuple[str, int, Seers | None, int]]:
    """An open's counts of the messages whose body may name a reader, as the model takes them
    (``LogModel.end_stored_open``): ``counted``, ``(branch, block, summary text, count)`` rows
    of those whose body records who sees them (each text read once; one that cannot be read
    counts as ``None``: such messages are decoded to be placed); and ``undecided``, ``(branch,
    seq, body)`` rows of the others, counted by block of ``1 << bits`` sequences under ``None``
    when the body may name a reader (``body_may_hold_audience``: a key named ``audience`` in a
    tool call's input is data)."""
    found: list[tuple[str, int, Seers | None, int]] = []
    read: dict[str, Seers | None] = {}
    for branch, number, summary, count in counted:
        found.append((str(branch), int(number), audience_summary(summary, None, read)[1], int(count)))
    blocks: dict[tuple[str, int], int] = {}
    for branch, seq, body in undecided:
        if audience_summary(None, body, read)[0]:
            key = (str(branch), int(seq) >> bits)
            blocks[key] = blocks.get(key, 0) + 1
    found.extend((branch, number, None, count) for (branch, number), count in blocks.items())
    return found
