"""The one rule for a number spelled in a state key (``chunk/12``, ``context/5``)."""

from __future__ import annotations

__all__ = ["key_number"]


def key_number(text: str) -> int | None:
    """``text`` as the number a key spells, when it is one: ASCII decimal digits in canonical
    form (no leading zero but in ``0`` itself), as ``str(n)`` writes it; else ``None``. This is
    the rule for every number read out of a key (``str.isdigit`` also takes ``²`` and ``٣``,
    and ``int`` then fails or reads another number)."""
    if not text or not (text.isascii() and text.isdigit()) or (text[0] == "0" and text != "0"):
        return None
    return int(text)
