"""JSON data a caller passes (a tool call's input, message metadata, state values): how deep it
may nest and whether its strings can be stored.

A JSON tree nests at most :data:`MAX_NESTING_DEPTH` containers deep, counting the outermost
object or list as level 1. Deeper data is refused with :class:`MalformedContentError` naming the
first container past the limit, before anything recursive (a JSON encoder, a copy) sees it: a
structure 1,000 levels deep would otherwise stop with ``RecursionError``. A string anywhere in it
(a value or a key) must be valid Unicode: a lone surrogate cannot be written to the store.

The walk itself recurses at most :data:`MAX_NESTING_DEPTH` + 1 frames deep, and builds a path
only for the place it refuses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from ._errors import MalformedContentError

__all__ = ["MAX_NESTING_DEPTH", "check_json_tree", "lone_surrogate_problem", "key_path"]

#: How many containers (objects, lists) deep a tool call's input, metadata or a state value may nest.
MAX_NESTING_DEPTH = 64

_SURROGATE = re.compile("[\ud800-\udfff]")
_SIMPLE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")

KeyProblem = Callable[[object], "str | None"]


def lone_surrogate_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored (it holds a lone surrogate), or ``None``."""
    if value.isascii():
        return None
    found = _SURROGATE.search(value)
    if found is None:
        return None
    return f"text must be valid Unicode: it holds the lone surrogate {found.group()!a} at index {found.start()}"


def key_path(path: str, key: object) -> str:
    """``path.key`` for a plain key, ``path['odd key']`` (escaped) for any other."""
    if isinstance(key, str) and _SIMPLE_KEY.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{key!a}]"


def _string_key_problem(key: object) -> str | None:
    return lone_surrogate_problem(key) if isinstance(key, str) else None


class _Refusal:
    __slots__ = ("steps", "problem", "error")

    def __init__(self, problem: str, error: type[MalformedContentError]) -> None:
        self.steps: list[tuple[bool, object]] = []  # (is a key, key or index), innermost first
        self.problem = problem
        self.error = error

    def path(self, root: str) -> str:
        path = root
        for is_key, step in reversed(self.steps):
            path = key_path(path, step) if is_key else f"{path}[{step}]"
        return path


def _walk(node: object, depth: int, limit: int, key_problem: KeyProblem, key_error: type[MalformedContentError]) -> _Refusal | None:
    if isinstance(node, str):
        problem = lone_surrogate_problem(node)
        return None if problem is None else _Refusal(problem, MalformedContentError)
    if isinstance(node, Mapping):
        if depth > limit:
            return _Refusal(_too_deep(limit), MalformedContentError)
        for key, child in node.items():
            problem = key_problem(key)
            if problem is not None:
                refusal = _Refusal(problem, key_error)
            else:
                found = _walk(child, depth + 1, limit, key_problem, key_error)
                if found is None:
                    continue
                refusal = found
            refusal.steps.append((True, key))
            return refusal
        return None
    if isinstance(node, (list, tuple)):
        if depth > limit:
            return _Refusal(_too_deep(limit), MalformedContentError)
        for index, child in enumerate(node):
            found = _walk(child, depth + 1, limit, key_problem, key_error)
            if found is not None:
                found.steps.append((False, index))
                return found
    return None


def _too_deep(limit: int) -> str:
    return f"nests more than {limit} levels deep (objects and lists within one another); flatten it"


def check_json_tree(
    value: Any,
    path: str,
    *,
    key_problem: KeyProblem | None = None,
    key_error: type[MalformedContentError] = MalformedContentError,
    limit: int = MAX_NESTING_DEPTH,
) -> None:
    """Refuse ``value`` when it nests deeper than ``limit`` containers (the outermost is level
    1) or holds a string that is not valid Unicode; a key is judged by ``key_problem`` (default:
    a string key must be valid Unicode) and refused as ``key_error``. The error's ``path``
    starts with ``path`` and names the place (``input.rows[3].name``).

    It does not judge anything else (a NaN or a set is the JSON encoder's to refuse), and it
    never recurses more than ``limit + 1`` frames.
    """
    found = _walk(value, 1, limit, key_problem or _string_key_problem, key_error)
    if found is not None:
        raise found.error(found.path(path), found.problem)
