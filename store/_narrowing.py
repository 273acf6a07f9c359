"""What an edit hides, and from whom. Pure logic, no I/O.

Narrowing is hiding a block, in place, from a reader who could see it: a block with no audience
given one, or a name taken out of one. Old and new content are compared by block position; a
block beyond the shorter of the two is neither narrowed nor widened.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ._blocks import UNREADABLE_AUDIENCE, ContentBlock, effective_audience

__all__ = ["Narrowing", "narrowing_of"]


@attrs.frozen(slots=True)
class Narrowing:
    """What an edit hides.

    ``named``: readers named before who are not named after. ``from_everyone_but``: set when a
    block everyone could see gets an audience, hiding it from every reader except those (a
    frozenset, empty when it now names no one).
    """

    named: frozenset[str] = frozenset()
    from_everyone_but: frozenset[str] | None = None

    @property
    def hides_anything(self) -> bool:
        return bool(self.named) or self.from_everyone_but is not None

    def hides_from_other_than(self, reader: str | None) -> bool:
        """Whether it hides a block from any reader other than ``reader``."""
        if self.from_everyone_but is not None:
            return True  # every unnamed reader but one is someone else
        return bool(self.named - {reader} if reader is not None else self.named)


def narrowing_of(old: Sequence[ContentBlock], new: Sequence[ContentBlock]) -> Narrowing:
    """Compare two contents block by block and say whom the new one hides blocks from."""
    named: set[str] = set()
    everyone_but: frozenset[str] | None = None
    for before_block, after_block in zip(old, new, strict=False):
        before = effective_audience(before_block)
        after = effective_audience(after_block)
        if after is None or before is UNREADABLE_AUDIENCE:
            continue  # visible to all now, or visible to no one before
        remaining: frozenset[str] = frozenset() if after is UNREADABLE_AUDIENCE else after  # type: ignore[assignment]
        if before is None:
            everyone_but = remaining if everyone_but is None else everyone_but & remaining
        else:
            named.update(before - remaining)  # type: ignore[operator]
    return Narrowing(frozenset(named), everyone_but)
