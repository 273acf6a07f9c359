"""An audit export: the store's disclosures and erasures as JSON lines, each carrying a hash of
the line before it, anchored at a value the store keeps. Pure logic, no I/O.

The lines, in order:

1. a head, ``{"kind": "head", "format": 1, "anchor": H(anchor)}``: ``H`` is SHA-256 in hex, and
   the anchor is the random value the store made at its first writing open (never exported
   itself);
2. one line per disclosure record (``"kind": "disclosure"``: the record id, namespace, reader,
   branch, way, time and the message ids it newly showed) and per erasure (``"kind": "erasure"``:
   its receipt: number, message ids, counts, what was rewritten, reason and time), ordered by
   time, then disclosures before erasures, then by record id or number;
3. an end, ``{"kind": "end", "lines": N}``, N counting the lines before it.

Every line but the head carries ``"prev"``: the hash of the line before it, as written (its
UTF-8 bytes, without the newline). Lines hold ids, names, counts and times, never a message's
text: an erasure's receipt says what it removed, not what it said.

What a check proves (:func:`check_lines`): that no line was changed, removed, added or moved
after the export without the hashes being computed again; with the store (:func:`compare`),
that the export is what the store holds now, line for line, and was made from this store (its
anchor). What it does not prove: that an export checked without the store was not rewritten
whole by someone who recomputed every hash (the anchor's hash alone is no secret); that the
store itself was not changed before the export (the log is append-only, and an erasure is
itself a recorded event, but a database administrator can rewrite any table).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any

from ..store._disclosure import DisclosureRecord
from ..store._erasure import Erasure

__all__ = ["FORMAT", "check_lines", "compare", "export_lines"]

FORMAT = 1


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _dumps(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _events(disclosures: Iterable[DisclosureRecord], erasures: Iterable[Erasure]) -> list[dict[str, Any]]:
    keyed: list[tuple[tuple[float, int, int], dict[str, Any]]] = []
    for d in disclosures:
        event = {
            "kind": "disclosure",
            "record": d.record_id,
            "namespace": d.namespace,
            "reader": d.reader,
            "branch": d.branch,
            "via": d.via,
            "at": d.at,
            "message_ids": list(d.message_ids),
        }
        keyed.append(((d.at, 0, d.record_id), event))
    for e in erasures:
        event = {
            "kind": "erasure",
            "number": e.number,
            "message_ids": list(e.message_ids),
            "summaries_invalidated": e.summaries_invalidated,
            "records_invalidated": e.records_invalidated,
            "versions_erased": e.versions_erased,
            "context_copies": e.context_copies,
            "index_entries": e.index_entries,
            "rewrites": list(e.rewrites),
            "reason": e.reason,
            "at": e.at,
        }
        keyed.append(((e.at, 1, e.number), event))
    keyed.sort(key=lambda pair: pair[0])
    return [event for _key, event in keyed]


def export_lines(anchor: str, disclosures: Iterable[DisclosureRecord], erasures: Iterable[Erasure]) -> list[str]:
    """The export's lines (see the module docstring), without newlines."""
    lines = [_dumps({"kind": "head", "format": FORMAT, "anchor": _hash(anchor)})]
    events = _events(disclosures, erasures)
    for event in [*events, {"kind": "end", "lines": len(events) + 1}]:
        lines.append(_dumps({**event, "prev": _hash(lines[-1])}))
    return lines


def check_lines(lines: Sequence[str]) -> str | None:
    """``None`` when the chain holds; else what is wrong, naming the line (counted from 1)."""
    if not lines:
        return "the export is empty"
    parsed: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        try:
            value = json.loads(line)
        except ValueError:
            return f"line {number} is not JSON"
        if not isinstance(value, dict):
            return f"line {number} is not a JSON object"
        parsed.append(value)
    head = parsed[0]
    if head.get("kind") != "head" or head.get("format") != FORMAT or "prev" in head:
        return f"line 1 is not the head of an asides audit export of format {FORMAT}"
    for number in range(2, len(lines) + 1):
        if parsed[number - 1].get("prev") != _hash(lines[number - 2]):
            return f"line {number - 1} was changed, or a line was removed or added after it: line {number} does not hold its hash"
    end = parsed[-1]
    if end.get("kind") != "end" or end.get("lines") != len(lines) - 1:
        return f"line {len(lines)} is not the end of the export (lines were removed from its end, or added after it)"
    return None


def compare(lines: Sequence[str], expected: Sequence[str]) -> tuple[str | None, int]:
    """Whether ``lines`` (a checked export) are what the store holds (``expected``, the export it
    would make now): ``(None, n)`` when every event line of the export is the store's, in
    place, ``n`` counting the events the store recorded after the export was made; else the
    first difference, naming the line."""
    if lines[:1] != expected[:1]:
        return "line 1: the export was not made from this store (its anchor differs)", 0
    events = len(lines) - 2  # between the head and the end
    for number in range(2, events + 2):
        if number > len(expected) - 1 or lines[number - 1] != expected[number - 1]:
            return f"line {number} is not what the store holds", 0
    return None, len(expected) - len(lines)
