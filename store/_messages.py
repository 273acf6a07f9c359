"""The stored message."""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from ._blocks import ContentBlock
from ._errors import MalformedContentError
from ._names import check_metadata

__all__ = ["Message", "freeze_metadata"]


def freeze_metadata(value: Mapping[str, Any] | None, *, path: str = "metadata") -> Mapping[str, Any]:
    """A read-only private copy of JSON metadata.

    Refuses, naming the place, anything that is not a JSON object; a key that is not a name
    (:class:`InvalidNameError` at ``metadata.<key>``, at any depth); a string that is not valid
    Unicode; and nesting deeper than the documented limit.
    """
    if value is None:
        return MappingProxyType({})
    if isinstance(value, MappingProxyType):
        value = dict(value)
    check_metadata(value, path)
    try:
        copied = json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise MalformedContentError(path, f"metadata must be JSON: {exc}") from None
    return MappingProxyType(copied)


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
