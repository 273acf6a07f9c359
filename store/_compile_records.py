"""Compile records: what each compile sent, in numbers.

Pure logic, no I/O. A compile record (kind ``compile``, on the audit branch ``""`` like a
disclosure record, its ``ref`` the namespace) says that a manager of ``namespace`` compiling for
``reader`` on ``branch`` at ``at`` sent ``tokens`` tokens in ``messages`` messages, by part, against
its budget, and how many of those tokens lead the request unchanged from the same manager's
previous compile. It holds counts, never text and never a message id, so it outlives every
erasure and tells no reader anything of another's lines.

An open does not read the records' bodies (``store._model``): they are read on demand, newest
first, through the store's index of them (``Store.compile_records``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

import attrs

__all__ = ["COMPILE", "CompileParts", "CompileRecord", "compile_body", "compile_index", "compile_rows_query", "parse_compile_record"]

#: The kind of a compile record.
COMPILE: Final = "compile"


def compile_index(table: str) -> str:
    """The statement that makes the index finding a namespace's compile records in ``table``
    (the log), newest first, without reading the log: partial, on ``(ref, id)``."""
    return f"CREATE INDEX IF NOT EXISTS {table}_compiles ON {table} (ref, id) WHERE kind = 'compile'"


def compile_rows_query(table: str, mark: str, namespace: str | None, before: int | None, limit: int) -> tuple[str, tuple[Any, ...]]:
    """The query for the newest ``limit`` compile records of ``table`` (of ``namespace`` when
    given) with ids below ``before`` (when given), newest first, and its arguments; ``mark`` is
    the driver's placeholder (``?`` or ``%s``). No value goes in the text."""
    where = "kind = 'compile'"
    where += f" AND ref = {mark}" if namespace is not None else ""
    where += f" AND id < {mark}" if before is not None else ""
    args = tuple(a for a in (namespace, before) if a is not None)
    return f"SELECT id, branch, seq, kind, ref, body FROM {table} WHERE {where} ORDER BY id DESC LIMIT {mark}", (*args, limit)  # noqa: S608


def _levels(value: Mapping[int, int]) -> Mapping[int, int]:
    return MappingProxyType(dict(sorted(value.items())))


@attrs.frozen
class CompileParts:
    """A compile's tokens by part. ``head``: the raw messages before the compile's first memory
    (0 when it shows none); ``memories``: the memories' tokens by level (level 0: a memory whose
    level is not known); ``raw``: every other raw or repaired message; ``injections``: injected
    messages and system content. They add up to the compile's estimate."""

    head: int = 0
    memories: Mapping[int, int] = attrs.field(factory=dict, converter=_levels)
    raw: int = 0
    injections: int = 0

    @property
    def total(self) -> int:
        return self.head + sum(self.memories.values()) + self.raw + self.injections

    def to_json(self) -> dict[str, Any]:
        memories = {str(level): tokens for level, tokens in self.memories.items()}
        return {"head": self.head, "memories": memories, "raw": self.raw, "injections": self.injections}


@attrs.frozen
class CompileRecord:
    """One compile a manager sent (never a preview).

    ``record_id``: the record's id (0 before it is written); ``namespace``, ``reader`` (``None``: a
    manager compiling for no reader) and ``branch``: who compiled; ``at``: when (seconds since the
    epoch); ``head``: the branch's newest sequence then; ``max_tokens`` and
    ``reserve_for_response``: the budget it was given; ``tokens``: its token estimate;
    ``messages``: how many messages it sent; ``parts``: the tokens by part; ``cached``: the tokens
    of the request's leading messages (system content first) that equal the same manager's
    previous compile's, which is the most a provider's prompt cache could serve of it (0 for a
    manager's first compile)."""

    record_id: int
    namespace: str
    reader: str | None
    branch: str
    at: float
    head: int
    max_tokens: int
    reserve_for_response: int
    tokens: int
    messages: int
    parts: CompileParts
    cached: int

    @property
    def budget(self) -> int:
        """What the compile could fill: ``max_tokens - reserve_for_response``."""
        return self.max_tokens - self.reserve_for_response

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.record_id,
            "namespace": self.namespace,
            "reader": self.reader,
            "branch": self.branch,
            "at": self.at,
            "head": self.head,
            "max_tokens": self.max_tokens,
            "reserve_for_response": self.reserve_for_response,
            "budget": self.budget,
            "tokens": self.tokens,
            "messages": self.messages,
            "parts": self.parts.to_json(),
            "cached": self.cached,
        }


def compile_body(record: CompileRecord) -> str:
    """The stored body of ``record`` (its id and namespace are the row's own)."""
    parts = record.parts
    return json.dumps(
        {
            "r": record.reader,
            "b": record.branch,
            "at": round(record.at, 3),
            "head": record.head,
            "max": record.max_tokens,
            "reserve": record.reserve_for_response,
            "tokens": record.tokens,
            "messages": record.messages,
            "parts": [parts.head, [[k, v] for k, v in parts.memories.items()], parts.raw, parts.injections],
            "cached": record.cached,
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _count(value: object) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(value)
    return value


def parse_compile_record(record_id: int, namespace: str | None, body: str) -> CompileRecord | None:
    """The record stored as ``body``, or ``None`` when it cannot be read."""
    try:
        value = json.loads(body)
        reader, branch, at = value["r"], value["b"], value["at"]
        head, memories, raw, injections = value["parts"]
        if (
            not isinstance(namespace, str)
            or not (reader is None or isinstance(reader, str))
            or not isinstance(branch, str)
            or not isinstance(at, (int, float))
            or not isinstance(memories, list)
        ):
            return None
        parts = CompileParts(_count(head), {_count(level): _count(tokens) for level, tokens in memories}, _count(raw), _count(injections))
        return CompileRecord(
            record_id,
            namespace,
            reader,
            branch,
            float(at),
            _count(value["head"]),
            _count(value["max"]),
            _count(value["reserve"]),
            _count(value["tokens"]),
            _count(value["messages"]),
            parts,
            _count(value["cached"]),
        )
    except (ValueError, KeyError, TypeError):
        return None
