"""Ingress sharding (``adaptive_resolution=True``): a long message is stored as several shards.

A message with an audience block anywhere is stored whole, as is one whose text (its text blocks
joined) is under twice ``target_chunk_tokens``. Otherwise its text is cut into pieces of about
``target_chunk_tokens`` tokens (three characters a token), each up to 25% longer to end at a good
seam. Shard 0 also carries the message's non-text blocks. Every shard's metadata holds
``body_id`` (``bg-`` and the first 16 hex digits of the text's SHA-256), ``shard_index`` and
``shard_count``; strategies treat shards as ordinary messages.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ...store._blocks import ContentBlock, TextBlock, has_audience
from .._tokens import estimate_text

__all__ = ["Shard", "shard_message", "split_text"]

#: One stored shard: participant, content, metadata.
Shard = tuple[str, tuple[ContentBlock, ...], dict[str, Any]]

_SEAMS = (
    re.compile(r"\n(?=#)"),
    re.compile(r"\n(?=```)"),
    re.compile(r"\n\n"),
    re.compile(r"\n"),
    re.compile(r"[.!?] "),
    re.compile(r"\s"),
)


def split_text(text: str, size: int) -> list[str]:
    """Split ``text`` into pieces of about ``size`` characters, each up to 25% longer to end at a
    good seam (a heading, a code fence, a blank line, a newline, a sentence end, any whitespace;
    else a hard cut). Joining the pieces gives the text back exactly."""
    pieces = []
    start = 0
    longest = size + size // 4
    while len(text) - start > longest:
        window = text[start : start + longest]
        cut = None
        for seam in _SEAMS:
            ends = [m.end() for m in seam.finditer(window) if m.end() > size // 2]
            if ends:
                cut = min(ends, key=lambda e: abs(e - size))
                break
        if cut is None:
            cut = size
        pieces.append(text[start : start + cut])
        start += cut
    pieces.append(text[start:])
    return pieces


def shard_message(
    participant: str, content: Sequence[ContentBlock], metadata: Mapping[str, Any] | None, *, target_chunk_tokens: int
) -> list[Shard] | None:
    """The shards to store for a message (see the module docstring), or ``None`` to store it whole."""
    if has_audience(content):
        return None
    texts = [b.text for b in content if isinstance(b, TextBlock)]
    whole = "".join(texts)
    if estimate_text(whole) < 2 * target_chunk_tokens:
        return None
    pieces = split_text(whole, 3 * target_chunk_tokens)
    if len(pieces) < 2:
        return None
    body_id = "bg-" + hashlib.sha256(whole.encode("utf-8")).hexdigest()[:16]
    others = tuple(b for b in content if not isinstance(b, TextBlock))
    shards: list[Shard] = []
    for index, piece in enumerate(pieces):
        blocks: tuple[ContentBlock, ...] = (TextBlock(piece),) + (others if index == 0 else ())
        meta = dict(metadata or {})
        meta.update({"body_id": body_id, "shard_index": index, "shard_count": len(pieces)})
        shards.append((participant, blocks, meta))
    return shards
