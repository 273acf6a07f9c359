"""``asides dump`` and ``asides restore``: every record of a store as JSON lines, and back.

A dump is every row of the store's log, in record order: messages, edits, branches and state
records (reader records, narrowing floors, strategy state, memories, context logs). Its first
line is ``{"asides":"dump","format":2}`` and its last ``{"asides":"end","records":N}`` (format 1
had no end line); between them, one compact JSON object per record, which starts with the
record's place (``kind``, ``id``, ``branch``, ``sequence``) and goes on by kind:

- ``message``: the export form (``participant``, ``content``, ``metadata``, ``timestamp``), so a
  message line is an ``export --with-ids`` line plus ``kind`` and ``branch``;
- ``edit``: ``message`` (the id of the edited message) and ``content``;
- ``state``: ``key`` and ``value``;
- ``branch``: ``parent`` and ``meta`` (what the branch was made with);
- any record whose stored text the forms above would not give back exactly (data written by
  something else, or not JSON): ``ref`` and ``body``, the stored text as it is.

Keys keep the order the store wrote them in, so ``restore`` writes every record back as the same
bytes, and a dump of the restored store is the same file. ``dump`` writes each page of records
as it reads it, from one snapshot, so what it holds is a page; a dump cut short lacks its end
line. ``restore`` writes into a new or empty store only, in one atomic commit, reading every line
strictly (see ``_jsonl``) as it writes a page at a time, and commits only once the last line is
read: a malformed line, or a dump cut short, rolls it back (:class:`DumpReader`); it writes
the records as they were, so a record a write would refuse is carried and read fail-closed, as in
the original. A dump cannot know of an erasure made after it was taken; where a dump's own
erasure records name lines that still hold content (a dump put together by hand, or from several),
``restore`` says which (:class:`ErasedRecords`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any

import trio

from ..store._compile_records import COMPILE
from ..store._disclosure import DISCLOSURE
from ..store._erasure import ERASURE, erased_body, parse_erasure
from ..store._errors import MalformedContentError, StoreLockedError
from ..store._key_numbers import key_number
from ..store._notes import STRATEGY_NOTE
from ..store._open import open_store
from ..store._store import RECORD_PAGE
from ..store._words import counted
from ._common import EXIT_OK, CliError, check_store_file, is_new_store_file, is_shared, reading_runtime, remove_store_files, write_out
from ._export import DUMP_HEADER_KEY
from ._jsonl import each_line, empty_file, parse_json_line, refuse_lines, strict_values

__all__ = ["DumpReader", "ErasedRecords", "cmd_dump", "cmd_restore", "end_line", "line_record", "record_line"]

FORMAT = 2
HEADER: dict[str, Any] = {DUMP_HEADER_KEY: "dump", "format": FORMAT}
#: The headers of the formats restore reads: format 1 had no end line.
READABLE_HEADERS = ({DUMP_HEADER_KEY: "dump", "format": 1}, HEADER)
PLACE = ("kind", "id", "branch", "sequence")
#: Per kind: the key that holds ``ref``, and the key that holds the body (``None``: the body is
#: a JSON object whose keys follow the place, flat).
#: Audit records (erasures, disclosures, compile records, strategy notes: store/_erasure.py,
#: store/_disclosure.py, store/_compile_records.py, store/_notes.py) live on the branch named ""
#: and are carried as ref and body.
AUDIT_KINDS = (ERASURE, DISCLOSURE, COMPILE, STRATEGY_NOTE)
FORMS: dict[str, tuple[str, str | None]] = {
    "message": ("", None),
    "edit": ("message", None),
    "state": ("key", "value"),
    "branch": ("parent", "meta"),
}
RAW = ("ref", "body")
_RESERVED = set(PLACE) | set(RAW) | {key for form in FORMS.values() for key in form if key}

Record = tuple[int, str, int, str, str | None, str]


def _encode(value: Any) -> str:
    """A body as the store writes one (``json.dumps`` with ``ensure_ascii=False``)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def record_line(record: Record) -> dict[str, Any]:
    """One record as a dump line (see the module's docstring)."""
    record_id, branch, sequence, kind, ref, body = record
    line: dict[str, Any] = {"kind": kind, "id": str(record_id), "branch": branch, "sequence": sequence}
    form = FORMS.get(kind)
    if form is not None and (ref is None if kind == "message" else bool(ref)):
        ref_key, body_key = form
        value = _exact(body)
        flat_ok = body_key is not None or (isinstance(value, dict) and not _RESERVED & set(value))
        if value is not _NOT_EXACT and flat_ok:
            if ref_key:
                line[ref_key] = ref
            if body_key is None:
                line.update(value)
            else:
                line[body_key] = value
            return line
    line["ref"] = ref
    line["body"] = body
    return line


_NOT_EXACT = object()


