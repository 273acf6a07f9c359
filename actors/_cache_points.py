"""Where a compile's Anthropic request gets its prompt-cache breakpoints (``cache_control``).

A provider's prompt cache serves the longest prefix of a request that an earlier request marked
with a breakpoint. A compile changes in predictable places: the head window never changes once
written, memories are added after the ones already shown (a merge replaces several with one), and
each new request is the previous one plus the turns since. So the stable boundaries are, by
compiled message (a boundary ``k`` is "after the first ``k`` messages"):

* the **head end**: before the first memory (only when the compile shows a memory);
* the **memories end**: after the last memory;
* the **previous turn's end**: before the agent's newest message of its own (not a memory): where
  the agent's previous request ended, so the request reads what that one wrote;
* the **request end**: after the last message, which the next request reads back.

A boundary is placed on the last block of the rendered request that the first ``k`` messages
render to *unchanged*: the longest common prefix, block by block, of the rendering of those
messages alone and of the whole compile (a tool call whose result comes later renders with a stub
alone, so the boundary falls before it). Thinking blocks cannot carry ``cache_control``; the
boundary moves back to the nearest block that can.

Anthropic takes at most four breakpoints per request (:data:`MAX_BREAKPOINTS`). A host's
``system`` content, when given, takes one on its last block. Over four, the previous turn's end is
dropped first (the request end's breakpoint finds the previous request's entry by the provider's
look-back when few blocks came since), then the head end. Pure: the inputs are not mutated.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from ..strategies._base import CompiledMessage, SourceEntry

__all__ = ["MAX_BREAKPOINTS", "CACHE_CONTROL", "boundaries", "place_breakpoints", "mark_system"]

MAX_BREAKPOINTS = 4
"""Anthropic's limit of ``cache_control`` breakpoints in one request (tools, system and messages)."""

CACHE_CONTROL: dict[str, str] = {"type": "ephemeral"}

_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})

# In the order they are dropped when there are too many (first dropped first).
_DROP_ORDER = ("previous_turn", "head", "memories", "request")


def boundaries(messages: Sequence[CompiledMessage], sources: Sequence[SourceEntry], assistant: str) -> dict[str, int]:
    """The stable boundaries of a compile by name (``head``, ``memories``, ``previous_turn``,
    ``request``), each a message count in ``1..len(messages)``; absent when the compile has no
    such boundary."""
    found: dict[str, int] = {}
    if not messages:
        return found
    memories = [i for i, s in enumerate(sources) if s.kind == "summary"]
    if memories:
        if memories[0] > 0:
            found["head"] = memories[0]
        found["memories"] = memories[-1] + 1
    own = [i for i, (m, s) in enumerate(zip(messages, sources, strict=True)) if m.participant == assistant and s.kind != "summary"]
    if own and own[-1] > 0:
        found["previous_turn"] = own[-1]
    found["request"] = len(messages)
    return found


def _flat(rendered: Sequence[dict[str, Any]]) -> list[tuple[int, int, str]]:
    """Each block of a rendered request as (message index, block index, its JSON-ish identity)."""
    out: list[tuple[int, int, str]] = []
    for i, message in enumerate(rendered):
        for j, block in enumerate(message["content"]):
            out.append((i, j, repr((message["role"], block))))
    return out


def _point(
    full: list[tuple[int, int, str]], prefix: list[tuple[int, int, str]], rendered: Sequence[dict[str, Any]]
) -> tuple[int, int] | None:
    """The last markable block of the common prefix of ``full`` and ``prefix``."""
    common = 0
    for a, b in zip(full, prefix, strict=False):
        if a != b:
            break
        common += 1
    for n in range(common - 1, -1, -1):
        i, j, _ = full[n]
        if rendered[i]["content"][j].get("type") not in _UNMARKABLE:
            return i, j
    return None


def place_breakpoints(
    messages: Sequence[CompiledMessage],
    sources: Sequence[SourceEntry],
    assistant: str,
    render: Callable[[Sequence[CompiledMessage], Sequence[SourceEntry]], list[dict[str, Any]]],
    *,
    taken: int = 0,
) -> list[dict[str, Any]]:
    """``render(messages, sources)`` with ``cache_control`` on the blocks that end the stable
    boundaries, at most ``MAX_BREAKPOINTS - taken`` of them (``taken``: breakpoints the request's
    system content already holds). Returns a fresh list."""
    rendered = copy.deepcopy(render(messages, sources))
    found = boundaries(messages, sources, assistant)
    full = _flat(rendered)
    points: dict[str, tuple[int, int]] = {}
    for name, k in found.items():
        prefix = full if k == len(messages) else _flat(render(messages[:k], sources[:k]))
        point = _point(full, prefix, rendered)
        if point is not None:
            points[name] = point
    allowed = max(0, MAX_BREAKPOINTS - taken)
    for name in _DROP_ORDER:
        if len(set(points.values())) <= allowed:
            break
        points.pop(name, None)
    for i, j in set(points.values()):
        rendered[i]["content"][j]["cache_control"] = dict(CACHE_CONTROL)
    return rendered


def mark_system(system: list[dict[str, Any]]) -> int:
    """Put a breakpoint on the last block of ``system`` (a list of text blocks, changed in place);
    returns how many breakpoints that took (0 for no system content)."""
    if not system:
        return 0
    system[-1]["cache_control"] = dict(CACHE_CONTROL)
    return 1
