"""Counted nouns in messages: ``1 message``, ``2 messages``; the one place a message says how
many of something there are."""

from __future__ import annotations

__all__ = ["counted"]


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, in the plural (``plural``, else ``noun + "s"``) unless it is 1."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
