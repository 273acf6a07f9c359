"""Reading JSON-lines files (``import`` and ``restore``) strictly, one line at a time.

A file is split on ``\\n`` only, so text holding U+2028, U+2029 or U+0085 (which
``str.splitlines`` would split on) stays whole. Each line must be UTF-8 and one JSON value; a
value is refused, naming its line, when it holds ``NaN``/``Infinity``, an object with a key given
twice, a lone surrogate (``"\\udc80"``) anywhere, or nesting too deep to read. Blank lines are
skipped. A file with no line at all is refused: it holds nothing to import or restore.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO, TypeVar

from ..store._errors import MalformedContentError
from ..store._words import counted
from ._common import CliError

__all__ = ["each_line", "empty_file", "parse_json_line", "refuse_lines", "strict_values"]

T = TypeVar("T")


def empty_file(source: str, what: str) -> str:
    """What a refusal of a file with no line says."""
    shown = "stdin" if source == "-" else repr(source)
    return f"{shown} holds no {what} (it is empty); nothing was written and no store was created"


def each_line(source: str) -> Iterator[tuple[int, str | None, str | None]]:
    """The non-blank lines of ``source`` (a path, or ``-`` for stdin), read one at a time, as
    ``(number, text, None)``, and ``(number, None, problem)`` for a line that is not UTF-8.
    Refuses a missing file and a directory at once, before the first line is asked for."""
    if source == "-":
        return _lines_of(sys.stdin.buffer, close=False)
    if not os.path.exists(source):
        raise CliError(f"no file at {source!r}")
    if os.path.isdir(source):
        raise CliError(f"{source!r} is a directory, not a JSON-lines file")
    return _lines_of(open(source, "rb"), close=True)  # noqa: SIM115 - closed by the generator


def strict_values(
    lines: Iterable[tuple[int, str | None, str | None]],
    parse: Callable[[int, str], T],
    *,
    action: str,
    source: str,
    last: Callable[[], list[str]] = list,
) -> Iterator[T]:
    """What ``parse(number, text)`` makes of each of ``lines`` (:func:`each_line`'s), in order,
    until a line is found malformed (not UTF-8, or ``parse`` raises ``MalformedContentError``);
    the lines after it are read and checked, not given. Then, when any line was malformed or
    ``last()`` names a problem of the whole file, refuses it naming each one
    (:func:`refuse_lines`, for ``action``). Holds a line, and the problems."""
    problems: list[str] = []
    for number, text, problem in lines:
        if text is None:
            problems.append(problem or f"line {number}")
            continue
        try:
            value = parse(number, text)
        except MalformedContentError as exc:
            problems.append(str(exc))
            continue
        if not problems:
            yield value
    problems += last()
    if problems:
        refuse_lines(action, source, problems)


def _lines_of(handle: BinaryIO, *, close: bool) -> Iterator[tuple[int, str | None, str | None]]:
    try:
        for number, raw in enumerate(handle, start=1):  # a binary file splits on b"\n" alone
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield number, None, f"line {number}: not UTF-8 text ({exc.reason} at byte {exc.start + 1} of the line)"
                continue
            if line.strip(" \t\r"):
                yield number, line, None
    finally:
        if close:
            handle.close()


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _DuplicateKey(key)
        obj[key] = value
    return obj


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def parse_json_line(raw: str, where: str) -> Any:
    """One JSON value, read strictly (see the module's docstring); ``MalformedContentError``
    whose text starts with ``where`` otherwise. Key order is kept."""
    try:
        value = json.loads(raw, parse_constant=_no_constants, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise MalformedContentError(where, f"an object gives the key {_shown(exc.key)} twice") from None
    except RecursionError:
        raise MalformedContentError(where, "nested too deeply to read") from None
    except ValueError as exc:
        raise MalformedContentError(where, f"not JSON ({one_problem(exc)})") from None
    _refuse_surrogates(value, where)
    return value


def one_problem(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _shown(text: str) -> str:
    return repr(text) if _encodes(text) else ascii(text)


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _refuse_surrogates(value: Any, where: str) -> None:
    """Refuse a lone surrogate in any string or key of ``value``, naming its place (iterative:
    depth costs no stack)."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if not _encodes(item):
                place = f"{where}: {path}" if path else where
                raise MalformedContentError(place, f"text must be valid Unicode (it holds a lone surrogate: {ascii(item)[:60]})")
        elif isinstance(item, dict):
            for key, nested in item.items():
                if not _encodes(key):
                    place = f"{where}: {path}" if path else where
                    raise MalformedContentError(place, f"a key must be valid Unicode (it holds a lone surrogate: {ascii(key)[:60]})")
                stack.append((nested, f"{path}.{key}" if path else key))
        elif isinstance(item, list):
            stack.extend((nested, f"{path}[{index}]") for index, nested in enumerate(item))


def refuse_lines(action: str, source: str, problems: list[str]) -> None:
    """Refuse the whole file: one line saying nothing was written, then each problem."""
    shown = "stdin" if source == "-" else repr(source)
    message = f"{action} refused, nothing was written: {counted(len(problems), 'malformed line')} in {shown}"
    raise CliError(message, details=tuple(problems))
