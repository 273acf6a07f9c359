"""``asides export`` and ``asides import``: a branch's messages as JSON lines, and back.

A message line is one compact JSON object with sorted keys::

    {"content":[...],"metadata":{...},"participant":"ann","timestamp":1714000000.0}

``content`` is the blocks' stored (wire) form, audiences included; ``export --with-ids`` adds
``id`` and ``sequence``, which ``import`` ignores (the store assigns its own). ``asides dump``
writes messages in this same form (see ``_backup``).

``import`` reads the file strictly (see ``_jsonl``), validates every line as a write would, and
appends every message in one atomic commit, or writes nothing and names each bad line.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import chain
from typing import Any

import trio

from ..actors._runtime import internal_store
from ..store._blocks import ContentBlock, UnreadableBlock, check_content, content_from_json, content_to_json
from ..store._errors import MalformedContentError
from ..store._messages import Message, freeze_metadata
from ..store._names import check_participant
from ..store._store import IMPORT_PAGE
from ..store._words import counted
from ._common import (
    EXIT_OK,
    CliError,
    check_store_file,
    dumps,
    is_new_store_file,
    is_shared,
    reading_runtime,
    remove_store_files,
    require_branch,
    write_out,
    writing_runtime,
)
from ._jsonl import each_line, empty_file, parse_json_line, strict_values

__all__ = ["DUMP_HEADER_KEY", "cmd_export", "cmd_import", "message_line", "parse_message_line"]

MESSAGE_KEYS = ("participant", "content", "metadata", "timestamp")
_IGNORED_KEYS = {"id", "sequence"}  # what --with-ids adds; the store assigns its own
#: Messages an export reads and writes at a time: what it holds follows this, never the
#: branch's length.
EXPORT_PAGE = 1000
#: The key of a dump's first and last lines (``{"asides":"dump","format":2}``), so import can say what it is.
DUMP_HEADER_KEY = "asides"

Item = tuple[str, tuple[ContentBlock, ...], dict[str, Any], float | None]


def message_line(message: Message, *, with_ids: bool) -> dict[str, Any]:
    """A message in the export form."""
    line: dict[str, Any] = {
        "participant": message.participant,
        "content": content_to_json(message.content),
        "metadata": dict(message.metadata),
        "timestamp": message.timestamp,
    }
    if with_ids:
        line["id"] = message.id
        line["sequence"] = message.sequence
    return line


def cmd_export(args: argparse.Namespace) -> int:
    refused: list[int] = []  # the numbers of the first lines a write would refuse
    refusals = 0

    async def run() -> None:
        nonlocal refusals
        async with reading_runtime(args.path, message_cache=EXPORT_PAGE) as rt:  # each message read once
            require_branch(rt, args.branch)
            store, model = rt.store, internal_store(rt).model
            length = store.length(args.branch)
            number = 0
            for start in range(0, length, EXPORT_PAGE):  # written a page at a time, as read
                lines: list[str] = []
                for message in store.messages(args.branch, start, min(length, start + EXPORT_PAGE)):
                    if model.is_erased(message.id):
                        continue  # tombstones left out
                    number += 1
                    line = message_line(message, with_ids=args.with_ids)
                    lines.append(dumps(line, compact=True))
                    if any(isinstance(b, UnreadableBlock) for b in message.content) or _problem_of(line["content"], "content"):
                        refusals += 1
                        if len(refused) < 20:
                            refused.append(number)
                write_out(lines)

    trio.run(run)
    if refusals:
        shown = ", ".join(map(str, refused[:20])) + (" …" if refusals > 20 else "")
        print(
            f"asides: note: {counted(refusals, 'exported message')} {'holds' if refusals == 1 else 'hold'} data a "
            f"write would refuse (lines {shown}); "
            "they are exported as stored, and an import will name them",
            file=sys.stderr,
        )
    return EXIT_OK


def _problem_of(content: Any, path: str) -> str | None:
    try:
        check_content(content_from_json(content, path=path), path=path, allow_audience=True)
    except MalformedContentError as exc:
        return str(exc)
    except RecursionError:
        return f"{path}: nested too deeply"
    return None


def _timestamp(value: Any, where: str) -> float | None:
    """A line's timestamp: seconds since the epoch that a date can hold, or none."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MalformedContentError(f"{where}: timestamp", "must be a number (seconds since the epoch)")
    try:
        stamp = float(value)
        if not math.isfinite(stamp):
            raise ValueError
        datetime.fromtimestamp(stamp, tz=UTC)
    except (OverflowError, ValueError, OSError):
        raise MalformedContentError(f"{where}: timestamp", "is out of range for a date (seconds since the epoch)") from None
    return stamp


