"""``CompiledMessage``: one message of a compile, what a strategy selects and a model request
holds. Its own module, beneath both the strategy protocol (``_base``) and the model protocol
(``_models``), so that each may name the other's types without a circle."""

from __future__ import annotations

import attrs

from ..store._blocks import ContentBlock, coerce_content

__all__ = ["CompiledMessage"]


def _content_tuple(value: object) -> tuple[ContentBlock, ...]:
    return coerce_content(value)


@attrs.frozen(slots=True)
class CompiledMessage:
    """One message of a compile. A compiled block never has an audience."""

    participant: str
    content: tuple[ContentBlock, ...] = attrs.field(converter=_content_tuple)
