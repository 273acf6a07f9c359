"""The type checks of a public entry point's arguments, one home for every layer.

An argument of the wrong type is refused with :class:`ArgumentTypeError` (an ``AsidesError``
and a ``TypeError``) whose ``path`` names the argument, before anything is written: never a bare
``TypeError`` or ``AttributeError`` from deep inside. ``bool`` is no ``int`` here (``True`` is
no sequence, no budget, no limit). Names (branches, readers, keys) are checked by
``store._names`` instead, which refuses a non-string with ``InvalidNameError``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from ._errors import ArgumentTypeError

__all__ = ["check_callable", "check_int", "check_mapping", "check_message_id", "check_sequence", "check_str"]

T = TypeVar("T")


def _refuse(value: object, path: str, what: str) -> ArgumentTypeError:
    return ArgumentTypeError(path, f"must be {what}, not {type(value).__name__}")


def check_int(value: object, path: str, *, optional: bool = False) -> int | None:
    """``value`` when it is an ``int`` (not a ``bool``), or ``None`` when ``optional``."""
    if value is None and optional:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise _refuse(value, path, "an int" + (" or None" if optional else ""))
    return value


def check_str(value: object, path: str, *, optional: bool = False) -> str | None:
    """``value`` when it is a ``str``, or ``None`` when ``optional``."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _refuse(value, path, "a string" + (" or None" if optional else ""))
    return value


def check_message_id(value: object, path: str = "message_id") -> str:
    """A message id: a ``str`` (any other string names no message, and is answered as such)."""
    if not isinstance(value, str):
        raise _refuse(value, path, "a message id (a string)")
    return value


def check_callable(value: T, path: str, *, optional: bool = False) -> T:
    """``value`` when it is callable, or ``None`` when ``optional``."""
    if value is None and optional:
        return value
    if not callable(value):
        raise _refuse(value, path, "callable" + (" or None" if optional else ""))
    return value


def check_mapping(value: object, path: str, *, optional: bool = False) -> Mapping[str, Any] | None:
    """``value`` when it is a mapping, or ``None`` when ``optional``."""
    if value is None and optional:
        return None
    if not isinstance(value, Mapping):
        raise _refuse(value, path, "a mapping (a JSON object)" + (" or None" if optional else ""))
    return value


def check_sequence(value: object, path: str, what: str = "a list") -> Sequence[Any]:
    """``value`` when it is a sequence and not a ``str`` or ``bytes`` (a list, a tuple)."""
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, Sequence):
        raise _refuse(value, path, what)
    return value