def parse_message_line(obj: Any, where: str) -> Item:
    """A message line (already read as JSON), validated as a write would be;
    ``MalformedContentError`` naming ``where`` and the field otherwise."""
    if not isinstance(obj, dict):
        raise MalformedContentError(where, f"a message must be a JSON object, not {_json_type(obj)}")
    unknown = [key for key in obj if key not in MESSAGE_KEYS and key not in _IGNORED_KEYS]
    if unknown:
        raise MalformedContentError(f"{where}: {unknown[0]}", "a message line has no such field")
    participant = check_participant(obj.get("participant"), f"{where}: participant")
    if "content" not in obj:
        raise MalformedContentError(f"{where}: content", "missing")
    try:
        blocks = content_from_json(obj["content"], path=f"{where}: content")
        check_content(blocks, path=f"{where}: content", allow_audience=True)
        metadata = freeze_metadata(obj.get("metadata"), path=f"{where}: metadata")
    except RecursionError:
        raise MalformedContentError(where, "nested too deeply to read") from None
    return participant, blocks, dict(metadata), _timestamp(obj.get("timestamp"), where)


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "true or false", int: "a number", float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


class MessageLines:
    """A messages file (a path, or ``-`` for stdin) read a line at a time, strictly: its first
    line is read at once (an empty file, or a dump, is refused before anything is made);
    iterating it gives each message, in order, and then, when any line was malformed, refuses
    the whole file naming each one. Messages after the first malformed line are read, not
    given. What it holds is a line."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._lines = each_line(source)
        self._first = next(self._lines, None)
        if self._first is None:
            raise CliError(empty_file(source, "messages"))
        number, text, _problem = self._first
        if text is not None:
            try:
                obj = parse_json_line(text, f"line {number}")
            except MalformedContentError:
                obj = None
            if isinstance(obj, dict) and obj.get(DUMP_HEADER_KEY) == "dump":
                raise CliError(f"{source!r} is a dump of a whole store, not a messages file; restore it with asides restore")
        #: Messages given so far.
        self.count = 0

    def __iter__(self) -> Iterator[Item]:
        assert self._first is not None
        for item in strict_values(chain([self._first], self._lines), _message_of_line, action="import", source=self.source):
            self.count += 1
            yield item


def _message_of_line(number: int, text: str) -> Item:
    where = f"line {number}"
    return parse_message_line(parse_json_line(text, where), where)


def cmd_import(args: argparse.Namespace) -> int:
    items = MessageLines(args.messages)
    creating = is_new_store_file(args.path)
    if creating and args.branch != "main":
        raise CliError(f"no store at {args.path!r}, so it has no branch {args.branch!r}; a new store has only main")
    if not creating and (is_shared(args.path) or os.path.getsize(args.path) > 0):
        check_store_file(args.path)  # refuse a foreign file before opening it for writing

    async def run() -> int:
        async with writing_runtime(args.path, message_cache=IMPORT_PAGE) as rt:  # nothing reads the imported messages here
            require_branch(rt, args.branch)
            if not args.append and any(rt.store.length(info.name) for info in rt.list_branches()):
                raise CliError(
                    f"the store {args.path!r} already holds messages; pass --append to add these after them "
                    "(nothing was written)"
                )
            await internal_store(rt).import_messages(args.branch, items)
            return rt.store.length(args.branch)

    try:
        total = trio.run(run)
    except BaseException:
        if creating:  # a line found malformed after the store was made: nothing was written to it
            remove_store_files(args.path)
        raise
    made = "a new store" if creating else "the store"
    print(f"imported {counted(items.count, 'message')} into {made} {args.path} (branch {args.branch}, now {counted(total, 'message')})")
    return EXIT_OK
