"""Token estimates.

One estimator serves every count a strategy makes and ``CompiledContext.token_estimate``. An
estimator is any callable from a message's content (a tuple of blocks) to a non-negative ``int``;
:func:`default_estimate` is the default. Estimates are pure functions of content.

The default prices a string at ceil(ASCII characters / 3) plus one token per other character:
about 20% high for English prose, near right for code, JSON and CJK. Hosts with a real tokenizer
plug theirs in (``estimator=`` on every bundled strategy).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Collection, Iterable, Sequence

from ..store._blocks import (
    ContentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    SystemChangeBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ..store._messages import Message

__all__ = ["Estimator", "default_estimate", "estimate_text", "estimate_block", "MessageCosts", "MESSAGE_OVERHEAD", "recorded_estimator"]

Estimator = Callable[[Sequence[ContentBlock]], int]

#: What a message costs before its blocks (role and framing).
MESSAGE_OVERHEAD = 4
_IMAGE = 1600


def estimate_text(s: str) -> int:
    """ceil(ASCII characters / 3) + one token per non-ASCII character."""
    if s.isascii():
        return -(-len(s) // 3)
    ascii_count = len(s.encode("ascii", "ignore"))  # the characters below U+0080, counted in C
    return -(-ascii_count // 3) + (len(s) - ascii_count)


def estimate_block(block: ContentBlock) -> int:
    """The estimate of one block: text, thinking and a system change by :func:`estimate_text`, a tool call 20 plus
    its name and compact JSON input, a tool result 10 plus its content, an image 1600, redacted
    thinking a quarter of its data."""
    if isinstance(block, TextBlock):
        return estimate_text(block.text)
    if isinstance(block, ThinkingBlock):
        return estimate_text(block.thinking)
    if isinstance(block, RedactedThinkingBlock):
        return math.ceil(len(block.data) / 4)
    if isinstance(block, ToolUseBlock):
        payload = json.dumps(block.input, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        return 20 + estimate_text(block.name) + estimate_text(payload)
    if isinstance(block, ToolResultBlock):
        if isinstance(block.content, str):
            return 10 + estimate_text(block.content)
        return 10 + sum(estimate_block(inner) for inner in block.content)
    if isinstance(block, ImageBlock):
        return _IMAGE
    if isinstance(block, SystemChangeBlock):
        return estimate_text(block.text)
    return 0


def default_estimate(content: Sequence[ContentBlock]) -> int:
    """A message's estimate: 4 for framing plus the sum of its blocks."""
    return MESSAGE_OVERHEAD + sum(estimate_block(b) for b in content)


def recorded_estimator(estimator: Estimator) -> str | None:
    """How a strategy's options record its estimator: ``None`` for :func:`default_estimate`,
    ``"custom"`` for one of its own (a function cannot be recorded)."""
    return None if estimator is default_estimate else "custom"


class MessageCosts:
    """Memoised estimates of view messages, keyed by message id and checked by content identity
    (an edit, or another reader's view of the same message, is priced afresh). With ``limit``,
    it never keeps more than ``limit`` estimates: past it, the older half is forgotten (and
    priced again if asked), so what it holds does not grow with the history it priced."""

    def __init__(self, estimator: Estimator | None = None, *, limit: int | None = None) -> None:
        self.estimator: Estimator = estimator or default_estimate
        self._cache: dict[str, tuple[object, int]] = {}
        self._limit = limit

    def __call__(self, message: Message) -> int:
        found = self._cache.get(message.id)
        if found is not None and found[0] is message.content:
            return found[1]
        cost = self.estimator(message.content)
        cache = self._cache
        cache[message.id] = (message.content, cost)
        if self._limit is not None and len(cache) > self._limit:
            for key in list(itertools.islice(cache, len(cache) // 2)):
                del cache[key]
        return cost

    def content(self, content: Sequence[ContentBlock]) -> int:
        return self.estimator(content)

    def __len__(self) -> int:
        """How many estimates are kept."""
        return len(self._cache)

    def keep_only(self, message_ids: Iterable[str]) -> None:
        """Forget every estimate but those of ``message_ids``."""
        cache = self._cache
        self._cache = {i: cache[i] for i in message_ids if i in cache}

    def bound(self, message_ids: Collection[str], slack: int) -> None:
        """Keep the estimates bounded by what is in use: once they outnumber twice
        ``message_ids`` (the messages in use) and ``slack`` more, forget all others."""
        if len(self._cache) > 2 * len(message_ids) + slack:
            self.keep_only(message_ids)
