"""KnowledgeStrategy: an Autobiographical variant whose requests extract
durable facts (decisions, open tasks, preferences) and which also compresses the trailing chunk."""

from __future__ import annotations

from ._autobiographical.strategy import AutobiographicalStrategy

__all__ = ["KnowledgeStrategy", "KNOWLEDGE_L1", "KNOWLEDGE_MERGE"]

KNOWLEDGE_L1 = (
    "Extract the durable knowledge from the stretch since the memory point. Write one item per line, each starting "
    "with one of: Decision:, Open:, Preference:, Fact:. Decisions keep their reasons; Open: covers unfinished tasks "
    "and unanswered questions; Fact: covers names, numbers, paths and commands you will need later. Skip small talk "
    "and anything your earlier notes already hold. If nothing in the stretch is durable, write: Nothing durable. Aim "
    "for at most about {target} tokens."
)
KNOWLEDGE_MERGE = (
    "You have just re-read {what} covering this period, in order. Merge the knowledge in it into one list for the "
    "whole period, in the same line format: keep every item that still holds, drop items a later one replaced, keep "
    "every Open: item not yet resolved, and mark resolved ones as Decision: or Fact: with the outcome. Aim for at "
    "most about {target} tokens."
)


class KnowledgeStrategy(AutobiographicalStrategy):
    """Same options, regions, chunking, merges, rendering, repair, reset, reads, floor rules and
    persistence as :class:`AutobiographicalStrategy`; state under ``knowledge/``; holdback 0 by
    default; a *trailing close* unit closes the trailing open chunk (at least four messages, the
    last holding no tool call) when nothing else is pending, so facts are extracted as soon as
    they leave the recent window. The library does not parse the item lines."""

    name = "knowledge"
    kind = "knowledge"
    l1_instruction = KNOWLEDGE_L1
    merge_instruction = KNOWLEDGE_MERGE
    closes_trailing_chunk = True
    default_holdback = 0
