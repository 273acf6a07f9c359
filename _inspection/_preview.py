"""The compile preview that ``asides compile`` and ``asides serve`` show: which strategies a
reader of the store can build, a strategy built again from its record, and a compile as JSON or
as text (which ``asides mcp`` answers ``recall`` with too).
A preview runs in a read-only runtime, so it writes nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ..store._blocks import (
    ContentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    SystemChangeBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    content_to_json,
)
from ..strategies import AutobiographicalStrategy, KnowledgeStrategy, PassthroughStrategy, WindowedPassthroughStrategy
from ..strategies._recorded import CUSTOM_ESTIMATOR
from ._text import compact_json, one_line

__all__ = ["LISTED_IDS", "STRATEGIES", "RebuiltStrategy", "block_line", "compile_as_json", "compile_as_text", "covered", "rebuild_strategy"]

#: The strategies a preview can build, by name.
STRATEGIES: dict[str, Any] = {
    "passthrough": PassthroughStrategy,
    "windowed-passthrough": WindowedPassthroughStrategy,
    "autobiographical": AutobiographicalStrategy,
    "knowledge": KnowledgeStrategy,
}


def block_line(block: ContentBlock) -> str:
    """One line for a block that is not text."""
    if isinstance(block, ToolUseBlock):
        return f"[tool_use {block.name} id={block.id}] {compact_json(block.input)}"
    if isinstance(block, ToolResultBlock):
        body = block.content if isinstance(block.content, str) else " ".join(
            b.text if isinstance(b, TextBlock) else f"[{b.type}]" for b in block.content
        )
        return f"[tool_result{' error' if block.is_error else ''} for {block.tool_use_id}] {one_line(body)}"
    if isinstance(block, ThinkingBlock):
        return f"[thinking] {one_line(block.thinking)}"
    if isinstance(block, RedactedThinkingBlock):
        return "[redacted_thinking]"
    if isinstance(block, ImageBlock):
        return f"[image {block.media_type}]"
    if isinstance(block, SystemChangeBlock):
        return f"[system_change] {block.text}"
    return f"[{getattr(block, 'type', 'block')}]"


def compile_as_text(compiled: Any, header: str) -> str:
    """A compile as plain text: ``header``, the system injections, then each message under a
    ``── participant ──`` rule (a memory names its summary id, any other non-raw source its
    kind); text blocks as they are, any other block as one line (:func:`block_line`)."""
    lines = [header]
    if compiled.system_injections:
        lines += ["", "── system ──"]
        lines += [b.text if isinstance(b, TextBlock) else block_line(b) for b in compiled.system_injections]
    for message, source in zip(compiled.messages, compiled.provenance.entries, strict=True):
        label = message.participant
        if source.kind == "summary":
            label += f"  (memory {source.summary_id})"
        elif source.kind != "raw":
            label += f"  ({source.kind})"
        lines += ["", f"── {label} ──"]
        lines += [b.text if isinstance(b, TextBlock) else block_line(b) for b in message.content]
    return "\n".join(lines)


#: How many of the ids a memory or a compiled message stands for a compile's JSON lists
#: (``asides compile --format json``, the inspector); ``message_count`` says how many there are.
LISTED_IDS = 500


def covered(ids: Sequence[str]) -> dict[str, Any]:
    """The ids a memory or a compiled message stands for, as a compile's JSON gives them:
    ``message_ids``, the first :data:`LISTED_IDS` of them, and ``message_count``, how many. So
    a memory of a long history costs what the compile shows, not every id it covers."""
    return {"message_ids": list(ids[:LISTED_IDS]), "message_count": len(ids)}


def compile_as_json(compiled: Any, about: dict[str, Any]) -> dict[str, Any]:
    """A compile (``CompiledContext``) as JSON-ready data, after the fields of ``about``: its
    messages, system injections, token estimate and provenance (each entry's ids as
    :func:`covered` gives them)."""
    provenance = compiled.provenance
    return {
        **about,
        "messages": [{"participant": m.participant, "content": content_to_json(m.content)} for m in compiled.messages],
        "system_injections": content_to_json(compiled.system_injections),
        "token_estimate": compiled.token_estimate,
        "provenance": {
            "entries": [{"kind": e.kind, **covered(e.message_ids), "summary_id": e.summary_id} for e in provenance.entries],
            "complete": dict(provenance.complete),
        },
    }


@attrs.frozen
class RebuiltStrategy:
    """A strategy built again for a preview, and where it may differ from the one recorded:
    ``custom_estimator``: the record says it counted tokens with an estimator of its own, which
    a store cannot hold, so this one counts with the default; ``refused_options``: why the
    recorded options could not be used (this one has the default options), or ``None``."""

    strategy: Any
    custom_estimator: bool = False
    refused_options: str | None = None


def rebuild_strategy(name: str, options: Mapping[str, Any] | None) -> RebuiltStrategy:
    """Strategy ``name`` (one of :data:`STRATEGIES`; ``KeyError`` for another) with the recorded
    ``options`` (``None``: the default options)."""
    build = STRATEGIES[name]
    given = dict(options or {})
    custom = given.pop("estimator", None) == CUSTOM_ESTIMATOR
    try:
        return RebuiltStrategy(build(**given), custom)
    except (TypeError, ValueError) as exc:
        return RebuiltStrategy(build(), custom, one_line(exc))
