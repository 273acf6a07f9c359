"""Tool-pairing repair.

Every strategy repairs a tool block whose partner is on the branch but not in the view (hidden by
the reader view or by ``view_filter``): such a result is replaced by the text
``[tool call omitted]``, and such a call is followed by a ``repair`` message holding a stub result.
Autobiographical and Knowledge, whose compiles leave out what summaries cover, run the full
repair (:func:`repair_pairing`): results move up to their call, or a call gets a stub result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import attrs

from ..store._blocks import ContentBlock, TextBlock, ToolResultBlock, ToolUseBlock
from ..store._messages import Message
from ._base import CompiledMessage, SourceEntry

__all__ = [
    "CALL_OMITTED",
    "RESULT_MOVED",
    "STUB_RESULT",
    "Emitted",
    "repair_hidden_partners",
    "repair_pairing",
    "glued",
]

CALL_OMITTED = "[tool call omitted]"
RESULT_MOVED = "[tool result moved during context repair]"
STUB_RESULT = (
    "[this call's result isn't shown in this context. If you need its output and the tool only reads, "
    "call it again; you'll get what it returns now.]"
)
_LOOKAHEAD = 6


@attrs.frozen(slots=True)
class Emitted:
    """A compiled message, where it came from, and whether it holds its raw source whole."""

    message: CompiledMessage
    source: SourceEntry
    complete: bool = True


def _drop_results(
    blocks: Iterable[ContentBlock], keep: Callable[[ToolResultBlock], bool]
) -> tuple[list[ContentBlock], bool]:
    """Remove the tool results ``keep`` refuses; the first one removed becomes the text
    ``[tool call omitted]``, the others leave nothing. Returns the blocks and whether any went."""
    kept: list[ContentBlock] = []
    changed = False
    for block in blocks:
        if isinstance(block, ToolResultBlock) and not keep(block):
            if not changed:
                kept.append(TextBlock(CALL_OMITTED))
            changed = True
            continue
        kept.append(block)
    return kept, changed


def _stub(tool_use_id: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id, STUB_RESULT)


def _stub_message(ids: Sequence[str]) -> Emitted:
    return Emitted(CompiledMessage("user", tuple(_stub(i) for i in ids)), SourceEntry("repair"))


def repair_hidden_partners(message: Message, hidden_uses: frozenset[str], hidden_results: frozenset[str]) -> list[Emitted]:
    """The compiled form of one view message with only the hidden-partner repair: one ``raw`` entry, plus a
    ``repair`` entry after it when one of its calls has a hidden result."""
    content: tuple[ContentBlock, ...] = message.content
    changed = False
    if hidden_uses:
        kept, changed = _drop_results(content, lambda block: block.tool_use_id not in hidden_uses)
        content = tuple(kept)
    stubs = [b.id for b in content if isinstance(b, ToolUseBlock) and b.id in hidden_results] if hidden_results else []
    out = [
        Emitted(
            CompiledMessage(message.participant, content),
            SourceEntry("raw", (message.id,)),
            complete=not changed,
        )
    ]
    if stubs:
        out.append(_stub_message(stubs))
    return out


def _call_ids(content: Iterable[ContentBlock]) -> list[str]:
    return [b.id for b in content if isinstance(b, ToolUseBlock)]


def glued(previous: Sequence[ContentBlock] | None, current: Sequence[ContentBlock]) -> bool:
    """Whether ``current`` holds a tool result answering a call in ``previous`` (the two form one unit)."""
    if previous is None:
        return False
    calls = set(_call_ids(previous))
    if not calls:
        return False
    return any(isinstance(b, ToolResultBlock) and b.tool_use_id in calls for b in current)


def repair_pairing(items: Sequence[Emitted]) -> list[Emitted]:
    """The full tool-pairing repair over an emitted sequence, in one pass.

    Results must answer a call in the message just before them; a call's result is moved up from
    the next six messages when found there, else stubbed; orphaned results become
    ``[tool call omitted]``. A raw message the repair changed stays ``raw`` with ``complete`` false.
    """
    work: list[Emitted | None] = list(items)
    out: list[Emitted] = []
    index = 0
    while index < len(work):
        item = work[index]
        index += 1
        if item is None:
            continue
        previous_calls = _call_ids(out[-1].message.content) if out else []
        allowed = set(previous_calls)
        answered: set[str] = set()

        def answers(block: ToolResultBlock, allowed: set[str] = allowed, answered: set[str] = answered) -> bool:
            # a result of the previous message's call, and the first one for that call
            if block.tool_use_id in allowed and block.tool_use_id not in answered:
                answered.add(block.tool_use_id)
                return True
            return False

        content, changed = _drop_results(item.message.content, answers)
        # Calls of the previous message that this one does not answer: move their result up
        # from the next messages, or stub it.
        missing = [c for c in previous_calls if c not in answered]
        moved: list[ToolResultBlock] = []
        for call_id in missing:
            found = None
            for ahead in range(index, min(len(work), index + _LOOKAHEAD)):
                candidate = work[ahead]
                if candidate is None:
                    continue
                blocks = candidate.message.content
                for position, block in enumerate(blocks):
                    if isinstance(block, ToolResultBlock) and block.tool_use_id == call_id:
                        found = block
                        rest = blocks[:position] + blocks[position + 1 :]
                        if not rest:
                            rest = (TextBlock(RESULT_MOVED),)
                        work[ahead] = attrs.evolve(
                            candidate,
                            message=CompiledMessage(candidate.message.participant, rest),
                            complete=False if candidate.source.kind == "raw" else candidate.complete,
                        )
                        break
                if found is not None:
                    break
            moved.append(found if found is not None else _stub(call_id))
        if moved:
            if any(isinstance(b, ToolResultBlock) for b in content):
                content = list(moved) + content
                changed = True
            else:
                out.append(Emitted(CompiledMessage("user", tuple(moved)), SourceEntry("repair", _sources_of(moved, items))))
        if changed:
            item = attrs.evolve(
                item,
                message=CompiledMessage(item.message.participant, tuple(content) or (TextBlock(CALL_OMITTED),)),
                complete=False if item.source.kind == "raw" else item.complete,
            )
        out.append(item)
    if out:
        pending = _call_ids(out[-1].message.content)
        if pending:
            out.append(_stub_message(pending))
    return out


def _sources_of(moved: Sequence[ToolResultBlock], items: Sequence[Emitted]) -> tuple[str, ...]:
    ids: list[str] = []
    wanted = {b.tool_use_id for b in moved if b.content != STUB_RESULT}
    for item in items:
        if item.source.kind != "raw":
            continue
        for block in item.message.content:
            if isinstance(block, ToolResultBlock) and block.tool_use_id in wanted:
                ids.extend(item.source.message_ids)
    return tuple(dict.fromkeys(ids))