def _exact(body: str) -> Any:
    """The JSON value of ``body`` when encoding it again gives ``body`` back byte for byte."""
    try:
        value = json.loads(body, object_pairs_hook=_pairs)
        if _encode(value) == body:
            return value
    except (ValueError, RecursionError):
        pass
    return _NOT_EXACT


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("a key given twice")  # the body would not come back the same
    return obj


def line_record(obj: Any, where: str) -> Record:
    """A dump line (already read as JSON) as the record it holds; ``MalformedContentError``
    naming ``where`` and the field otherwise."""
    if not isinstance(obj, dict):
        raise MalformedContentError(where, "a dump line must be a JSON object")
    missing = [key for key in PLACE if key not in obj]
    if missing:
        raise MalformedContentError(f"{where}: {missing[0]}", "missing (a dump line starts with kind, id, branch, sequence)")
    kind, record_id, branch, sequence = (obj[key] for key in PLACE)
    if not isinstance(kind, str) or not kind:
        raise MalformedContentError(f"{where}: kind", "must be a non-empty string")
    if not isinstance(record_id, str) or not key_number(record_id):
        raise MalformedContentError(f"{where}: id", "must be a record id (a positive integer, as a string)")
    if not isinstance(branch, str) or not (branch or kind in AUDIT_KINDS):
        raise MalformedContentError(f"{where}: branch", "must be a non-empty string")
    if isinstance(sequence, bool) or not isinstance(sequence, int) or sequence < 0:
        raise MalformedContentError(f"{where}: sequence", "must be a non-negative integer")
    rest = {key: value for key, value in obj.items() if key not in PLACE}
    if "body" in rest:
        unknown = [key for key in rest if key not in RAW]
        if unknown or "ref" not in rest:
            raise MalformedContentError(f"{where}: {unknown[0] if unknown else 'ref'}", "a line with a body holds ref and body only")
        ref, body = rest["ref"], rest["body"]
        if ref is not None and not isinstance(ref, str):
            raise MalformedContentError(f"{where}: ref", "must be a string or null")
        if not isinstance(body, str):
            raise MalformedContentError(f"{where}: body", "must be a string (the stored text)")
        return int(record_id), branch, sequence, kind, ref, body
    form = FORMS.get(kind)
    if form is None:
        raise MalformedContentError(f"{where}: kind", f"{kind!r} is not a record kind asides writes; such a record carries ref and body")
    ref_key, body_key = form
    ref = None
    if ref_key:
        ref = rest.pop(ref_key, None)
        if not isinstance(ref, str) or not ref:
            raise MalformedContentError(f"{where}: {ref_key}", "must be a non-empty string")
    if body_key is None:
        value: Any = rest
    else:
        unknown = [key for key in rest if key != body_key]
        if unknown:
            raise MalformedContentError(f"{where}: {unknown[0]}", f"a {kind} line has no such field")
        if body_key not in rest:
            raise MalformedContentError(f"{where}: {body_key}", "missing")
        value = rest[body_key]
    try:
        body = _encode(value)
    except RecursionError:
        raise MalformedContentError(where, "nested too deeply to write") from None
    return int(record_id), branch, sequence, kind, ref, body


def cmd_dump(args: argparse.Namespace) -> int:
    async def run() -> None:
        written = 0
        async with reading_runtime(args.path) as rt, rt.store.record_pages(RECORD_PAGE) as pages:
            write_out([_line(HEADER)])
            async for page in pages:  # written a page at a time, as read
                write_out([_line(record_line(record)) for record in page])
                written += len(page)
        write_out([_line(end_line(written))])

    trio.run(run)
    return EXIT_OK


