"""Who sees something of a message: the summary a reader's view places a message by without
decoding it.

A message made of text blocks alone, at least one of them with an audience, is seen (in part or
whole) by every reader when one of its blocks has no audience, and otherwise by the readers its
blocks' audiences name; a reader who sees none of its blocks sees nothing of it, and its view
leaves it out. That is the rule ``content_for_reader`` and ``reader_view`` apply
(``store/_blocks/reader.py``, ``store/_views.py``) for such content, and only for such content:
tool blocks (whose hidden ids a view keeps), thinking (which a view may drop), images and
unreadable blocks are placed by decoding the message, as before. A message's body records its
summary (the key ``"seers"``) when it is written, so an open can read where such messages
stand, and for whom, without decoding them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs

from ._blocks import ContentBlock, TextBlock
from ._blocks.reader import effective_audience

__all__ = ["Seers", "named_readers", "read_seers", "seers_of", "seers_value"]


@attrs.frozen(slots=True)
class Seers:
    """Who sees something of a message: ``everyone`` (a block has no audience), or the readers
    ``names`` names."""

    everyone: bool
    names: frozenset[str]

    def sees_nothing(self, reader: str | None) -> bool:
        """Whether ``reader`` (``None``: a view for no reader) sees none of the message's blocks."""
        return not self.everyone and (reader is None or reader not in self.names)


def seers_of(content: Sequence[ContentBlock]) -> Seers | None:
    """The summary of ``content`` made of text blocks alone with at least one audience; ``None``
    for any other content (a view decodes such a message to place it)."""
    everyone = False
    names: set[str] = set()
    restricted = False
    for block in content:
        if type(block) is not TextBlock:
            return None
        found = effective_audience(block)
        if found is None:
            everyone = True
        else:
            restricted = True
            if isinstance(found, frozenset):
                names.update(found)
    if not restricted:
        return None
    return Seers(everyone, frozenset(names))


def named_readers(content: Sequence[ContentBlock]) -> frozenset[str]:
    """Every reader a well-formed audience in ``content`` names (an audience that is not well
    formed names no one): a reader not among them sees of ``content`` what a view for no reader
    sees."""
    names: set[str] = set()
    for block in content:
        found = effective_audience(block)
        if isinstance(found, frozenset):
            names.update(found)
    return frozenset(names)


def seers_value(seers: Seers) -> list[Any]:
    """The summary as the JSON value a message body records (``[everyone, [names, sorted]]``)."""
    return [seers.everyone, sorted(seers.names)]


def read_seers(text: object) -> Seers | None:
    """A summary read back from its JSON text; ``None`` (decode the message) for anything else."""
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if (
        not isinstance(value, list)
        or len(value) != 2
        or type(value[0]) is not bool
        or not isinstance(value[1], list)
        or not all(type(name) is str for name in value[1])
    ):
        return None
    return Seers(value[0], frozenset(value[1]))

