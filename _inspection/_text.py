"""Text for people, the one rule each: a message on one line, and a value as one line of JSON."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["compact_json", "one_line"]


def one_line(message: object) -> str:
    """``message`` with every run of whitespace (newlines included) made one space."""
    return " ".join(str(message).split())


def compact_json(value: Any) -> str:
    """``value`` as JSON on one line: sorted keys, no spaces, characters as they are; refuses
    NaN and the infinities (``ValueError``)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