def end_line(records: int) -> dict[str, Any]:
    """A dump's last line (format 2 on): how many records it holds."""
    return {DUMP_HEADER_KEY: "end", "records": records}


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class DumpReader:
    """A dump file (a path, or ``-`` for stdin) read a line at a time, strictly: its header is
    read at once (a file that is not a dump, or a dump of a format this asides does not read, is
    refused before anything is made); iterating it gives every record, in order, and then,
    when any line was malformed, or a dump of format 2 on lacks its end line or holds a line
    after it (a dump cut short, or two put together), refuses the whole file naming each
    problem. Records after the first malformed line are read, not given. What it holds is a
    line, and what :class:`ErasedRecords` keeps of the dump's erasure records. Read once."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._lines = each_line(source)
        self.format = self._header()
        #: Records given so far.
        self.records = 0
        #: What the dump's own erasure records erased (:class:`ErasedRecords`).
        self.erased = ErasedRecords()
        #: As the lines are read: the last record id, the record lines, the end line's number.
        self._last_id = self._record_lines = 0
        self._ended: int | None = None

    def _header(self) -> int:
        shown = _line(HEADER)
        for number, text, _problem in self._lines:
            obj = None
            if text is not None:
                try:
                    obj = parse_json_line(text, f"line {number}")
                except MalformedContentError:
                    obj = None
            if not isinstance(obj, dict) or obj.get(DUMP_HEADER_KEY) != "dump":
                raise CliError(
                    f"{self.source!r} is not an asides dump (its first line is not {shown}); a file of messages is read by asides import"
                )
            if obj not in READABLE_HEADERS:
                problem = f"line {number}: a dump of format {obj.get('format')!r}; this asides reads formats 1 and {FORMAT}"
                refuse_lines("restore", self.source, [problem])
            return int(obj["format"])
        raise CliError(empty_file(self.source, "records"))

    def __iter__(self) -> Iterator[Record]:
        for record in strict_values(self._lines, self._record, action="restore", source=self.source, last=self._cut_short):
            if record is not None:
                self.erased.note(record)
                self.records += 1
                yield record

    def _record(self, number: int, text: str) -> Record | None:
        """The record of line ``number`` (``None``: the end line); ``MalformedContentError``
        otherwise."""
        where = f"line {number}"
        try:
            obj = parse_json_line(text, where)
        except MalformedContentError:
            self._record_lines += self._ended is None  # a record's line, as far as the end line counts
            raise
        if self._ended is not None:
            raise MalformedContentError(where, f"a line after the dump's end line (line {self._ended})")
        if self.format >= 2 and isinstance(obj, dict) and obj.get(DUMP_HEADER_KEY) == "end":
            self._ended = number
            if obj != end_line(self._record_lines):
                expected = _line(end_line(self._record_lines))
                held = counted(self._record_lines, "record")
                raise MalformedContentError(where, f"the end line must be {expected}: the dump holds {held}")
            return None
        self._record_lines += 1
        record = line_record(obj, where)
        if record[0] <= self._last_id:
            raise MalformedContentError(f"{where}: id", f"record ids must increase (this one follows {self._last_id})")
        self._last_id = record[0]
        return record

    def _cut_short(self) -> list[str]:
        """The problem of a dump of format 2 on with no end line."""
        if self.format >= 2 and self._ended is None:
            return [f"the dump ends with no end line ({_line(end_line(self._record_lines))}): it was cut short"]
        return []


class ErasedRecords:
    """What a dump's erasure records erased, noted record by record (:meth:`note`), and the
    records that still hold what they held (:meth:`unerased`): a store overwrites them in the
    erasure's commit. Holds the ids the erasures name, never the records."""

    def __init__(self) -> None:
        self._erased: dict[str, int] = {}  # message id: the erasure that erased it
        self._nulled: set[int] = set()

    def __bool__(self) -> bool:
        return bool(self._erased or self._nulled)

    def note(self, record: Record) -> None:
        parsed = parse_erasure(record[5]) if record[3] == ERASURE else None
        if parsed is not None:
            erasure, states = parsed
            for message_id in erasure.message_ids:
                self._erased.setdefault(message_id, erasure.number)
            self._nulled.update(states)

    def unerased(self, records: Iterable[Record]) -> Iterator[str]:
        """Each of ``records`` that an erasure noted erased and that still holds what it held,
        named as ``record N (what it is)``, in the order given."""
        erased = self._erased
        for record_id, _branch, _sequence, kind, ref, body in records:
            if kind == "message" and str(record_id) in erased and body != erased_body(erased[str(record_id)]):
                yield f"record {record_id} (message {record_id})"
            elif kind == "edit" and ref in erased and body != erased_body(erased[ref]):
                yield f"record {record_id} (an edit of message {ref})"
            elif kind == "state" and record_id in self._nulled and body != "null":
                yield f"record {record_id} (state {ref!r}, made from an erased message)"


def cmd_restore(args: argparse.Namespace) -> int:
    dump = DumpReader(args.dump)
    path = args.path
    creating = is_new_store_file(path)
    if not creating and (is_shared(path) or os.path.getsize(path) > 0):
        check_store_file(path)
    unerased: list[str] = []

    async def run() -> None:
        try:
            async with open_store(path, message_cache=RECORD_PAGE) as store:  # nothing reads the restored messages here
                await store.restore_records(dump)
                if dump.erased:  # the restored records, read again a page at a time
                    async with store.record_pages(RECORD_PAGE) as pages:
                        async for page in pages:
                            unerased.extend(dump.erased.unerased(page))
        except StoreLockedError as exc:
            raise CliError(str(exc)) from None

    try:
        trio.run(run)
    except BaseException:
        if creating:
            remove_store_files(path)
        raise
    print(f"restored {dump.records} record(s) into {'a new store' if creating else 'the store'} {path}")
    if unerased:
        named = ", ".join(unerased[:10]) + (f" and {len(unerased) - 10} more" if len(unerased) > 10 else "")
        print(
            f"asides: warning: the dump holds {len(unerased)} line(s) that its own erasure records erased: {named}. "
            "The restored store hides them, as the store the dump came from did, but what they hold is in the dump "
            "file and now in the restored store's file, and erasing those messages again changes nothing",
            file=sys.stderr,
        )
    return EXIT_OK
