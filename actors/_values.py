"""Plain values a manager hands out and records: an entry of a namespace's context log, and where
a derived manager came from (pure data, no I/O)."""

from __future__ import annotations

from typing import Any

import attrs

from ..store._blocks import ContentBlock

__all__ = ["ContextEntry", "Derivation"]


@attrs.frozen(slots=True)
class Derivation:
    """Where a derived manager came from: the parent's branch, the child's branch, the sequence
    it was derived at, and the namespace."""

    parent_branch: str
    branch: str
    at_sequence: int
    namespace: str

    def to_json(self) -> dict[str, Any]:
        return {"parent_branch": self.parent_branch, "branch": self.branch, "at_sequence": self.at_sequence, "namespace": self.namespace}

    @classmethod
    def from_json(cls, value: object) -> Derivation | None:
        if not isinstance(value, dict):
            return None
        try:
            return cls(str(value["parent_branch"]), str(value["branch"]), int(value["at_sequence"]), str(value["namespace"]))
        except (KeyError, TypeError, ValueError):
            return None


@attrs.frozen(slots=True)
class ContextEntry:
    """An entry of a namespace's context log."""

    index: int
    content: tuple[ContentBlock, ...]
    source_message_id: str | None = None
