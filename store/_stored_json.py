"""How stored JSON text is read back: every record body (a message, an edit, a state record, a
branch's meta) is decoded by :func:`read_stored_json`, or, where a value is taken whole or not at
all (a state record), by :func:`read_whole_json`, which gives the same answer without walking it.

Stored text is read strictly enough that it can never mean two things. ``json.loads`` keeps the
*last* value of a key an object gives twice, so ``{"audience": ["bob"], "audience": null}`` would
read as a block for everyone while a tool reading the first key sees it for bob alone. Here an
object that gives a key twice is kept, but marked: it is a :class:`DuplicatedKeys` (a ``dict``,
holding the last value of each key), and :func:`holds_duplicate` finds one anywhere in a value.
The callers read such data fail-closed, as old or foreign data: a content block that holds one
is unreadable (hidden from every reader), a message body that is one has unreadable content, a
state record that holds one reads as ``UNREADABLE``. No asides write produces one (every body
is ``json.dumps`` output).

Text that is not JSON, and JSON nested too deep for the interpreter's stack (foreign data),
raise ``ValueError``; pure logic, no I/O.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["DuplicatedKeys", "GivesAKeyTwice", "holds_duplicate", "read_stored_json", "read_whole_json"]


class DuplicatedKeys(dict[str, Any]):
    """A stored JSON object that gave at least one key twice (its last value of each is kept)."""

    __slots__ = ()


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        return DuplicatedKeys(obj)
    return obj


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs)


class GivesAKeyTwice(ValueError):
    """Stored JSON text with an object, at any depth, that gives a key twice (:func:`read_whole_json`)."""


def _pairs_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise GivesAKeyTwice("an object gives a key twice")
    return obj


_WHOLE_DECODER = json.JSONDecoder(object_pairs_hook=_pairs_once)


def read_stored_json(text: str) -> Any:
    """The JSON value of stored ``text``, every object that gives a key twice a
    :class:`DuplicatedKeys`. Raises ``ValueError`` for text that is not one JSON value or nests
    too deep to read."""
    try:
        return _DECODER.decode(text)
    except RecursionError:
        raise ValueError("nested too deep to read") from None


def read_whole_json(text: str) -> Any:
    """The JSON value of stored ``text`` for a reader that takes a value whole or not at all (a
    state record): :func:`read_stored_json` followed by :func:`holds_duplicate`, without walking
    the value. Raises :class:`GivesAKeyTwice` (a ``ValueError``) for an object that gives a key
    twice, at any depth, and ``ValueError`` for text that is not one JSON value or nests too deep."""
    try:
        return _WHOLE_DECODER.decode(text)
    except RecursionError:
        raise ValueError("nested too deep to read") from None


def holds_duplicate(value: Any) -> bool:
    """Whether ``value`` (as :func:`read_stored_json` returns it) holds, at any depth, an object
    that gave a key twice. Iterative: foreign data may nest deeper than the stack."""
    pending = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            if type(node) is DuplicatedKeys:
                return True
            pending.extend(child for child in node.values() if isinstance(child, (dict, list)))
        elif isinstance(node, list):
            pending.extend(child for child in node if isinstance(child, (dict, list)))
    return False
