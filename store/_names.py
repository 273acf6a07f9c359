"""Every name a caller passes, checked in one place before anything is queued for a commit.

A name is a namespace, a branch, a reader (``view_reader``, and each name in an ``audience``), a
participant, a state key, or a key of message metadata. Names end up in the store's rows and in
one-line output (logs, ``asides inspect``), so each must be:

* a ``str`` (a manager object passed for a namespace is refused, naming the field);
* not empty (a namespace is normalised first: ``None`` and ``""`` are ``"default"``);
* valid Unicode: no lone surrogate (``"\\udc80"``), which SQLite cannot store;
* free of control characters (Unicode category Cc: NUL, tab, newline, DEL, the C1 controls) and
  of the line and paragraph separators U+2028 and U+2029, which would break a line of output;
* at most :data:`MAX_NAME_LENGTH` characters (code points), or :data:`MAX_STATE_KEY_LENGTH` for
  a state key, which holds a namespace and a strategy's own key.

Everything else is allowed, including format characters (zero-width joiners in emoji) and
characters Unicode has not assigned yet. Names match exactly, as given: nothing is normalised.

A refusal raises :class:`~asides.store.InvalidNameError` whose ``path`` names the field, and
whose message shows the offending character escaped, so the message itself always prints. A name
that is not a string raises its subclass ``NameTypeError``, which is also an
:class:`~asides.store.ArgumentTypeError` (a ``TypeError``), as every argument of the wrong type is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ._errors import InvalidNameError, MalformedContentError, NameTypeError
from ._json_checks import check_json_tree

__all__ = [
    "MAX_NAME_LENGTH",
    "MAX_STATE_KEY_LENGTH",
    "name_problem",
    "check_name",
    "check_namespace",
    "check_branch",
    "check_reader",
    "check_optional_reader",
    "check_participant",
    "check_state_key",
    "check_metadata",
    "check_state_records",
]

#: The longest namespace, branch, reader, participant or metadata key, in characters.
MAX_NAME_LENGTH = 256
#: The longest state key (a namespace, a slash, and a strategy's own key), in characters.
MAX_STATE_KEY_LENGTH = 1024

# Category Cc is exactly U+0000-U+001F and U+007F-U+009F.
_FORBIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def _character_problem(value: str) -> str | None:
    found = _FORBIDDEN.search(value)
    if found is None:
        return None
    char = found.group()
    if "\ud800" <= char <= "\udfff":
        kind = "a lone surrogate, which is not valid Unicode"
    elif char in "\u2028\u2029":
        kind = "a line or paragraph separator"
    else:
        kind = "a control character"
    return f"holds {char!a} at index {found.start()}, {kind}; a name is one line of printable text"


def name_problem(value: object, *, limit: int = MAX_NAME_LENGTH, what: str = "a name") -> str | None:
    """Why ``value`` is not a well-formed name, or ``None`` when it is one."""
    if not isinstance(value, str):
        return f"{what} must be a string, not {type(value).__name__}"
    if not value:
        return f"{what} must not be empty"
    if len(value) > limit:
        return f"{what} holds at most {limit} characters; this one holds {len(value)}"
    return _character_problem(value)


def check_name(value: object, path: str, *, what: str = "a name", limit: int = MAX_NAME_LENGTH) -> str:
    """``value`` when it is a well-formed name; else :class:`InvalidNameError` at ``path``
    (:class:`NameTypeError`, also an ``ArgumentTypeError``, when it is not a string)."""
    problem = name_problem(value, limit=limit, what=what)
    if problem is not None and not isinstance(value, str):
        raise NameTypeError(path, problem)
    if problem is not None:
        raise InvalidNameError(path, problem)
    return value  # type: ignore[return-value]


def check_namespace(value: object, path: str = "namespace") -> str:
    """A namespace, normalised: ``None``, ``""`` and ``"default"`` are ``"default"``."""
    if value is None or value == "":
        return "default"
    if not isinstance(value, str):
        hint = "; pass its .namespace" if hasattr(value, "namespace") else ""
        raise NameTypeError(path, f"a namespace must be a string, not {type(value).__name__}{hint}")
    return check_name(value, path, what="a namespace")


def check_branch(value: object, path: str = "branch") -> str:
    """A branch name."""
    return check_name(value, path, what="a branch name")


def check_reader(value: object, path: str = "view_reader") -> str:
    """A reader's name (non-empty; it is matched exactly against audiences)."""
    return check_name(value, path, what="a reader's name")


def check_optional_reader(value: object, path: str = "view_reader") -> str | None:
    """A reader's name, or ``None`` for no reader (``""`` is refused: it names no one)."""
    return None if value is None else check_reader(value, path)


def check_participant(value: object, path: str = "participant") -> str:
    """A message's participant (``"user"``, ``"assistant"``, an agent's name)."""
    return check_name(value, path, what="a participant")


def check_state_key(value: object, path: str = "key") -> str:
    """A state record's full key (up to :data:`MAX_STATE_KEY_LENGTH` characters)."""
    return check_name(value, path, what="a state key", limit=MAX_STATE_KEY_LENGTH)


def _metadata_key_problem(key: object) -> str | None:
    if not isinstance(key, str):
        return f"a metadata key must be a string, not {type(key).__name__}"
    if len(key) > MAX_NAME_LENGTH:
        return f"a metadata key holds at most {MAX_NAME_LENGTH} characters; this one holds {len(key)}"
    return _character_problem(key)


def check_metadata(value: object, path: str = "metadata") -> Mapping[str, Any]:
    """Check message metadata before it is copied: a JSON object whose keys, at every depth, are
    names (an empty key is allowed), whose strings are valid Unicode, and which nests at most
    the documented depth. Returns ``value`` (``{}`` for ``None``); the JSON check itself (no
    NaN, no objects) is the copy's.

    A bad key raises :class:`InvalidNameError` at its path (``metadata.tags[2].bad``); anything
    else :class:`MalformedContentError`.
    """
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise MalformedContentError(path, f"metadata must be a JSON object, not {type(value).__name__}")
    check_json_tree(value, path, key_problem=_metadata_key_problem, key_error=InvalidNameError)
    return value


def check_state_records(states: object, path: str = "states") -> None:
    """Refuse, before anything changes, state records that could not be stored: each key a state
    key (:func:`check_state_key`), each value JSON (no NaN, no objects) whose strings are valid
    Unicode and which nests at most the documented depth. Errors name the key."""
    if not isinstance(states, Mapping):
        raise MalformedContentError(path, f"state records are a mapping of key to JSON value, not {type(states).__name__}")
    for key, value in states.items():
        check_state_key(key)
        check_json_tree(value, key)
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise MalformedContentError(key, f"a state record must be a JSON value: {exc}") from None
