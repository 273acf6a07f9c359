"""A manager's search: what its reader may see that holds every word of a query, ranked.

The store's index finds candidates for any reader (store/_search.py); this part answers for one:
each candidate is read through the manager's own view, so a message the reader does not see, a
version of it on another branch, an edit's older text and a block meant for someone else are
never matched, counted or shown. The namespace's memories are searched as the manager reads
them. Every message hit returned is recorded as shown to the reader (``via="search"``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ..store._arguments import check_int
from ..store._errors import ArgumentTypeError, InvalidArgumentError
from ..store._search import SearchHit, match, query_words, score, searchable_text, snippet
from ..strategies._capabilities import Summary
from ._binding import Binding
from ._tracing import span

__all__ = ["KINDS", "MAX_LIMIT", "search"]

#: What a search may be narrowed to.
KINDS = ("message", "memory")
#: The most hits one search returns.
MAX_LIMIT = 1000


def _check_time(value: object, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentTypeError(name, f"must be a time in seconds since the epoch (a number) or None, not {type(value).__name__}")
    if not math.isfinite(value):
        raise InvalidArgumentError(name, f"must be a finite time, got {value!r}")
    return float(value)


async def search(
    binding: Binding,
    summaries: Callable[[Sequence[str]], tuple[Summary, ...]],
    query: str,
    *,
    limit: int,
    kind: str | None,
    participant: str | None,
    after: float | None,
    before: float | None,
) -> tuple[SearchHit, ...]:
    """See ``ContextManager.search``. Refuses bad arguments (``AsidesError`` naming the
    argument) before anything is read or written."""
    binding.check("search", started=False)
    if not isinstance(query, str):
        raise ArgumentTypeError("query", f"must be a string, not {type(query).__name__}")
    words = query_words(query)
    if not words:
        raise InvalidArgumentError("query", f"holds no word to search for: {query!r}")
    check_int(limit, "limit")
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidArgumentError("limit", f"must be from 1 to {MAX_LIMIT}, got {limit!r}")
    if kind is not None and kind not in KINDS:
        raise InvalidArgumentError("kind", f"must be 'message', 'memory' or None, got {kind!r}")
    if participant is not None and not isinstance(participant, str):
        raise ArgumentTypeError("participant", f"must be a string or None, not {type(participant).__name__}")
    since, until = _check_time(after, "after"), _check_time(before, "before")
    with span(
        "search", namespace=binding.namespace, reader=binding.view_reader, branch=binding.branch, strategy=binding.strategy_name
    ) as traced:
        found: list[tuple[list[str], SearchHit]] = []
        if kind != "memory":
            candidates = await binding.store.search_candidates(words)
            binding.check("search", started=False)  # the manager may have closed meanwhile
            view = binding.view
            for message_id in sorted(candidates.ids):
                message = view.get(str(message_id))
                if message is None:
                    continue  # not on this branch, erased, or nothing of it for this reader
                if participant is not None and message.participant != participant:
                    continue
                if (since is not None and message.timestamp < since) or (until is not None and message.timestamp >= until):
                    continue
                text = searchable_text(message.content)
                matched = match(text, words)
                if matched is not None:
                    hit = SearchHit("message", message.id, text, 0.0, message.sequence, message.participant, message.timestamp)
                    found.append((matched, hit))
        if kind != "message" and participant is None and since is None and until is None:
            for summary in summaries(words):  # those that may hold the words, each matched here
                matched = match(summary.text, words)
                if matched is not None:
                    found.append((matched, SearchHit("memory", summary.id, summary.text, 0.0, summary.last_sequence, level=summary.level)))
        average = sum(len(matched) for matched, _hit in found) / len(found) if found else 0.0
        ranked = sorted(
            (
                SearchHit(
                    hit.kind,
                    hit.id,
                    snippet(hit.text, words),
                    score(matched, words, average),
                    hit.sequence,
                    hit.participant,
                    hit.timestamp,
                    hit.level,
                )
                for matched, hit in found
            ),
            key=lambda hit: (-hit.score, -hit.sequence, hit.kind),
        )[:limit]
        shown = [hit.id for hit in ranked if hit.kind == "message"]
        if shown:
            await binding.disclose(shown, "search")
        traced.set("hits", len(ranked))
        traced.set("messages", len(shown))
        return tuple(ranked)
